<%doc>
Non-constant padding (zyx.frontend.padding): reflect, replicate or circular, every padded dim at once, moving
each element's bits as one unsigned word. The input is dense from element `zyx_offset` of its buffer, seen as
(outer dims..., n, inner): `n` is the innermost padded dim, `inner` the product of the dims after it (not
padded). Output row r (one per outer position) is a run of (lo + n + hi) * inner words; work item
(r, chunk) writes `chunk` of them: the borders word by word through the mode's source map, the interior
(a contiguous copy of the source row) `vec` words a step.
Parameters: word (the unsigned C type of an element), mode, outer (list of (out_size, in_size, lo) for the
dims before `n`, unpadded neighbours merged), n, lo, hi, inner, chunk, vec, index_t (int or long: every
index, extent and offset fits it).
Arguments: out, x, offset (elements), items (work items that write).
</%doc>\
<%
    I = index_t
    L = "L" if I == "long" else ""
    row_words = (lo + n + hi) * inner
    chunks = -(-row_words // chunk)
    in_stride = [0] * len(outer)
    stride = n * inner
    for d in reversed(range(len(outer))):
        in_stride[d] = stride
        stride *= outer[d][1]
%>\
/* zyx pad (${mode}): rows ${[o for o, _, _ in outer]} of ${n} + (${lo}, ${hi}) x ${inner} ${word}, ${chunk} a work item */
inline ${I} zyx_pad_source(${I} p, ${I} size)
{
% if mode == "reflect":
    return p < 0 ? -p : (p >= size ? 2 * size - 2 - p : p);
% elif mode == "replicate":
    return clamp(p, (${I})0, size - 1);
% else:
    return p < 0 ? p + size : (p >= size ? p - size : p);
% endif
}

__kernel void zyx_pad(__global ${word} *restrict zyx_out, __global const ${word} *restrict zyx_x,
                      const ${I} zyx_offset, const ${I} zyx_items)
{
    const ${I} zyx_gid = get_global_id(0);
    if (zyx_gid >= zyx_items)
        return;
    const ${I} zyx_row = zyx_gid / ${chunks};
    const ${I} zyx_c0 = (zyx_gid % ${chunks}) * ${chunk};
    const ${I} zyx_c1 = min(zyx_c0 + ${chunk}, ${row_words}${L});
    ${I} zyx_src = zyx_offset;
% if outer:
    ${I} zyx_rem = zyx_row;
% endif
% for d in reversed(range(len(outer))):
<%  o_size, i_size, o_lo = outer[d] %>\
%   if o_size == i_size:
    zyx_src += (zyx_rem % ${o_size}) * ${in_stride[d]};
%   else:
    zyx_src += zyx_pad_source(zyx_rem % ${o_size} - ${o_lo}, ${i_size}) * ${in_stride[d]};
%   endif
%   if d:
    zyx_rem /= ${o_size};
%   endif
% endfor
    __global const ${word} *zyx_in = zyx_x + zyx_src;
    __global ${word} *zyx_dst = zyx_out + zyx_row * ${row_words};
% if lo:
    for (${I} zyx_c = zyx_c0; zyx_c < min(zyx_c1, ${lo * inner}${L}); zyx_c++)
        zyx_dst[zyx_c] = zyx_in[zyx_pad_source(zyx_c / ${inner} - ${lo}, ${n}) * ${inner} + zyx_c % ${inner}];
% endif
    ${I} zyx_c = max(zyx_c0, ${lo * inner}${L});
    const ${I} zyx_end = min(zyx_c1, ${(lo + n) * inner}${L});
    for (; zyx_c + ${vec} <= zyx_end; zyx_c += ${vec})
        vstore${vec}(vload${vec}(0, zyx_in + zyx_c - ${lo * inner}), 0, zyx_dst + zyx_c);
    for (; zyx_c < zyx_end; zyx_c++)
        zyx_dst[zyx_c] = zyx_in[zyx_c - ${lo * inner}];
% if hi:
    for (zyx_c = max(zyx_c0, ${(lo + n) * inner}${L}); zyx_c < zyx_c1; zyx_c++)
        zyx_dst[zyx_c] = zyx_in[zyx_pad_source(zyx_c / ${inner} - ${lo}, ${n}) * ${inner} + zyx_c % ${inner}];
% endif
}
