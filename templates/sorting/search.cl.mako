<%doc>
searchsorted / bucketize: one work-item per value, a binary search of the value's key in its
row of the sorted sequence (the order-preserving keys of common/sortkey.mako, so -0.0 equals
+0.0). `right`: the first position whose key is greater than the value's, else the first whose
key is not less; a NaN (the all-ones key) on either side of a comparison moves the search
right, as PyTorch's `!(x >= v)` / `!(x > v)` do, so NaN results equal PyTorch's. With `sorter`
the row is read through its int64 permutation (positions outside the row are clamped into it). `batched`: value i
searches row i / per, else every value searches row 0.
Parameters: dtype, right, sorter, out (the OpenCL output type: int or long).
</%doc>\
<%namespace name="sk" file="/common/sortkey.mako"/>\
<%
    K = sk.attr.key_type(dtype)
%>\
/* zyx searchsorted: ${dtype.name}, side ${"right" if right else "left"}${", through a sorter" if sorter else ""} */
${sk.key_fn(dtype, "zyx_key")}

__kernel void zyx_searchsorted(__global ${out} *restrict zyx_out, __global const ${K} *restrict zyx_seq,
                               __global const long *restrict zyx_sorter, __global const ${K} *restrict zyx_vals,
                               const ulong zyx_count, const ulong zyx_per, const ulong zyx_m,
                               const int zyx_batched)
{
    const ulong zyx_i = get_global_id(0);
    if (zyx_i >= zyx_count) return;
    const ulong zyx_base = zyx_batched ? (zyx_i / zyx_per) * zyx_m : 0;
    const ${K} zyx_v = zyx_key(zyx_vals[zyx_i]);
    ulong zyx_lo = 0, zyx_hi = zyx_m;
% if dtype.is_float:
    const ${K} zyx_nan = (${K})~(${K})0;  /* every NaN's key */
% endif
    while (zyx_lo < zyx_hi) {
        const ulong zyx_mid = zyx_lo + (zyx_hi - zyx_lo) / 2;
% if sorter:
        const long zyx_s = zyx_sorter[zyx_base + zyx_mid];
        const ulong zyx_at = zyx_s < 0 ? 0 : min((ulong)zyx_s, zyx_m - 1);
% else:
        const ulong zyx_at = zyx_mid;
% endif
        const ${K} zyx_x = zyx_key(zyx_seq[zyx_base + zyx_at]);
% if dtype.is_float:
        /* PyTorch's comparisons: !(x >= v) (left) or !(x > v) (right), so a NaN on either side moves right */
        if (zyx_x ${"<=" if right else "<"} zyx_v || zyx_x == zyx_nan || zyx_v == zyx_nan) zyx_lo = zyx_mid + 1;
% else:
        if (zyx_x ${"<=" if right else "<"} zyx_v) zyx_lo = zyx_mid + 1;
% endif
        else zyx_hi = zyx_mid;
    }
    zyx_out[zyx_i] = (${out})zyx_lo;
}
