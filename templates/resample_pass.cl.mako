<%doc>
One separable resampling pass of a uint8 tensor in PIL's fixed point (zyx.nn.resample_pass): along one
dim of size n, output o is clamp((2**(shift-1) + sum_j wt[o, j] * x[min(xmin[o] + j, n - 1)]) >> shift,
0, 255) over j < taps, in int32 (exact: the order of the sum does not matter). The input is contiguous,
seen as (outer, n, inner); the output (outer, o_size, inner).
- inner > 1 (a pass over a dim that is not the last): work item (b, o) writes the whole inner run of
  its output row, vec bytes a step (explicit vectors: each tap row is a contiguous load), the last
  inner % vec bytes one by one.
- inner == 1 (the last dim): work item (b, chunk) writes `run` consecutive outputs of row b.
Parameters: n, o_size, inner, outer, taps, shift, vec (16 or 8: the uchar vector of the rows), run.
Arguments: out (uchar), x (uchar), xmin (int, per output), wt (int, o_size * taps, zero past a row's taps).
</%doc>\
<%
    runs = -(-o_size // run)
    total = outer * (runs if inner == 1 else o_size)
    half = 1 << (shift - 1)
%>\
/* zyx resample pass (uint8 fixed point): (${outer}, ${n}, ${inner}) -> (${outer}, ${o_size}, ${inner}), ${taps} taps, shift ${shift} */
__kernel void zyx_resample_u8(__global uchar *restrict out, __global const uchar *restrict x,
                              __global const int *restrict xmin, __global const int *restrict wt)
{
    const long gid = get_global_id(0);
    if (gid >= ${total}L)
        return;
% if inner == 1:
    /* work item (b, chunk): outputs [o0, o0 + ${run}) of row b, the row's window in L1 */
    const long b = gid / ${runs};
    const int o0 = (int)(gid % ${runs}) * ${run};
    const int o1 = min(o0 + ${run}, ${o_size});
    __global const uchar *row = x + b * ${n};
    __global uchar *dst = out + b * ${o_size};
    for (int o = o0; o < o1; o++) {
        const int lo = xmin[o];
        __global const int *w = wt + o * ${taps};
        int acc = ${half};
        for (int j = 0; j < ${taps}; j++)
            acc += w[j] * (int)row[min(lo + j, ${n - 1})];
        dst[o] = (uchar)clamp(acc >> ${shift}, 0, 255);
    }
% else:
    const int o = (int)(gid % ${o_size});
    const long b = gid / ${o_size};
    const int lo = xmin[o];
    __global const int *w = wt + (long)o * ${taps};
    __global const uchar *src = x + b * ${n * inner}L;
    __global uchar *dst = out + gid * ${inner}L;
    int c = 0;
    for (; c + ${vec} <= ${inner}; c += ${vec}) {
        int${vec} acc = (int${vec})(${half});
        for (int j = 0; j < ${taps}; j++)
            acc += w[j] * convert_int${vec}(vload${vec}(0, src + (long)min(lo + j, ${n - 1}) * ${inner} + c));
        vstore${vec}(convert_uchar${vec}(clamp(acc >> ${shift}, 0, 255)), 0, dst + c);
    }
    for (; c < ${inner}; c++) {
        int acc = ${half};
        for (int j = 0; j < ${taps}; j++)
            acc += w[j] * (int)src[(long)min(lo + j, ${n - 1}) * ${inner} + c];
        dst[c] = (uchar)clamp(acc >> ${shift}, 0, 255);
    }
% endif
}
