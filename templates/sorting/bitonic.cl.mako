<%doc>
sort (GPUs, rows of at most `p` elements): one work-group of `wg` work-items per row sorts
the row's (key, position) pairs in local memory with a bitonic network, padded to `p` (a
power of two) with the all-ones key at position 0xffffffff. Pairs compare by key, then by
position, so the result is the stable order and the padding sorts last. Keys are those of
common/sortkey.mako (descending: the run-time `zyx_flip`, all ones, complements them).
Parameters: dtype, p, wg.
</%doc>\
<%namespace name="sk" file="/common/sortkey.mako"/>\
<%
    K = sk.attr.key_type(dtype)
%>\
/* zyx bitonic row sort: ${dtype.name}, rows padded to ${p}, work-groups of ${wg} */
${sk.key_fn(dtype, "zyx_key0")}

__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void zyx_sort_bitonic(__global ${K} *restrict zyx_val, __global long *restrict zyx_idx,
                      __global const ${K} *restrict zyx_src, const uint zyx_n, const ${K} zyx_flip)
{
    __local ${K} zyx_lk[${p}];
    __local uint zyx_li[${p}];
    const ulong zyx_base = (ulong)get_group_id(0) * zyx_n;
    const uint zyx_t = get_local_id(0);
    __global const ${K} *zyx_in = zyx_src + zyx_base;
    for (uint zyx_j = zyx_t; zyx_j < ${p}; zyx_j += ${wg}) {
        const int zyx_real = zyx_j < zyx_n;
        zyx_lk[zyx_j] = zyx_real ? (${K})(zyx_key0(zyx_in[zyx_j]) ^ zyx_flip) : (${K})~(${K})0;
        zyx_li[zyx_j] = zyx_real ? zyx_j : 0xffffffffu;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint zyx_size = 2; zyx_size <= ${p}; zyx_size <<= 1) {
        for (uint zyx_stride = zyx_size >> 1; zyx_stride > 0; zyx_stride >>= 1) {
            for (uint zyx_q = zyx_t; zyx_q < ${p // 2}; zyx_q += ${wg}) {
                const uint zyx_lo = 2 * zyx_q - (zyx_q & (zyx_stride - 1)), zyx_hi = zyx_lo + zyx_stride;
                const ${K} zyx_a = zyx_lk[zyx_lo], zyx_b = zyx_lk[zyx_hi];
                const uint zyx_ia = zyx_li[zyx_lo], zyx_ib = zyx_li[zyx_hi];
                const int zyx_greater = zyx_a > zyx_b || (zyx_a == zyx_b && zyx_ia > zyx_ib);
                if (zyx_greater == ((zyx_lo & zyx_size) == 0)) {  /* out of this run's direction */
                    zyx_lk[zyx_lo] = zyx_b; zyx_lk[zyx_hi] = zyx_a;
                    zyx_li[zyx_lo] = zyx_ib; zyx_li[zyx_hi] = zyx_ia;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    __global ${K} *zyx_ov = zyx_val + zyx_base;
    __global long *zyx_oi = zyx_idx + zyx_base;
    for (uint zyx_j = zyx_t; zyx_j < zyx_n; zyx_j += ${wg}) {
        const uint zyx_at = zyx_li[zyx_j];
        zyx_oi[zyx_j] = zyx_at;
        zyx_ov[zyx_j] = zyx_in[zyx_at];
    }
}
