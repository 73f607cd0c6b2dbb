<%doc>
masked_fill: out = mask ? fill : input over a flat dense input and a dense bool mask.
The element count and the fill's bits are run-time arguments, so one kernel serves
every shape and value of one element size. Vectors of `vw` elements; the last, partial
vector is done element by element. Parameters: itemsize, vw, per_item, stream (non-temporal stores).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    VT = ix.attr.vtype(itemsize, vw)
    MT = {1: "char", 2: "short", 4: "int", 8: "long"}[itemsize] + str(vw)  # select()'s mask type
%>\
/* zyx contract kernel masked_fill: ${itemsize}-byte elements (any ${itemsize}-byte dtype), bool mask; vector ${vw}, ${per_item} per work-item */
${ix.stream_preamble(itemsize, vw, stream)}
__kernel void zyx_masked_fill(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in,
                              __global const uchar *restrict zyx_mask, const ${T} zyx_fill, const long zyx_n)
{
${ix.loop_head("long", per_item, f"(zyx_n + {vw - 1}) / {vw}" if vw > 1 else "zyx_n", vw, stream)}\
% if vw == 1:
        zyx_out[zyx_i] = zyx_mask[zyx_i] ? zyx_fill : zyx_in[zyx_i];
% else:
        if (zyx_i + ${vw} <= zyx_n) {
            const ${VT} zyx_x = vload${vw}(0, zyx_in + zyx_i);
            /* lanes whose mask byte is non-zero get all bits set: select() takes the fill there */
            const ${MT} zyx_take = convert_${MT}(vload${vw}(0, zyx_mask + zyx_i)) != (${MT})0;
            ${ix.store(vw, "zyx_out", "zyx_i", f"select(zyx_x, ({VT})zyx_fill, zyx_take)", stream)}
        } else {
            for (long zyx_j = zyx_i; zyx_j < zyx_n; ++zyx_j) {
                zyx_out[zyx_j] = zyx_mask[zyx_j] ? zyx_fill : zyx_in[zyx_j];
            }
        }
% endif
    }
${ix.stream_fence(vw, stream)}\
}
