<%doc>
flip: reverse the element order along some axes of a dense input.
Parameters: itemsize, groups (tuple of (extent, flipped) after merging adjacent axes
with the same flag and dropping extent-1 axes), n, vw (vector width; the last group's
extent is a multiple of it), per_item, index_t, stream (non-temporal stores), exact (one element per work-item over an
exact grid, see index.mako `loop_head`), sub (bytes of the caller's element when
``kernels.flip`` widened several of them into one word of `itemsize` bytes, else itemsize).
A flipped last group loads a vector ending at the mirrored element and reverses its lanes
(and, when widened, the elements inside each word).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    VT = ix.attr.vtype(itemsize, vw)
    shape = [g[0] for g in groups]
    strides = [ix.attr.prod(shape[k + 1:]) for k in range(len(shape))]
    terms = []
    for k, (size, flipped) in enumerate(groups):
        c = f"({size - 1} - zyx_c{k})" if flipped else f"zyx_c{k}"
        terms.append(c if strides[k] == 1 else f"{c} * {strides[k]}")
    src = " + ".join(terms) if terms else "0"
    last_flipped = bool(groups) and groups[-1][1]
%>\
/* zyx contract kernel flip: ${itemsize}-byte elements (any ${itemsize}-byte dtype), axis groups ${[f"{s}{'(flipped)' if f else ''}" for s, f in groups]}, ${n} elements${f" (words of {itemsize // sub} {sub}-byte elements)" if sub != itemsize else ""}; vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_flip(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in)
{
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c", exact)}\
        const ${index_t} zyx_src = ${src};
% if vw == 1 and last_flipped and sub != itemsize:
        const ${T} zyx_w = zyx_in[zyx_src];
        zyx_out[zyx_i] = ${ix.attr.swap_expr("zyx_w", itemsize, sub)};
% elif vw == 1:
        zyx_out[zyx_i] = zyx_in[zyx_src];
% elif last_flipped:
        const ${VT} zyx_w = ${ix.attr.vload(itemsize, vw, f"zyx_in + zyx_src - {vw - 1}")}${ix.attr.reversed_lanes(vw)};
        ${ix.store(itemsize, vw, "zyx_out", "zyx_i", ix.attr.swap_expr("zyx_w", itemsize, sub), stream)}
% else:
        ${ix.move(itemsize, vw, "zyx_out", "zyx_i", "zyx_in", "zyx_src", stream)}
% endif
    }
${ix.stream_fence(vw, stream)}\
}
