<%doc>
Row gathers and scatters along the last axis of dense tensors, for the gradients of the
value-selecting ops (sort, topk, kthvalue, median) and for unique. Element bits are moved
as unsigned words of the dtype's width (`word`), never converted.

zyx_gather_rows   out[r, q] = src[r, idx[r, q]] over (rows, k) work-items.
zyx_scatter_rows  out[r, idx[r, q]] = src[r, q]; out is zeroed first by zyx_zero_fill (the
                  positions of one row are distinct: no two work-items write one element).
zyx_unique_groups one work-item: walks the sorted (values, positions) once, writes each
                  run's first value and length (NaNs are each their own run, as PyTorch's
                  unique), every input position's run number, and the run count.
Parameters: dtype (keys for unique), word.
</%doc>\
<%namespace name="sk" file="/common/sortkey.mako"/>\
<%
    K = sk.attr.key_type(dtype)
%>\
/* zyx row gather/scatter (${word} words) and unique (${dtype.name}) */
${sk.key_fn(dtype, "zyx_key")}

__kernel void zyx_gather_rows(__global ${word} *restrict zyx_out, __global const ${word} *restrict zyx_src,
                              __global const long *restrict zyx_idx, const ulong zyx_k, const ulong zyx_n,
                              const ulong zyx_total)
{
    const ulong zyx_i = get_global_id(0);
    if (zyx_i >= zyx_total) return;
    zyx_out[zyx_i] = zyx_src[(zyx_i / zyx_k) * zyx_n + zyx_idx[zyx_i]];
}

__kernel void zyx_zero_fill(__global ${word} *restrict zyx_out, const ulong zyx_total)
{
    const ulong zyx_i = get_global_id(0);
    if (zyx_i < zyx_total) zyx_out[zyx_i] = 0;
}

__kernel void zyx_scatter_rows(__global ${word} *restrict zyx_out, __global const ${word} *restrict zyx_src,
                               __global const long *restrict zyx_idx, const ulong zyx_k, const ulong zyx_n,
                               const ulong zyx_total)
{
    const ulong zyx_i = get_global_id(0);
    if (zyx_i >= zyx_total) return;
    zyx_out[(zyx_i / zyx_k) * zyx_n + zyx_idx[zyx_i]] = zyx_src[zyx_i];
}

__kernel void zyx_unique_groups(__global ${K} *restrict zyx_uvals, __global long *restrict zyx_counts,
                                __global long *restrict zyx_inverse, __global long *restrict zyx_total,
                                __global const ${K} *restrict zyx_sorted, __global const long *restrict zyx_pos,
                                const ulong zyx_n)
{
    if (get_global_id(0) != 0) return;
    long zyx_g = -1;
    ${K} zyx_prev = 0;
    for (ulong zyx_i = 0; zyx_i < zyx_n; ++zyx_i) {
        const ${K} zyx_b = zyx_sorted[zyx_i];
        const ${K} zyx_x = zyx_key(zyx_b);
        if (zyx_g < 0 || zyx_x != zyx_prev || ${sk.is_nan_key(dtype, "zyx_x")}) {
            ++zyx_g;
            zyx_uvals[zyx_g] = zyx_b;
            zyx_counts[zyx_g] = 0;
        }
        zyx_counts[zyx_g] += 1;
        zyx_inverse[zyx_pos[zyx_i]] = zyx_g;
        zyx_prev = zyx_x;
    }
    zyx_total[0] = zyx_g + 1;
}
