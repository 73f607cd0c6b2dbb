<%doc>
Singular value decomposition of a batch of matrices by one-sided Jacobi (Hestenes) rotations.

zyx_svd_jacobi  one work-item per matrix. Its input X is dense (batch, N, M) with M >= N: row j of
                X is column j of the M x N matrix B = X^T being decomposed, B = P diag(S) Q^T.
                The work copy W (X divided by its largest |entry|, so that no sum of squares
                overflows or underflows) has its rows rotated in pairs until every pair is
                orthogonal to within tol (|w_p . w_q| <= tol |w_p| |w_q|, tol = eps * max(M, 8))
                or max_sweeps sweeps ran; the rotations are accumulated into V (rows: Q's columns).
                A sweep takes W's rows ROWS at a time: de Rijk's pivoting first swaps the longest
                rows left into the block (fewer sweeps), the block's own pairs are rotated one by
                one, then step k rotates the pairs (i + r, k - r), r < ROWS, which share no row, so
                their dependency chains (dot product -> test -> rotation -> next dot product)
                overlap in the core; every pair is visited once a sweep. Rows are padded with zeros
                to MP (W) and NP (V) elements, whole vectors of VW lanes, for the dot products and
                rotations (zeros rotate to zeros).
                Then S = the row norms (times the scale), sorted descending (ties in row order).
                With uv: row k of P (pc rows of M) is W's row of the k-th singular value over that
                value; rows of a singular value at most eps * M * S[0] (zero, or lost in rounding),
                and with pc > N the rows past N, complete P to orthonormal rows (the standard basis
                vector least covered by the rows so far, Gram-Schmidt twice, normalized). Row k
                of Q^T (N x N) is V's row of the k-th value.
                Any NaN or infinite entry: S, P and Q are all NaN.
Scratch (global, per matrix): W (N * MP), V (N * NP, uv only), the unsorted norms (N), the order (N).
Parameters: dtype (float32 or float64: the compute type), uv (write P and Q), max_sweeps, VW (vector
lanes: 1, 2, 4 or 8), ROWS (rows per sweep step).
</%doc>\
<%
    T = "double" if dtype.itemsize == 8 else "float"
    EPS = "DBL_EPSILON" if dtype.itemsize == 8 else "FLT_EPSILON"
    VT = T + str(VW) if VW > 1 else T
%>\
/* zyx svd: one-sided Jacobi, ${dtype.name}${", with U and V" if uv else ""} */
% if dtype.itemsize == 8:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
typedef ${T} zyx_svd_t;
typedef ${VT} zyx_svd_v;

/* the dot product of two rows of n elements (four partial sums: independent chains the compiler
   can vectorize, which one strict left-to-right sum would forbid); for the output rows of P */
static zyx_svd_t zyx_svd_dot(__global const zyx_svd_t *zyx_a, __global const zyx_svd_t *zyx_b, uint zyx_n) {
    zyx_svd_t zyx_acc0 = 0, zyx_acc1 = 0, zyx_acc2 = 0, zyx_acc3 = 0;
    uint zyx_i = 0;
    for (; zyx_i + 4 <= zyx_n; zyx_i += 4) {
        zyx_acc0 += zyx_a[zyx_i] * zyx_b[zyx_i];
        zyx_acc1 += zyx_a[zyx_i + 1] * zyx_b[zyx_i + 1];
        zyx_acc2 += zyx_a[zyx_i + 2] * zyx_b[zyx_i + 2];
        zyx_acc3 += zyx_a[zyx_i + 3] * zyx_b[zyx_i + 3];
    }
    for (; zyx_i < zyx_n; ++zyx_i) zyx_acc0 += zyx_a[zyx_i] * zyx_b[zyx_i];
    return (zyx_acc0 + zyx_acc1) + (zyx_acc2 + zyx_acc3);
}

/* the sum of a vector's lanes (pairwise halves) */
static zyx_svd_t zyx_svd_lanes(zyx_svd_v zyx_v) {
% if VW >= 8:
    ${T}4 zyx_v4 = zyx_v.lo + zyx_v.hi;
% elif VW == 4:
    ${T}4 zyx_v4 = zyx_v;
% endif
% if VW >= 4:
    ${T}2 zyx_v2 = zyx_v4.lo + zyx_v4.hi;
% elif VW == 2:
    ${T}2 zyx_v2 = zyx_v;
% endif
% if VW >= 2:
    return zyx_v2.x + zyx_v2.y;
% else:
    return zyx_v;
% endif
}

/* the dot product of two padded rows of nv vectors (two accumulators: independent chains) */
static zyx_svd_t zyx_svd_vdot(__global const zyx_svd_v *zyx_a, __global const zyx_svd_v *zyx_b, uint zyx_nv) {
    zyx_svd_v zyx_acc0 = 0, zyx_acc1 = 0;
    uint zyx_i = 0;
    for (; zyx_i + 2 <= zyx_nv; zyx_i += 2) {
        zyx_acc0 += zyx_a[zyx_i] * zyx_b[zyx_i];
        zyx_acc1 += zyx_a[zyx_i + 1] * zyx_b[zyx_i + 1];
    }
    if (zyx_i < zyx_nv) zyx_acc0 += zyx_a[zyx_i] * zyx_b[zyx_i];
    return zyx_svd_lanes(zyx_acc0 + zyx_acc1);
}

/* (a, b) <- (c a - s b, s a + c b) over nv vectors */
static void zyx_svd_rotate(__global zyx_svd_v *restrict zyx_a, __global zyx_svd_v *restrict zyx_b, uint zyx_nv,
                           zyx_svd_t zyx_c, zyx_svd_t zyx_s) {
    for (uint zyx_i = 0; zyx_i < zyx_nv; ++zyx_i) {
        zyx_svd_v zyx_x = zyx_a[zyx_i], zyx_y = zyx_b[zyx_i];
        zyx_a[zyx_i] = zyx_c * zyx_x - zyx_s * zyx_y;
        zyx_b[zyx_i] = zyx_s * zyx_x + zyx_c * zyx_y;
    }
}

/* swap two padded rows of nv vectors */
static void zyx_svd_swap(__global zyx_svd_v *restrict zyx_a, __global zyx_svd_v *restrict zyx_b, uint zyx_nv) {
    for (uint zyx_k = 0; zyx_k < zyx_nv; ++zyx_k) {
        zyx_svd_v zyx_tmp = zyx_a[zyx_k];
        zyx_a[zyx_k] = zyx_b[zyx_k];
        zyx_b[zyx_k] = zyx_tmp;
    }
}

/* whether rows of squared norms alpha and beta and inner product gamma are not yet orthogonal to
   within tol (tol2 = tol^2); if not, the rotation zeroing gamma: t the smaller root of
   t^2 + 2 zeta t - 1 = 0 (past 1/sqrt(eps), 1 + zeta^2 rounds to zeta^2: no hypot), c and s */
static int zyx_svd_plan(zyx_svd_t zyx_alpha, zyx_svd_t zyx_beta, zyx_svd_t zyx_gamma, zyx_svd_t zyx_tol,
                        double zyx_tol2, zyx_svd_t *zyx_tp, zyx_svd_t *zyx_cp, zyx_svd_t *zyx_sp) {
% if dtype.itemsize == 4:
    /* float32: the test squared in double (no sqrt, and no product of small norms underflows) */
    const double zyx_g = zyx_gamma;
    if (!(zyx_g * zyx_g > zyx_tol2 * (double)zyx_alpha * (double)zyx_beta)) return 0;
% else:
    if (!(fabs(zyx_gamma) > zyx_tol * sqrt(zyx_alpha) * sqrt(zyx_beta))) return 0;
% endif
    const zyx_svd_t zyx_zeta = (zyx_beta - zyx_alpha) / (2 * zyx_gamma);
    const zyx_svd_t zyx_az = fabs(zyx_zeta);
    const zyx_svd_t zyx_root = zyx_az < (zyx_svd_t)${"1e150" if dtype.itemsize == 8 else "1e18f"}
                               ? sqrt(1 + zyx_zeta * zyx_zeta) : zyx_az;
    const zyx_svd_t zyx_t = (zyx_zeta >= 0 ? (zyx_svd_t)1 : (zyx_svd_t)-1) / (zyx_az + zyx_root);
    const zyx_svd_t zyx_cs = 1 / sqrt(1 + zyx_t * zyx_t);
    *zyx_tp = zyx_t;
    *zyx_cp = zyx_cs;
    *zyx_sp = zyx_cs * zyx_t;
    return 1;
}

/* test and rotate the pair of rows (a, b): whether it rotated */
static int zyx_svd_pair(__global zyx_svd_v *zyx_wv, __global zyx_svd_v *zyx_vv, __global zyx_svd_t *zyx_nrm, uint zyx_a,
                        uint zyx_b, uint zyx_mv, uint zyx_nv, zyx_svd_t zyx_tol, double zyx_tol2) {
    __global zyx_svd_v *zyx_wa = zyx_wv + (ulong)zyx_a * zyx_mv, *zyx_wb = zyx_wv + (ulong)zyx_b * zyx_mv;
    const zyx_svd_t zyx_alpha = zyx_nrm[zyx_a], zyx_beta = zyx_nrm[zyx_b];
    const zyx_svd_t zyx_gamma = zyx_svd_vdot(zyx_wa, zyx_wb, zyx_mv);
    zyx_svd_t zyx_t, zyx_cs, zyx_sn;
    if (!zyx_svd_plan(zyx_alpha, zyx_beta, zyx_gamma, zyx_tol, zyx_tol2, &zyx_t, &zyx_cs, &zyx_sn)) return 0;
    zyx_svd_rotate(zyx_wa, zyx_wb, zyx_mv, zyx_cs, zyx_sn);
% if uv:
    zyx_svd_rotate(zyx_vv + (ulong)zyx_a * zyx_nv, zyx_vv + (ulong)zyx_b * zyx_nv, zyx_nv, zyx_cs, zyx_sn);
% endif
    zyx_nrm[zyx_a] = zyx_alpha - zyx_t * zyx_gamma;
    zyx_nrm[zyx_b] = zyx_beta + zyx_t * zyx_gamma;
    return 1;
}

__kernel void zyx_svd_jacobi(__global zyx_svd_t *zyx_sv, __global zyx_svd_t *zyx_pout, __global zyx_svd_t *zyx_qout,
                             __global const zyx_svd_t *zyx_x, __global zyx_svd_t *zyx_work,
                             __global zyx_svd_t *zyx_vwork, __global zyx_svd_t *zyx_norms,
                             __global uint *zyx_order, uint zyx_batch, uint zyx_N, uint zyx_M, uint zyx_pc,
                             uint zyx_MP, uint zyx_NP) {
    const uint zyx_b = get_global_id(0);
    if (zyx_b >= zyx_batch) return;
    const ulong zyx_nm = (ulong)zyx_N * zyx_M;
    /* W's and V's rows are padded to MP and NP elements (whole vectors of ${VW}; zeros stay zero) */
    const uint zyx_mv = zyx_MP / ${VW}u, zyx_nv = zyx_NP / ${VW}u;
    __global const zyx_svd_t *zyx_xb = zyx_x + zyx_b * zyx_nm;
    __global zyx_svd_t *zyx_w = zyx_work + (ulong)zyx_b * zyx_N * zyx_MP;
    __global zyx_svd_v *zyx_wv = (__global zyx_svd_v *)zyx_w;
    __global zyx_svd_t *zyx_s = zyx_sv + (ulong)zyx_b * zyx_N;
    __global zyx_svd_t *zyx_nrm = zyx_norms + (ulong)zyx_b * zyx_N;
    __global uint *zyx_ord = zyx_order + (ulong)zyx_b * zyx_N;
% if uv:
    __global zyx_svd_t *zyx_v = zyx_vwork + (ulong)zyx_b * zyx_N * zyx_NP;
    __global zyx_svd_v *zyx_vv = (__global zyx_svd_v *)zyx_v;
    __global zyx_svd_t *zyx_p = zyx_pout + (ulong)zyx_b * zyx_pc * zyx_M;
    __global zyx_svd_t *zyx_q = zyx_qout + (ulong)zyx_b * zyx_N * zyx_N;
% else:
    __global zyx_svd_v *zyx_vv = zyx_wv;  /* no V: a stand-in the pair helper never touches */
% endif

    /* the scale: the largest |entry|; a NaN or infinity makes every output NaN */
    zyx_svd_t zyx_amax = 0;
    int zyx_finite = 1;
    for (ulong zyx_i = 0; zyx_i < zyx_nm; ++zyx_i) {
        zyx_svd_t zyx_a = fabs(zyx_xb[zyx_i]);
        if (!isfinite(zyx_a)) zyx_finite = 0;
        zyx_amax = fmax(zyx_amax, zyx_a);
    }
    if (!zyx_finite) {
        const zyx_svd_t zyx_nan = NAN;
        for (uint zyx_k = 0; zyx_k < zyx_N; ++zyx_k) zyx_s[zyx_k] = zyx_nan;
% if uv:
        for (ulong zyx_i = 0; zyx_i < (ulong)zyx_pc * zyx_M; ++zyx_i) zyx_p[zyx_i] = zyx_nan;
        for (ulong zyx_i = 0; zyx_i < (ulong)zyx_N * zyx_N; ++zyx_i) zyx_q[zyx_i] = zyx_nan;
% endif
        return;
    }
    const zyx_svd_t zyx_scale = zyx_amax > 0 ? zyx_amax : (zyx_svd_t)1;
    for (uint zyx_i = 0; zyx_i < zyx_N; ++zyx_i)
        for (uint zyx_k = 0; zyx_k < zyx_MP; ++zyx_k)
            zyx_w[(ulong)zyx_i * zyx_MP + zyx_k] = zyx_k < zyx_M ? zyx_xb[(ulong)zyx_i * zyx_M + zyx_k] / zyx_scale : 0;
% if uv:
    for (uint zyx_i = 0; zyx_i < zyx_N; ++zyx_i)
        for (uint zyx_j = 0; zyx_j < zyx_NP; ++zyx_j) zyx_v[(ulong)zyx_i * zyx_NP + zyx_j] = zyx_i == zyx_j ? 1 : 0;
% endif

    /* sweeps over the row pairs, two rows (p = i, q = i + 1) at a time: after the pair (p, q), step k
       rotates the pairs (p, k) and (q, k - 1), which share no row, so the two dependency chains
       (dot product, test, rotation) overlap; rotated: whether a sweep still changed something */
    const zyx_svd_t zyx_tol = ${EPS} * (zyx_svd_t)max(zyx_M, 8u);
    const double zyx_tol2 = (double)zyx_tol * (double)zyx_tol;
    for (uint zyx_sweep = 0; zyx_sweep < ${max_sweeps}u; ++zyx_sweep) {
        int zyx_rotated = 0;
        /* the rows' squared norms, exact at each sweep's start and updated by the rotations
           (a rotation moves t * gamma from one to the other) */
        for (uint zyx_i = 0; zyx_i < zyx_N; ++zyx_i) {
            __global const zyx_svd_v *zyx_wi = zyx_wv + (ulong)zyx_i * zyx_mv;
            zyx_nrm[zyx_i] = zyx_svd_vdot(zyx_wi, zyx_wi, zyx_mv);
        }
        for (uint zyx_i = 0; zyx_i + 1 < zyx_N; zyx_i += ${ROWS}u) {
            const uint zyx_nb = min(${ROWS}u, zyx_N - zyx_i);
            /* de Rijk's pivoting: the longest rows left go to places i, i + 1, ... (fewer sweeps: ~7
               for 64 x 64, not ~9); swapping W's rows (and V's with them) changes no value */
            for (uint zyx_at = zyx_i; zyx_at < zyx_i + zyx_nb; ++zyx_at) {
                uint zyx_piv = zyx_at;
                for (uint zyx_k = zyx_at + 1; zyx_k < zyx_N; ++zyx_k)
                    if (zyx_nrm[zyx_k] > zyx_nrm[zyx_piv]) zyx_piv = zyx_k;
                if (zyx_piv == zyx_at) continue;
                zyx_svd_swap(zyx_wv + (ulong)zyx_at * zyx_mv, zyx_wv + (ulong)zyx_piv * zyx_mv, zyx_mv);
% if uv:
                zyx_svd_swap(zyx_vv + (ulong)zyx_at * zyx_nv, zyx_vv + (ulong)zyx_piv * zyx_nv, zyx_nv);
% endif
                const zyx_svd_t zyx_tn = zyx_nrm[zyx_at];
                zyx_nrm[zyx_at] = zyx_nrm[zyx_piv];
                zyx_nrm[zyx_piv] = zyx_tn;
            }
            /* the pairs within the block, one at a time */
            for (uint zyx_a = zyx_i; zyx_a < zyx_i + zyx_nb; ++zyx_a)
                for (uint zyx_j = zyx_a + 1; zyx_j < zyx_i + zyx_nb; ++zyx_j)
                    zyx_rotated |= zyx_svd_pair(zyx_wv, zyx_vv, zyx_nrm, zyx_a, zyx_j, zyx_mv, zyx_nv, zyx_tol, zyx_tol2);
            /* step k: the pairs (i + r, k - r), one per row r of the block, share no row */
            for (uint zyx_k = zyx_i + ${ROWS}u; zyx_k < zyx_N + ${ROWS - 1}u; ++zyx_k) {
% for r in range(ROWS):
                const uint zyx_j${r} = zyx_k - ${r}u;
                const int zyx_has${r} = ${r}u < zyx_nb && zyx_j${r} >= zyx_i + ${ROWS}u && zyx_j${r} < zyx_N;
                __global zyx_svd_v *zyx_wa${r} = zyx_wv + (ulong)(zyx_i + ${r}u) * zyx_mv;
                __global zyx_svd_v *zyx_wb${r} = zyx_wv + (ulong)zyx_j${r} * zyx_mv;
                const zyx_svd_t zyx_g${r} = zyx_has${r} ? zyx_svd_vdot(zyx_wa${r}, zyx_wb${r}, zyx_mv) : 0;
% endfor
% for r in range(ROWS):
                zyx_svd_t zyx_t${r}, zyx_c${r}, zyx_s${r};
                const zyx_svd_t zyx_al${r} = zyx_has${r} ? zyx_nrm[zyx_i + ${r}u] : 0;
                const zyx_svd_t zyx_be${r} = zyx_has${r} ? zyx_nrm[zyx_j${r}] : 0;
                const int zyx_r${r} = zyx_has${r} && zyx_svd_plan(zyx_al${r}, zyx_be${r}, zyx_g${r}, zyx_tol, zyx_tol2,
                                                                  &zyx_t${r}, &zyx_c${r}, &zyx_s${r});
% endfor
% for r in range(ROWS):
                if (zyx_r${r}) {
                    zyx_svd_rotate(zyx_wa${r}, zyx_wb${r}, zyx_mv, zyx_c${r}, zyx_s${r});
% if uv:
                    zyx_svd_rotate(zyx_vv + (ulong)(zyx_i + ${r}u) * zyx_nv, zyx_vv + (ulong)zyx_j${r} * zyx_nv, zyx_nv,
                                   zyx_c${r}, zyx_s${r});
% endif
                    zyx_nrm[zyx_i + ${r}u] = zyx_al${r} - zyx_t${r} * zyx_g${r};
                    zyx_nrm[zyx_j${r}] = zyx_be${r} + zyx_t${r} * zyx_g${r};
                    zyx_rotated = 1;
                }
% endfor
            }
        }
        if (!zyx_rotated) break;
    }

    /* the norms, and their order (descending, stable insertion sort) */
    for (uint zyx_k = 0; zyx_k < zyx_N; ++zyx_k) {
        __global const zyx_svd_v *zyx_wk = zyx_wv + (ulong)zyx_k * zyx_mv;
        zyx_svd_t zyx_sig = sqrt(zyx_svd_vdot(zyx_wk, zyx_wk, zyx_mv));
        zyx_nrm[zyx_k] = zyx_sig;
        uint zyx_at = zyx_k;
        while (zyx_at > 0 && zyx_nrm[zyx_ord[zyx_at - 1]] < zyx_sig) {
            zyx_ord[zyx_at] = zyx_ord[zyx_at - 1];
            --zyx_at;
        }
        zyx_ord[zyx_at] = zyx_k;
    }
    for (uint zyx_k = 0; zyx_k < zyx_N; ++zyx_k) zyx_s[zyx_k] = zyx_nrm[zyx_ord[zyx_k]] * zyx_scale;
% if uv:
    const zyx_svd_t zyx_cut = zyx_N ? ${EPS} * (zyx_svd_t)zyx_M * zyx_nrm[zyx_ord[0]] : (zyx_svd_t)0;
    for (uint zyx_k = 0; zyx_k < zyx_N; ++zyx_k) {
        __global const zyx_svd_t *zyx_vk = zyx_v + (ulong)zyx_ord[zyx_k] * zyx_NP;
        for (uint zyx_i = 0; zyx_i < zyx_N; ++zyx_i) zyx_q[(ulong)zyx_k * zyx_N + zyx_i] = zyx_vk[zyx_i];
    }
    for (uint zyx_k = 0; zyx_k < zyx_pc; ++zyx_k) {
        __global zyx_svd_t *zyx_pk = zyx_p + (ulong)zyx_k * zyx_M;
        zyx_svd_t zyx_sig = zyx_k < zyx_N ? zyx_nrm[zyx_ord[zyx_k]] : (zyx_svd_t)0;
        if (zyx_k < zyx_N && zyx_sig > zyx_cut && zyx_sig > 0) {
            __global const zyx_svd_t *zyx_wk = zyx_w + (ulong)zyx_ord[zyx_k] * zyx_MP;
            for (uint zyx_i = 0; zyx_i < zyx_M; ++zyx_i) zyx_pk[zyx_i] = zyx_wk[zyx_i] / zyx_sig;
            continue;
        }
        /* completion: the basis vector with the largest part outside the rows so far */
        uint zyx_best = 0;
        zyx_svd_t zyx_left = -1;
        for (uint zyx_t = 0; zyx_t < zyx_M; ++zyx_t) {
            zyx_svd_t zyx_r = 1;
            for (uint zyx_j = 0; zyx_j < zyx_k; ++zyx_j) {
                zyx_svd_t zyx_e = zyx_p[(ulong)zyx_j * zyx_M + zyx_t];
                zyx_r -= zyx_e * zyx_e;
            }
            if (zyx_r > zyx_left) {
                zyx_left = zyx_r;
                zyx_best = zyx_t;
            }
        }
        for (uint zyx_i = 0; zyx_i < zyx_M; ++zyx_i) zyx_pk[zyx_i] = zyx_i == zyx_best ? 1 : 0;
        for (int zyx_pass = 0; zyx_pass < 2; ++zyx_pass) {
            for (uint zyx_j = 0; zyx_j < zyx_k; ++zyx_j) {
                __global const zyx_svd_t *zyx_pj = zyx_p + (ulong)zyx_j * zyx_M;
                zyx_svd_t zyx_d = zyx_svd_dot(zyx_pj, zyx_pk, zyx_M);
                for (uint zyx_i = 0; zyx_i < zyx_M; ++zyx_i) zyx_pk[zyx_i] -= zyx_d * zyx_pj[zyx_i];
            }
        }
        zyx_svd_t zyx_len = sqrt(zyx_svd_dot(zyx_pk, zyx_pk, zyx_M));
        for (uint zyx_i = 0; zyx_i < zyx_M; ++zyx_i) zyx_pk[zyx_i] /= zyx_len;
    }
% endif
}
