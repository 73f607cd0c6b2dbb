<%doc>
One separable resampling pass of a uint8 tensor in PIL's fixed point (zyx.kernels.resample): along one
dim of size n, output o is clamp((2**(shift-1) + sum_j wt[o, j] * x[min(xmin[o] + j, n - 1)]) >> shift,
0, 255) over j < taps, in int32 (exact: the order of the sum does not matter). The input is contiguous,
seen as (outer, n, inner); the output (outer, o_size, inner). The batch (outer) and inner extents are
run-time arguments, so a new batch size builds nothing.
- rows (inner > 1 at render time, a pass over a dim that is not the last): work item (b, o) writes the
  whole inner run of its output row, vec bytes a step (explicit vectors: each tap row is a contiguous
  load), the last inner % vec bytes one by one.
- the last dim (inner == 1): work item (b, chunk) writes `run` consecutive outputs of row b.
Parameters: n, o_size, taps, shift, vec (16 or 8: the uchar vector of the rows), run, rows (bool), tables
((xmin, wt) as tuples of ints: program constants; None: two more arguments).
Arguments: out (uchar), x (uchar), [xmin (int, per output), wt (int, o_size * taps, zero past a row's taps)],
items (work items that write), inner (elements after the dim).
</%doc>\
<%
    half = 1 << (shift - 1)
    runs = -(-o_size // run)
%>\
/* zyx resample pass (uint8 fixed point): dim of ${n} -> ${o_size}, ${taps} taps, shift ${shift}, ${"rows of uchar" + str(vec) if rows else "the last dim"} */
% if tables:
<%def name="table(values)">${", ".join(map(str, values))}</%def>\
__constant int zyx_xmin[${len(tables[0])}] = {${table(tables[0])}};
__constant int zyx_wt[${len(tables[1])}] = {${table(tables[1])}};
<% space, tail = "__constant", "" %>\
% else:
<% space, tail = "__global", "__global const int *restrict zyx_xmin, __global const int *restrict zyx_wt, " %>\
% endif
__kernel void zyx_resample_u8(__global uchar *restrict zyx_out, __global const uchar *restrict zyx_x, ${tail}
                              const long zyx_items, const long zyx_inner)
{
    const long zyx_gid = get_global_id(0);
    if (zyx_gid >= zyx_items)
        return;
% if not rows:
    const long zyx_b = zyx_gid / ${runs};
    const int zyx_o0 = (int)(zyx_gid % ${runs}) * ${run};
    const int zyx_o1 = min(zyx_o0 + ${run}, ${o_size});
    __global const uchar *zyx_row = zyx_x + zyx_b * ${n};
    __global uchar *zyx_dst = zyx_out + zyx_b * ${o_size};
    for (int zyx_o = zyx_o0; zyx_o < zyx_o1; zyx_o++) {
        const int zyx_lo = zyx_xmin[zyx_o];
        ${space} const int *zyx_w = zyx_wt + zyx_o * ${taps};
        int zyx_acc = ${half};
        for (int zyx_j = 0; zyx_j < ${taps}; zyx_j++)
            zyx_acc += zyx_w[zyx_j] * (int)zyx_row[min(zyx_lo + zyx_j, ${n - 1})];
        zyx_dst[zyx_o] = (uchar)clamp(zyx_acc >> ${shift}, 0, 255);
    }
% else:
    const int zyx_o = (int)(zyx_gid % ${o_size});
    const long zyx_b = zyx_gid / ${o_size};
    const int zyx_lo = zyx_xmin[zyx_o];
    ${space} const int *zyx_w = zyx_wt + (long)zyx_o * ${taps};
    __global const uchar *zyx_src = zyx_x + zyx_b * ${n} * zyx_inner;
    __global uchar *zyx_dst = zyx_out + zyx_gid * zyx_inner;
    long zyx_c = 0;
    for (; zyx_c + ${vec} <= zyx_inner; zyx_c += ${vec}) {
        int${vec} zyx_acc = (int${vec})(${half});
        for (int zyx_j = 0; zyx_j < ${taps}; zyx_j++)
            zyx_acc += zyx_w[zyx_j] * convert_int${vec}(vload${vec}(0, zyx_src + (long)min(zyx_lo + zyx_j, ${n - 1}) * zyx_inner + zyx_c));
        vstore${vec}(convert_uchar${vec}_sat(zyx_acc >> ${shift}), 0, zyx_dst + zyx_c);  // _sat: clamp(int16, int, int) is wrong on Oclgrind 21.10
    }
    for (; zyx_c < zyx_inner; zyx_c++) {
        int zyx_acc = ${half};
        for (int zyx_j = 0; zyx_j < ${taps}; zyx_j++)
            zyx_acc += zyx_w[zyx_j] * (int)zyx_src[(long)min(zyx_lo + zyx_j, ${n - 1}) * zyx_inner + zyx_c];
        zyx_dst[zyx_c] = (uchar)clamp(zyx_acc >> ${shift}, 0, 255);
    }
% endif
}
