<%doc>
concat: copy one dense input into its slot of the output; launched once per input.
The input is seen as `outer` rows of `row_in` elements; output rows hold `row_out`
elements and the slot starts at run-time column `zyx_col0` (so equally shaped inputs
share the kernel). Parameters: itemsize, outer, row_in, row_out, n, vw (divides
row_in), per_item, index_t, stream (non-temporal stores),
exact (one element per work-item over an exact grid, index.mako `loop_head`).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<% T = ix.attr.bits(itemsize) %>\
/* zyx contract kernel concat: ${itemsize}-byte elements (any ${itemsize}-byte dtype), input ${outer} x ${row_in} into rows of ${row_out}; vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_concat(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in, const ${index_t} zyx_col0)
{
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", (outer, row_in), "zyx_c", exact)}\
        const ${index_t} zyx_dst = ${ix.dot("zyx_c", (row_out, 1))} + zyx_col0;
        ${ix.move(itemsize, vw, "zyx_out", "zyx_dst", "zyx_in", "zyx_i", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
