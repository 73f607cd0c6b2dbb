<%doc>
sort: every row of a dense (rows, n) tensor sorted by the order-preserving keys of
common/sortkey.mako, ties in input order (a stable sort: LSD radix passes are stable, and
the insertion sort shifts only strictly larger keys). Outputs: the values (raw bits copied
from the input at each sorted position) and the int64 input positions.

zyx_sort_rows      one work-item per row. Rows of at most `small` elements: insertion sort
                   in private memory. Longer rows: one read builds the histograms of every
                   8-bit digit of the keys, then one stable counting pass per digit (a digit
                   whose values are all equal is skipped), ping-ponging (key, position)
                   through the row's slice of the scratch buffers; the first pass reads the
                   input, the last writes the outputs.
Long rows with few rows take the block-parallel radix (each row cut into `blocks` blocks
of `blen` elements, one work-item per (block, row)), one pass per 8-bit digit:
  zyx_sort_hist     each block's histogram of the pass's digit, stored digit-major
                    (row, digit, block), so that one scan gives every block its offsets;
  zyx_sort_offsets  one work-item per row: the exclusive scan of its 256 x blocks counts;
  zyx_sort_scatter  each block moves its elements in order to its offsets (stable).
Descending order: the run-time `zyx_flip` (all ones) complements every key.
Parameters: dtype, small.
</%doc>\
<%namespace name="sk" file="/common/sortkey.mako"/>\
<%
    K = sk.attr.key_type(dtype)
    W = dtype.itemsize  # 8-bit digits per key
%>\
/* zyx sort kernels: ${dtype.name}, ${W} radix digits */
${sk.key_fn(dtype, "zyx_key0")}
#define zyx_key(b) (zyx_key0(b) ^ zyx_flip)

