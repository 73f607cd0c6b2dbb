<%doc>
masked_fill: out = mask ? fill : input over a flat dense input and a dense bool mask.
The element count and the fill's bits are run-time arguments, so one kernel serves
every shape and value of one element size. Vectors of `vw` elements; the last, partial
vector is done element by element by the last work-item. With vw == 1 each work-item does
one element (per_item unused). Parameters: itemsize, vw, per_item, stream (non-temporal stores).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    VT = ix.attr.vtype(itemsize, vw)
    MT = {1: "char", 2: "short", 4: "int", 8: "long"}[itemsize] + str(vw)  # the signed lane mask type
%>\
/* zyx contract kernel masked_fill: ${itemsize}-byte elements (any ${itemsize}-byte dtype), bool mask; vector ${vw}, ${per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_masked_fill(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in,
                              __global const uchar *restrict zyx_mask, const ${T} zyx_fill, const long zyx_n)
{
% if vw == 1:
    /* one element per work-item over an exact grid (no loop, no bounds test: the launcher
       covers the elements with whole work-groups, then the rest with a global offset), which
       PoCL's work-group vectorizer turns into wide loads and stores */
    const long zyx_i = get_global_id(0);
    const ${T} zyx_x = zyx_in[zyx_i];
    const ${T} zyx_take = (${T})0 - (${T})(zyx_mask[zyx_i] != 0);
    zyx_out[zyx_i] = zyx_x ^ ((zyx_x ^ zyx_fill) & zyx_take);
% else:
    /* whole vectors first, with no per-vector bounds test (PoCL vectorizes the loop only
       without one: ~1.2x); the last work-item then does the partial vector element by element */
    const long zyx_full = zyx_n / ${vw};
    if (zyx_full > 0) {
${ix.loop_head("long", per_item, "zyx_full", vw, stream)}\
        const ${VT} zyx_x = ${ix.attr.vload(itemsize, vw, "zyx_in + zyx_i")};
        /* lanes whose mask byte is non-zero get all bits set (a vector compare gives -1,
           sign-extended to the element width), and the fill is blended in bitwise:
           PoCL/LLVM keeps this at copy speed, while select() on a widened mask ran ~1.4x slower */
        const ${VT} zyx_take = as_${VT}(convert_${MT}(${ix.attr.vload(1, vw, "zyx_mask + zyx_i")} != (uchar${vw})0));
        ${ix.store(itemsize, vw, "zyx_out", "zyx_i", f"zyx_x ^ ((zyx_x ^ ({VT})zyx_fill) & zyx_take)", stream)}
    }
    }
    if (get_global_id(0) == get_global_size(0) - 1) {
        for (long zyx_j = zyx_full * ${vw}; zyx_j < zyx_n; ++zyx_j) {
            zyx_out[zyx_j] = zyx_mask[zyx_j] ? zyx_fill : zyx_in[zyx_j];
        }
    }
% endif
${ix.stream_fence(vw, stream)}\
}
