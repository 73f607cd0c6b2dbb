<%doc>
topk: the k smallest keys of every row of a dense (rows, n) tensor (largest=True sorts by
the complemented key, common/sortkey.mako), in order, ties by input position, without
sorting the row: a work-item keeps its best k (key, position) pairs sorted in private
memory and inserts an element only when it beats the current k-th.

zyx_topk_rows   one work-item per row (CPU work-groups of several rows): writes the outputs
                (values as raw bits, int64 positions).
zyx_topk_block  work-item (block, row) over elements [block * blen, min(n, (block+1) * blen)),
                for rows too few to fill the device: writes its k candidates (a block with
                fewer than k elements pads with the all-ones key at position 0xffffffff;
                only the last block can be short, so a pad never displaces a real element).
zyx_topk_merge  one work-item per row picks the best k among its blocks' candidates (read in
                block order, so position order breaks ties as in one pass).
largest=True: the run-time `zyx_flip` (all ones) complements every key.
Parameters: dtype, kmax (the private list's length, >= k).
</%doc>\
<%namespace name="sk" file="/common/sortkey.mako"/>\
<%
    K = sk.attr.key_type(dtype)
    # two key vectors per run; no 16-lane vectors (Oclgrind 21.10 misreads their shuffles, see
    # tests/sanitizer/conftest.py)
    lanes = 8 if dtype.itemsize < 8 else 4
%>\
/* zyx topk kernels: ${dtype.name}, k <= ${kmax} */
${sk.key_fn(dtype, "zyx_key0")}
#define zyx_key(b) (zyx_key0(b) ^ zyx_flip)
${sk.key_vec_fn(dtype, lanes, "zyx_keyv")}

#define ZYX_INSERT(zyx_x, zyx_at) do { \
    uint zyx_p; \
    if (zyx_cnt == zyx_k) { \
        if (!((zyx_x) < zyx_bk[zyx_k - 1])) break; \
        zyx_p = zyx_k - 1; \
    } else { \
        zyx_p = zyx_cnt++; \
    } \
    while (zyx_p > 0 && zyx_bk[zyx_p - 1] > (zyx_x)) { \
        zyx_bk[zyx_p] = zyx_bk[zyx_p - 1]; \
        zyx_bi[zyx_p] = zyx_bi[zyx_p - 1]; \
        --zyx_p; \
    } \
    zyx_bk[zyx_p] = (zyx_x); \
    zyx_bi[zyx_p] = (zyx_at); \
} while (0)

<%def name="scan_body()">\
    ${K} zyx_bk[${kmax}];
    uint zyx_bi[${kmax}];
    uint zyx_cnt = 0;
    uint zyx_j = zyx_lo;
    for (; zyx_j < zyx_hi && zyx_cnt < zyx_k; ++zyx_j) {
        const ${K} zyx_x = zyx_key(zyx_in[zyx_j]);
        ZYX_INSERT(zyx_x, zyx_j);
    }
    /* runs of ${2 * lanes}: their keys as two ${lanes}-lane vectors and their minimum, the inserts only
       where that beats the current k-th (rare once the list holds large values) */
    for (; zyx_j + ${2 * lanes} <= zyx_hi; zyx_j += ${2 * lanes}) {
        const ${K}${lanes} zyx_c0 = zyx_keyv(vload${lanes}(0, zyx_in + zyx_j)) ^ (${K}${lanes})zyx_flip;
        const ${K}${lanes} zyx_c1 = zyx_keyv(vload${lanes}(1, zyx_in + zyx_j)) ^ (${K}${lanes})zyx_flip;
        const ${K}${lanes} zyx_m${lanes} = min(zyx_c0, zyx_c1);
<%
    width = lanes  # the minimum of the vector by halves
    lines = []
    while width > 1:
        width //= 2
        lines.append(f"const {K}{width if width > 1 else ''} zyx_m{width} = min(zyx_m{width * 2}.lo, zyx_m{width * 2}.hi);")
%>\
% for line in lines:
        ${line}
% endfor
        if (zyx_m1 < zyx_bk[zyx_k - 1]) {
            ${K} zyx_cs[${2 * lanes}];
            vstore${lanes}(zyx_c0, 0, zyx_cs);
            vstore${lanes}(zyx_c1, 1, zyx_cs);
            for (uint zyx_q = 0; zyx_q < ${2 * lanes}; ++zyx_q) ZYX_INSERT(zyx_cs[zyx_q], zyx_j + zyx_q);
        }
    }
    for (; zyx_j < zyx_hi; ++zyx_j) {
        const ${K} zyx_x = zyx_key(zyx_in[zyx_j]);
        ZYX_INSERT(zyx_x, zyx_j);
    }