__kernel void zyx_sort_rows(__global ${K} *restrict zyx_val, __global long *restrict zyx_idx,
                            __global const ${K} *restrict zyx_src, __global ${K} *restrict zyx_ka,
                            __global ${K} *restrict zyx_kb, __global uint *restrict zyx_ia,
                            __global uint *restrict zyx_ib, const uint zyx_n, const uint zyx_rows,
                            const ${K} zyx_flip)
{
    const uint zyx_row = get_global_id(0);
    if (zyx_row >= zyx_rows) return;
    const ulong zyx_base = (ulong)zyx_row * zyx_n;
    __global const ${K} *zyx_in = zyx_src + zyx_base;
    __global ${K} *zyx_ov = zyx_val + zyx_base;
    __global long *zyx_oi = zyx_idx + zyx_base;
    if (zyx_n <= ${small}) {
        ${K} zyx_k[${small}];
        uint zyx_i[${small}];
        for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
            const ${K} zyx_x = zyx_key(zyx_in[zyx_j]);
            uint zyx_p = zyx_j;
            while (zyx_p > 0 && zyx_k[zyx_p - 1] > zyx_x) {
                zyx_k[zyx_p] = zyx_k[zyx_p - 1];
                zyx_i[zyx_p] = zyx_i[zyx_p - 1];
                --zyx_p;
            }
            zyx_k[zyx_p] = zyx_x;
            zyx_i[zyx_p] = zyx_j;
        }
        for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
            zyx_oi[zyx_j] = zyx_i[zyx_j];
            zyx_ov[zyx_j] = zyx_in[zyx_i[zyx_j]];
        }
        return;
    }
    uint zyx_h[${W}][256];
    for (int zyx_d = 0; zyx_d < ${W}; ++zyx_d)
        for (int zyx_v = 0; zyx_v < 256; ++zyx_v) zyx_h[zyx_d][zyx_v] = 0;
    for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
        const ${K} zyx_x = zyx_key(zyx_in[zyx_j]);
        for (int zyx_d = 0; zyx_d < ${W}; ++zyx_d) zyx_h[zyx_d][(zyx_x >> (8 * zyx_d)) & 255]++;
    }
    /* the digits that move anything; the first of them reads the input, the last writes the outputs */
    const ${K} zyx_k0 = zyx_key(zyx_in[0]);
    int zyx_last = -1, zyx_first = -1;
    for (int zyx_d = 0; zyx_d < ${W}; ++zyx_d) {
        if (zyx_h[zyx_d][(zyx_k0 >> (8 * zyx_d)) & 255] == zyx_n) continue;
        if (zyx_first < 0) zyx_first = zyx_d;
        zyx_last = zyx_d;
    }
    if (zyx_last < 0) {  /* all keys equal: the input order */
        for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
            zyx_oi[zyx_j] = zyx_j;
            zyx_ov[zyx_j] = zyx_in[zyx_j];
        }
        return;
    }
    __global ${K} *zyx_kin = zyx_ka + zyx_base, *zyx_kout = zyx_kb + zyx_base;
    __global uint *zyx_iin = zyx_ia + zyx_base, *zyx_iout = zyx_ib + zyx_base;
    for (int zyx_d = zyx_first; zyx_d <= zyx_last; ++zyx_d) {
        if (zyx_h[zyx_d][(zyx_k0 >> (8 * zyx_d)) & 255] == zyx_n) continue;
        uint zyx_run = 0;
        for (int zyx_v = 0; zyx_v < 256; ++zyx_v) {
            const uint zyx_c = zyx_h[zyx_d][zyx_v];
            zyx_h[zyx_d][zyx_v] = zyx_run;
            zyx_run += zyx_c;
        }
        const int zyx_shift = 8 * zyx_d;
        if (zyx_d == zyx_first && zyx_d == zyx_last) {
            for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
                const ${K} zyx_b = zyx_in[zyx_j];
                const uint zyx_p = zyx_h[zyx_d][(zyx_key(zyx_b) >> zyx_shift) & 255]++;
                zyx_oi[zyx_p] = zyx_j;
                zyx_ov[zyx_p] = zyx_b;
            }
        } else if (zyx_d == zyx_first) {
            for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
                const ${K} zyx_x = zyx_key(zyx_in[zyx_j]);
                const uint zyx_p = zyx_h[zyx_d][(zyx_x >> zyx_shift) & 255]++;
                zyx_kout[zyx_p] = zyx_x;
                zyx_iout[zyx_p] = zyx_j;
            }
        } else if (zyx_d == zyx_last) {
            for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
                const uint zyx_p = zyx_h[zyx_d][(zyx_kin[zyx_j] >> zyx_shift) & 255]++;
                const uint zyx_at = zyx_iin[zyx_j];
                zyx_oi[zyx_p] = zyx_at;
                zyx_ov[zyx_p] = zyx_in[zyx_at];
            }
        } else {
            for (uint zyx_j = 0; zyx_j < zyx_n; ++zyx_j) {
                const ${K} zyx_x = zyx_kin[zyx_j];
                const uint zyx_p = zyx_h[zyx_d][(zyx_x >> zyx_shift) & 255]++;
                zyx_kout[zyx_p] = zyx_x;
                zyx_iout[zyx_p] = zyx_iin[zyx_j];
            }
        }
        __global ${K} *zyx_kt = zyx_kin; zyx_kin = zyx_kout; zyx_kout = zyx_kt;
        __global uint *zyx_it = zyx_iin; zyx_iin = zyx_iout; zyx_iout = zyx_it;
    }
}

