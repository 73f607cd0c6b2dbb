<%doc>
searchsorted / bucketize: one work-item per value, a binary search of the value's key in its
row of the sorted sequence (the order-preserving keys of common/sortkey.mako, so NaN is the
largest and -0.0 equals +0.0). `right`: the first position whose key is greater than the
value's, else the first whose key is not less. With `sorter` the row is read through its
int64 permutation (positions outside the row are clamped into it). `batched`: value i
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
    while (zyx_lo < zyx_hi) {
        const ulong zyx_mid = zyx_lo + (zyx_hi - zyx_lo) / 2;
% if sorter:
        const long zyx_s = zyx_sorter[zyx_base + zyx_mid];
        const ulong zyx_at = zyx_s < 0 ? 0 : min((ulong)zyx_s, zyx_m - 1);
% else:
        const ulong zyx_at = zyx_mid;
% endif
        const ${K} zyx_x = zyx_key(zyx_seq[zyx_base + zyx_at]);
        if (zyx_x ${"<=" if right else "<"} zyx_v) zyx_lo = zyx_mid + 1;
        else zyx_hi = zyx_mid;
    }
    zyx_out[zyx_i] = (${out})zyx_lo;
}