</%def>

__kernel void zyx_topk_rows(__global ${K} *restrict zyx_val, __global long *restrict zyx_idx,
                            __global const ${K} *restrict zyx_src, const uint zyx_n, const uint zyx_k,
                            const uint zyx_rows, const ${K} zyx_flip)
{
    const uint zyx_row = get_global_id(0);
    if (zyx_row >= zyx_rows) return;
    __global const ${K} *zyx_in = zyx_src + (ulong)zyx_row * zyx_n;
    const uint zyx_lo = 0, zyx_hi = zyx_n;
${scan_body()}
    const ulong zyx_o = (ulong)zyx_row * zyx_k;
    for (uint zyx_q = 0; zyx_q < zyx_k; ++zyx_q) {
        zyx_idx[zyx_o + zyx_q] = zyx_bi[zyx_q];
        zyx_val[zyx_o + zyx_q] = zyx_in[zyx_bi[zyx_q]];
    }
}

__kernel void zyx_topk_block(__global ${K} *restrict zyx_ck, __global uint *restrict zyx_ci,
                             __global const ${K} *restrict zyx_src, const uint zyx_n, const uint zyx_k,
                             const uint zyx_blocks, const uint zyx_blen, const ${K} zyx_flip)
{
    const uint zyx_b = get_global_id(0), zyx_row = get_global_id(1);
    if (zyx_b >= zyx_blocks) return;
    __global const ${K} *zyx_in = zyx_src + (ulong)zyx_row * zyx_n;
    const uint zyx_lo = zyx_b * zyx_blen, zyx_hi = min(zyx_n, zyx_lo + zyx_blen);
${scan_body()}
    const ulong zyx_o = ((ulong)zyx_row * zyx_blocks + zyx_b) * zyx_k;
    for (uint zyx_q = 0; zyx_q < zyx_k; ++zyx_q) {
        zyx_ck[zyx_o + zyx_q] = zyx_q < zyx_cnt ? zyx_bk[zyx_q] : (${K})~(${K})0;
        zyx_ci[zyx_o + zyx_q] = zyx_q < zyx_cnt ? zyx_bi[zyx_q] : 0xffffffffu;
    }
}

__kernel void zyx_topk_merge(__global ${K} *restrict zyx_val, __global long *restrict zyx_idx,
                             __global const ${K} *restrict zyx_ck, __global const uint *restrict zyx_ci,
                             __global const ${K} *restrict zyx_src, const uint zyx_n, const uint zyx_k,
                             const uint zyx_blocks, const uint zyx_rows)
{
    const uint zyx_row = get_global_id(0);
    if (zyx_row >= zyx_rows) return;
    ${K} zyx_bk[${kmax}];
    uint zyx_bi[${kmax}];
    uint zyx_cnt = 0;
    const ulong zyx_c0 = (ulong)zyx_row * zyx_blocks * zyx_k;
    for (uint zyx_j = 0; zyx_j < zyx_blocks * zyx_k; ++zyx_j) {
        const ${K} zyx_x = zyx_ck[zyx_c0 + zyx_j];
        ZYX_INSERT(zyx_x, zyx_ci[zyx_c0 + zyx_j]);
    }
    __global const ${K} *zyx_in = zyx_src + (ulong)zyx_row * zyx_n;
    const ulong zyx_o = (ulong)zyx_row * zyx_k;
    for (uint zyx_q = 0; zyx_q < zyx_k; ++zyx_q) {
        zyx_idx[zyx_o + zyx_q] = zyx_bi[zyx_q];
        zyx_val[zyx_o + zyx_q] = zyx_in[zyx_bi[zyx_q]];
    }
}