/* block-parallel radix for long rows: `zyx_pass` is the digit; pass 0 reads the input */
__kernel void zyx_sort_hist(__global uint *restrict zyx_hist, __global const ${K} *restrict zyx_src,
                            __global const ${K} *restrict zyx_kin, const uint zyx_n, const uint zyx_blocks,
                            const uint zyx_blen, const int zyx_pass, const ${K} zyx_flip)
{
    const uint zyx_b = get_global_id(0), zyx_row = get_global_id(1);
    if (zyx_b >= zyx_blocks) return;
    uint zyx_h[256];
    for (int zyx_v = 0; zyx_v < 256; ++zyx_v) zyx_h[zyx_v] = 0;
    const ulong zyx_base = (ulong)zyx_row * zyx_n;
    const uint zyx_lo = zyx_b * zyx_blen, zyx_hi = min(zyx_n, zyx_lo + zyx_blen);
    const int zyx_shift = 8 * zyx_pass;
    if (zyx_pass == 0)
        for (uint zyx_j = zyx_lo; zyx_j < zyx_hi; ++zyx_j) zyx_h[zyx_key(zyx_src[zyx_base + zyx_j]) & 255]++;
    else
        for (uint zyx_j = zyx_lo; zyx_j < zyx_hi; ++zyx_j) zyx_h[(zyx_kin[zyx_base + zyx_j] >> zyx_shift) & 255]++;
    __global uint *zyx_out = zyx_hist + (ulong)zyx_row * 256 * zyx_blocks + zyx_b;
    for (int zyx_v = 0; zyx_v < 256; ++zyx_v) zyx_out[zyx_v * zyx_blocks] = zyx_h[zyx_v];
}

__kernel void zyx_sort_offsets(__global uint *restrict zyx_hist, const uint zyx_blocks, const uint zyx_rows)
{
    const uint zyx_row = get_global_id(0);
    if (zyx_row >= zyx_rows) return;
    __global uint *zyx_h = zyx_hist + (ulong)zyx_row * 256 * zyx_blocks;
    uint zyx_run = 0;
    for (uint zyx_j = 0; zyx_j < 256 * zyx_blocks; ++zyx_j) {
        const uint zyx_c = zyx_h[zyx_j];
        zyx_h[zyx_j] = zyx_run;
        zyx_run += zyx_c;
    }
}

/* zyx_pass == 0 reads the input; zyx_final writes the outputs (values, int64 positions) */
__kernel void zyx_sort_scatter(__global ${K} *restrict zyx_val, __global long *restrict zyx_idx,
                               __global const ${K} *restrict zyx_src, __global const uint *restrict zyx_hist,
                               __global const ${K} *restrict zyx_kin, __global const uint *restrict zyx_iin,
                               __global ${K} *restrict zyx_kout, __global uint *restrict zyx_iout,
                               const uint zyx_n, const uint zyx_blocks, const uint zyx_blen,
                               const int zyx_pass, const int zyx_final, const ${K} zyx_flip)
{
    const uint zyx_b = get_global_id(0), zyx_row = get_global_id(1);
    if (zyx_b >= zyx_blocks) return;
    uint zyx_off[256];
    __global const uint *zyx_h = zyx_hist + (ulong)zyx_row * 256 * zyx_blocks + zyx_b;
    for (int zyx_v = 0; zyx_v < 256; ++zyx_v) zyx_off[zyx_v] = zyx_h[zyx_v * zyx_blocks];
    const ulong zyx_base = (ulong)zyx_row * zyx_n;
    const uint zyx_lo = zyx_b * zyx_blen, zyx_hi = min(zyx_n, zyx_lo + zyx_blen);
    const int zyx_shift = 8 * zyx_pass;
    for (uint zyx_j = zyx_lo; zyx_j < zyx_hi; ++zyx_j) {
        const ${K} zyx_x = zyx_pass == 0 ? zyx_key(zyx_src[zyx_base + zyx_j]) : zyx_kin[zyx_base + zyx_j];
        const uint zyx_at = zyx_pass == 0 ? zyx_j : zyx_iin[zyx_base + zyx_j];
        const ulong zyx_p = zyx_base + zyx_off[(zyx_x >> zyx_shift) & 255]++;
        if (zyx_final) {
            zyx_idx[zyx_p] = zyx_at;
            zyx_val[zyx_p] = zyx_src[zyx_base + zyx_at];
        } else {
            zyx_kout[zyx_p] = zyx_x;
            zyx_iout[zyx_p] = zyx_at;
        }
    }
}
