<%doc>
roll: cyclic shift along one axis of a dense input folded to (outer, dim_size, inner).
Parameters: itemsize, outer, dim_size, inner, n, vw (1 unless inner % vw == 0),
per_item, index_t, stream (non-temporal stores),
exact (one element per work-item over an exact grid, index.mako `loop_head`). The shift (already reduced to [0, dim_size)) is a run-time argument
so every shift of one shape shares the kernel.

With `rows` (rolling the last axis: `outer` rows of `rows` elements) the kernel is
zyx_roll_rows instead, an offset copy over a 2-D grid: work-item (x, y) writes the `vw`
elements from column x * vw of output row y and reads them `zyx_delta` elements earlier in
the input (the run-time shift s for output columns s .. rows - 1, s - rows for columns
0 .. s - 1; ``kernels.roll`` launches the two column ranges at global offsets, so the
index is affine in x with no wrap-around test and PoCL vectorizes it across work-items).
With `clamp` (a second kernel, for the columns of a part left after its whole work-groups)
work-items past the run-time end column `zyx_end` redo the last one: the work-group size
never depends on the shift, so no shift makes the runtime specialize the kernel anew.
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<% T = ix.attr.bits(itemsize) %>\
% if rows:
/* zyx contract kernel roll (last axis): ${itemsize}-byte elements (any ${itemsize}-byte dtype), ${outer} rows of ${rows}; vector ${vw} per work-item, offset copy over a 2-D grid */
${ix.preamble(itemsize, vw, stream)}
% if clamp:
__kernel void zyx_roll_rows(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in, const ${index_t} zyx_delta,
                            const ${index_t} zyx_end)
{
    /* a part's last columns: whole work-groups whose items past the part's end redo its last column */
    const ${index_t} zyx_x = min((${index_t})get_global_id(0), zyx_end - 1);
% else:
__kernel void zyx_roll_rows(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in, const ${index_t} zyx_delta)
{
    const ${index_t} zyx_x = get_global_id(0);
% endif
    const ${index_t} zyx_dst = (${index_t})get_global_id(1) * ${rows} + zyx_x${f" * {vw}" if vw > 1 else ""};
    ${ix.move(itemsize, vw, "zyx_out", "zyx_dst", "zyx_in", "zyx_dst - zyx_delta", stream)}
% if stream and vw > 1:
    ZYX_STREAM_FENCE(get_local_id(0) == get_local_size(0) - 1 && get_local_id(1) == get_local_size(1) - 1);
% endif
}
% else:
/* zyx contract kernel roll: ${itemsize}-byte elements (any ${itemsize}-byte dtype), (outer ${outer}, dim ${dim_size}, inner ${inner}); vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_roll(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in, const ${index_t} zyx_shift)
{
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", (outer, dim_size, inner), "zyx_c", exact)}\
        ${index_t} zyx_j = zyx_c1 - zyx_shift;
        if (zyx_j < 0) zyx_j += ${dim_size};
        const ${index_t} zyx_src = ${ix.dot("zyx_c", (dim_size * inner, 0, 1))} + zyx_j${f" * {inner}" if inner != 1 else ""};
        ${ix.move(itemsize, vw, "zyx_out", "zyx_i", "zyx_in", "zyx_src", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
% endif
