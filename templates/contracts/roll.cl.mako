<%doc>
roll: cyclic shift along one axis of a dense input folded to (outer, dim_size, inner).
Parameters: itemsize, outer, dim_size, inner, n, vw (1 unless inner % vw == 0),
per_item, index_t, stream (non-temporal stores),
exact (one element per work-item over an exact grid, index.mako `loop_head`). The shift (already reduced to [0, dim_size)) is a run-time argument
so every shift of one shape shares the kernel.
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<% T = ix.attr.bits(itemsize) %>\
/* zyx contract kernel roll: ${itemsize}-byte elements (any ${itemsize}-byte dtype), (outer ${outer}, dim ${dim_size}, inner ${inner}); vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.stream_preamble(itemsize, vw, stream)}
__kernel void zyx_roll(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in, const ${index_t} zyx_shift)
{
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", (outer, dim_size, inner), "zyx_c", exact)}\
        ${index_t} zyx_j = zyx_c1 - zyx_shift;
        if (zyx_j < 0) zyx_j += ${dim_size};
        const ${index_t} zyx_src = ${ix.dot("zyx_c", (dim_size * inner, 0, 1))} + zyx_j${f" * {inner}" if inner != 1 else ""};
        ${ix.move(vw, "zyx_out", "zyx_i", "zyx_in", "zyx_src", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
