<%doc>
Attention without the T x T matrix, for CPUs (zyx.kernels.attention): float32, work-groups of one,
explicit vectors. Three kernels (``kind``):

* ``fwd``: a work item owns R query rows of one batch entry; it walks the keys KB at a time (scores
  as one KB-lane vector per row, from the padded, transposed keys kt), keeps the running max m and
  sum l per row (online softmax, base 2: scale and mask are multiplied by log2(e)) and R x DV output
  accumulators, rescaled once per key block. Writes out (B, Tq, DV), then lse (B, Tqp): m + log2(l),
  +inf for a row with no live key (its output is 0), 0 in the padding columns.
* ``dq``: a work item owns R query rows; per key block it recomputes p = exp2(s - lse) from q, kt and
  lse, dp = dO . v from vt (padded, transposed values), ds = p * (dp - delta), and accumulates
  dq += ds * k over the block's key rows. Writes dq (B, Tq, DK), scaled.
* ``dkdv``: a work item owns R key rows; per query block (qt and dOt padded, transposed; lse and delta
  padded) the same p and ds, transposed, then dv += p * dO and dk += ds * q over the block's query
  rows. Writes dk (B, Tk, DK) then dv (B, Tk, DV).

Operands (``ops``): name -> (offset, batch strides, row stride, column stride) in elements over the
batch shape ``bshape`` (B = its product); a vector load along a column needs column stride 1 (the
launcher makes it so). Causal: query i sees keys j <= i (top-left aligned, PyTorch's). A lane or row
outside the problem is masked by selects, so padding and garbage never reach a stored value.
Parameters: name, kind, bshape, Tq, Tk, Tqp, Tkp, DK, DV, R, KB, VW (DV vectors), VK (DK vectors),
scale2 (scale * log2 e), causal, ops, mask (whether the ``m`` operand is given).
</%doc>\
<%!
    import math

    LOG2E = 1.4426950408889634

    def field(ops, op, i):
        """Field ``i`` of operand ``op``: 0 offset, 1 batch strides, 2 row stride, 3 column stride."""
        return dict(ops)[op][i]

    def vt(w):
        return "float" if w == 1 else f"float{w}"

    def vload(w, ptr):
        return f"({ptr})[0]" if w == 1 else f"vload{w}(0, {ptr})"

    def vstore(w, val, ptr):
        return f"({ptr})[0] = {val}" if w == 1 else f"vstore{w}({val}, 0, {ptr})"
%>\
<%
    B = math.prod(bshape)

    def boff(op):
        """The element offset of batch entry zyx_b in operand ``op``."""
        off, bs = field(ops, op, 0), field(ops, op, 1)
        terms, inner = [str(off)] if off else [], 1
        for size, st in reversed(list(zip(bshape, bs))):
            if size > 1 and st:
                idx = "zyx_b" if size == B else f"(zyx_b / {inner})" if inner * size == B else \
                      f"(zyx_b % {size})" if inner == 1 else f"((zyx_b / {inner}) % {size})"
                terms.append(f"(long){idx} * {st}")
            inner *= size
        return " + ".join(terms) or "0"

    def rs(op):
        return field(ops, op, 2)

    def cs(op):
        return field(ops, op, 3)

    KT = vt(KB)
    NV = DV // VW
    NK = DK // VK
    lanes = "(int" + str(KB) + ")(" + ", ".join(str(i) for i in range(KB)) + ")"
%>\
/* zyx ${name}: attention ${kind}, batch ${'x'.join(map(str, bshape)) or '1'}, Tq ${Tq}, Tk ${Tk}, head dims ${DK}/${DV}${', causal' if causal else ''}${', masked' if mask else ''}; ${R} rows a work item, ${KB}-lane blocks */
% for fn, op in (("hmax", "max({a}.lo, {a}.hi)"), ("hsum", "{a}.lo + {a}.hi")):
inline float zyx_${fn}(${KT} zyx_v${KB}) {
%   for w in [x for x in (8, 4, 2, 1) if x < KB]:
    const ${vt(w)} zyx_v${w} = ${op.format(a="zyx_v" + str(2 * w))};
%   endfor
    return zyx_v1;
}
% endfor
<%def name="scores(r, qop, ktop, dim, row)">\
## the KB-lane dot products of row ${row} of ${qop} with the block's columns of ${ktop} (d-major, padded)
            {
                __global const float *zyx_qr = zyx_${qop}b + (long)${row} * ${field(ops, qop, 2)};
                __global const float *zyx_kc = zyx_${ktop}b + zyx_j0;
                for (int zyx_d = 0; zyx_d < ${dim}; ++zyx_d)
                    zyx_s${r} = fma((${vt(KB)})(zyx_qr[zyx_d * ${field(ops, qop, 3)}]), ${vload(KB, 'zyx_kc + (long)zyx_d * ' + str(field(ops, ktop, 2)))}, zyx_s${r});
            }
</%def>\
<%def name="masked(r, qi, kj, qlane)">\
## zyx_s${r} scaled to base 2, the mask added, dead lanes -inf (query ${qi}, key ${kj}: one is a lane vector)
            zyx_s${r} *= ${repr(scale2)}f;
% if mask:
            {
                float zyx_mv[${KB}];
                for (int zyx_l = 0; zyx_l < ${KB}; ++zyx_l) {
%   if qlane:
                    const int zyx_i = zyx_j0 + zyx_l;
                    zyx_mv[zyx_l] = zyx_i < ${Tq} ? zyx_mb[(long)zyx_i * ${field(ops, 'm', 2)} + (long)${kj} * ${field(ops, 'm', 3)}] : 0.0f;
%   else:
                    const int zyx_j = zyx_j0 + zyx_l;
                    zyx_mv[zyx_l] = zyx_j < ${Tk} ? zyx_mb[(long)${qi} * ${field(ops, 'm', 2)} + (long)zyx_j * ${field(ops, 'm', 3)}] : 0.0f;
%   endif
                }
                zyx_s${r} = fma(vload${KB}(0, zyx_mv), (${vt(KB)})(${repr(LOG2E)}f), zyx_s${r});
            }
% endif
% if qlane:
            zyx_s${r} = select(zyx_s${r}, (${vt(KB)})(-INFINITY), (zyx_lane + zyx_j0 >= ${Tq})${f" | (zyx_lane + zyx_j0 < {kj})" if causal else ""});
% else:
            zyx_s${r} = select(zyx_s${r}, (${vt(KB)})(-INFINITY), (zyx_lane + zyx_j0 >= ${Tk})${f" | (zyx_lane + zyx_j0 > {qi})" if causal else ""});
% endif
</%def>\
% if kind == "fwd":
__kernel void ${name}(__global float *restrict zyx_out, __global const float *restrict zyx_q,
                      __global const float *restrict zyx_kt, __global const float *restrict zyx_v${", __global const float *restrict zyx_m" if mask else ""})
{
    const int zyx_i0 = (int)get_global_id(0) * ${R};
    const int zyx_b = (int)get_global_id(1);
    const ${vt(KB).replace("float", "int")} zyx_lane = ${lanes};
    __global const float *zyx_qb = zyx_q + ${boff('q')};
    __global const float *zyx_ktb = zyx_kt + ${boff('kt')};
    __global const float *zyx_vb = zyx_v + ${boff('v')};
%   if mask:
    __global const float *zyx_mb = zyx_m + ${boff('m')};
%   endif
%   for r in range(R):
    const int zyx_row${r} = min(zyx_i0 + ${r}, ${Tq - 1});
    float zyx_m${r} = -INFINITY, zyx_l${r} = 0.0f;
%     for c in range(NV):
    ${vt(VW)} zyx_a${r}_${c} = (${vt(VW)})(0.0f);
%     endfor
%   endfor
    const int zyx_end = ${f"min({Tk}, zyx_i0 + {R})" if causal else Tk};
    float zyx_p[${R}][${KB}];
    for (int zyx_j0 = 0; zyx_j0 < zyx_end; zyx_j0 += ${KB}) {
%   for r in range(R):
        {
            ${KT} zyx_s${r} = (${KT})(0.0f);
${scores(r, 'q', 'kt', DK, 'zyx_row' + str(r))}\
${masked(r, 'zyx_row' + str(r), None, False)}\
            const float zyx_mx = max(zyx_m${r}, zyx_hmax(zyx_s${r}));
            const float zyx_mu = zyx_mx == -INFINITY ? 0.0f : zyx_mx;  /* no live key yet: nothing to shift */
            const float zyx_alpha = exp2(zyx_m${r} - zyx_mu);
            const ${KT} zyx_e = exp2(zyx_s${r} - zyx_mu);
            zyx_l${r} = fma(zyx_l${r}, zyx_alpha, zyx_hsum(zyx_e));
            zyx_m${r} = zyx_mx;
%     for c in range(NV):
            zyx_a${r}_${c} *= zyx_alpha;
%     endfor
            vstore${KB}(zyx_e, 0, zyx_p[${r}]);
        }
%   endfor
        const int zyx_n = min(${KB}, zyx_end - zyx_j0);
        for (int zyx_jj = 0; zyx_jj < zyx_n; ++zyx_jj) {
            __global const float *zyx_vr = zyx_vb + (long)(zyx_j0 + zyx_jj) * ${rs('v')};
%   for c in range(NV):
            const ${vt(VW)} zyx_v${c} = ${vload(VW, f"zyx_vr + {c * VW}")};
%   endfor
%   for r in range(R):
%     for c in range(NV):
            zyx_a${r}_${c} = fma((${vt(VW)})(zyx_p[${r}][zyx_jj]), zyx_v${c}, zyx_a${r}_${c});
%     endfor
%   endfor
        }
    }
%   for r in range(R):
    if (zyx_i0 + ${r} < ${Tq}) {
        const float zyx_inv = zyx_l${r} > 0.0f ? 1.0f / zyx_l${r} : 0.0f;
        __global float *zyx_o = zyx_out + ((long)zyx_b * ${Tq} + zyx_i0 + ${r}) * ${DV};
%     for c in range(NV):
        ${vstore(VW, f"zyx_a{r}_{c} * zyx_inv", f"zyx_o + {c * VW}")};
%     endfor
        zyx_out[${B * Tq * DV} + (long)zyx_b * ${Tqp} + zyx_i0 + ${r}] = zyx_l${r} > 0.0f ? zyx_m${r} + log2(zyx_l${r}) : INFINITY;
    }
%   endfor
    if (zyx_i0 + ${R} >= ${Tq})  /* the last work item of the batch entry zeroes the padding columns */
        for (int zyx_i = ${Tq}; zyx_i < ${Tqp}; ++zyx_i)
            zyx_out[${B * Tq * DV} + (long)zyx_b * ${Tqp} + zyx_i] = 0.0f;
}
% elif kind == "dq":
__kernel void ${name}(__global float *restrict zyx_out, __global const float *restrict zyx_q,
                      __global const float *restrict zyx_kt, __global const float *restrict zyx_k,
                      __global const float *restrict zyx_vt, __global const float *restrict zyx_g,
                      __global const float *restrict zyx_lse, __global const float *restrict zyx_dl${", __global const float *restrict zyx_m" if mask else ""})
{
    const int zyx_i0 = (int)get_global_id(0) * ${R};
    const int zyx_b = (int)get_global_id(1);
    const ${vt(KB).replace("float", "int")} zyx_lane = ${lanes};
    __global const float *zyx_qb = zyx_q + ${boff('q')};
    __global const float *zyx_ktb = zyx_kt + ${boff('kt')};
    __global const float *zyx_kb = zyx_k + ${boff('k')};
    __global const float *zyx_vtb = zyx_vt + ${boff('vt')};
    __global const float *zyx_gb = zyx_g + ${boff('g')};
    __global const float *zyx_lseb = zyx_lse + ${boff('lse')};
    __global const float *zyx_dlb = zyx_dl + ${boff('dl')};
%   if mask:
    __global const float *zyx_mb = zyx_m + ${boff('m')};
%   endif
%   for r in range(R):
    const int zyx_row${r} = min(zyx_i0 + ${r}, ${Tq - 1});
    const float zyx_lse${r} = zyx_lseb[zyx_row${r} * ${cs('lse')}];
    const float zyx_dl${r} = zyx_dlb[zyx_row${r} * ${cs('dl')}];
%     for c in range(NK):
    ${vt(VK)} zyx_a${r}_${c} = (${vt(VK)})(0.0f);
%     endfor
%   endfor
    const int zyx_end = ${f"min({Tk}, zyx_i0 + {R})" if causal else Tk};
    float zyx_p[${R}][${KB}];
    for (int zyx_j0 = 0; zyx_j0 < zyx_end; zyx_j0 += ${KB}) {
%   for r in range(R):
        {
            ${KT} zyx_s${r} = (${KT})(0.0f);
${scores(r, 'q', 'kt', DK, 'zyx_row' + str(r))}\
${masked(r, 'zyx_row' + str(r), None, False)}\
            ${KT} zyx_dp = (${KT})(0.0f);
            {
                __global const float *zyx_gr = zyx_gb + (long)zyx_row${r} * ${rs('g')};
                __global const float *zyx_vc = zyx_vtb + zyx_j0;
                for (int zyx_d = 0; zyx_d < ${DV}; ++zyx_d)
                    zyx_dp = fma((${KT})(zyx_gr[zyx_d * ${cs('g')}]), ${vload(KB, "zyx_vc + (long)zyx_d * " + str(rs('vt')))}, zyx_dp);
            }
            const ${KT} zyx_e = exp2(zyx_s${r} - zyx_lse${r});
            vstore${KB}(select(zyx_e * (zyx_dp - zyx_dl${r}), (${KT})(0.0f), isequal(zyx_s${r}, (${KT})(-INFINITY))), 0, zyx_p[${r}]);
        }
%   endfor
        const int zyx_n = min(${KB}, zyx_end - zyx_j0);
        for (int zyx_jj = 0; zyx_jj < zyx_n; ++zyx_jj) {
            __global const float *zyx_kr = zyx_kb + (long)(zyx_j0 + zyx_jj) * ${rs('k')};
%   for c in range(NK):
            const ${vt(VK)} zyx_k${c} = ${vload(VK, f"zyx_kr + {c * VK}")};
%   endfor
%   for r in range(R):
%     for c in range(NK):
            zyx_a${r}_${c} = fma((${vt(VK)})(zyx_p[${r}][zyx_jj]), zyx_k${c}, zyx_a${r}_${c});
%     endfor
%   endfor
        }
    }
%   for r in range(R):
    if (zyx_i0 + ${r} < ${Tq}) {
        __global float *zyx_o = zyx_out + ((long)zyx_b * ${Tq} + zyx_i0 + ${r}) * ${DK};
%     for c in range(NK):
        ${vstore(VK, f"zyx_a{r}_{c} * {repr(scale2 / LOG2E)}f", f"zyx_o + {c * VK}")};
%     endfor
    }
%   endfor
}
% else:
__kernel void ${name}(__global float *restrict zyx_out, __global const float *restrict zyx_qt,
                      __global const float *restrict zyx_q, __global const float *restrict zyx_k,
                      __global const float *restrict zyx_v, __global const float *restrict zyx_gt,
                      __global const float *restrict zyx_g, __global const float *restrict zyx_lse,
                      __global const float *restrict zyx_dl${", __global const float *restrict zyx_m" if mask else ""})
{
    const int zyx_t0 = (int)get_global_id(0) * ${R};
    const int zyx_b = (int)get_global_id(1);
    const ${vt(KB).replace("float", "int")} zyx_lane = ${lanes};
    __global const float *zyx_qtb = zyx_qt + ${boff('qt')};
    __global const float *zyx_qb = zyx_q + ${boff('q')};
    __global const float *zyx_kb = zyx_k + ${boff('k')};
    __global const float *zyx_vb = zyx_v + ${boff('v')};
    __global const float *zyx_gtb = zyx_gt + ${boff('gt')};
    __global const float *zyx_gb = zyx_g + ${boff('g')};
    __global const float *zyx_lseb = zyx_lse + ${boff('lse')};
    __global const float *zyx_dlb = zyx_dl + ${boff('dl')};
%   if mask:
    __global const float *zyx_mb = zyx_m + ${boff('m')};
%   endif
%   for r in range(R):
    const int zyx_key${r} = min(zyx_t0 + ${r}, ${Tk - 1});
%     for c in range(NK):
    ${vt(VK)} zyx_a${r}_${c} = (${vt(VK)})(0.0f);
%     endfor
%     for c in range(NV):
    ${vt(VW)} zyx_c${r}_${c} = (${vt(VW)})(0.0f);
%     endfor
%   endfor
    float zyx_p[${R}][${KB}];
    float zyx_ds[${R}][${KB}];
    for (int zyx_j0 = ${f"zyx_t0 / {KB} * {KB}" if causal else 0}; zyx_j0 < ${Tq}; zyx_j0 += ${KB}) {
        const ${KT} zyx_lsev = ${vload(KB, "zyx_lseb + zyx_j0")};
        const ${KT} zyx_dlv = ${vload(KB, "zyx_dlb + zyx_j0")};
%   for r in range(R):
        {
            ${KT} zyx_s${r} = (${KT})(0.0f);
${scores(r, 'k', 'qt', DK, 'zyx_key' + str(r))}\
${masked(r, None, 'zyx_key' + str(r), True)}\
            ${KT} zyx_dp = (${KT})(0.0f);
            {
                __global const float *zyx_vr = zyx_vb + (long)zyx_key${r} * ${rs('v')};
                __global const float *zyx_gc = zyx_gtb + zyx_j0;
                for (int zyx_d = 0; zyx_d < ${DV}; ++zyx_d)
                    zyx_dp = fma((${KT})(zyx_vr[zyx_d * ${cs('v')}]), ${vload(KB, "zyx_gc + (long)zyx_d * " + str(rs('gt')))}, zyx_dp);
            }
            const ${vt(KB).replace("float", "int")} zyx_dead = isequal(zyx_s${r}, (${KT})(-INFINITY));
            const ${KT} zyx_e = select(exp2(zyx_s${r} - zyx_lsev), (${KT})(0.0f), zyx_dead);
            vstore${KB}(zyx_e, 0, zyx_p[${r}]);
            vstore${KB}(select(zyx_e * (zyx_dp - zyx_dlv), (${KT})(0.0f), zyx_dead), 0, zyx_ds[${r}]);
        }
%   endfor
        const int zyx_n = min(${KB}, ${Tq} - zyx_j0);
        for (int zyx_ii = 0; zyx_ii < zyx_n; ++zyx_ii) {
            __global const float *zyx_qr = zyx_qb + (long)(zyx_j0 + zyx_ii) * ${rs('q')};
            __global const float *zyx_gr = zyx_gb + (long)(zyx_j0 + zyx_ii) * ${rs('g')};
%   for c in range(NK):
            const ${vt(VK)} zyx_q${c} = ${vload(VK, f"zyx_qr + {c * VK}")};
%   endfor
%   for c in range(NV):
            const ${vt(VW)} zyx_g${c} = ${vload(VW, f"zyx_gr + {c * VW}")};
%   endfor
%   for r in range(R):
%     for c in range(NK):
            zyx_a${r}_${c} = fma((${vt(VK)})(zyx_ds[${r}][zyx_ii]), zyx_q${c}, zyx_a${r}_${c});
%     endfor
%     for c in range(NV):
            zyx_c${r}_${c} = fma((${vt(VW)})(zyx_p[${r}][zyx_ii]), zyx_g${c}, zyx_c${r}_${c});
%     endfor
%   endfor
        }
    }
%   for r in range(R):
    if (zyx_t0 + ${r} < ${Tk}) {
        __global float *zyx_o = zyx_out + ((long)zyx_b * ${Tk} + zyx_t0 + ${r}) * ${DK};
%     for c in range(NK):
        ${vstore(VK, f"zyx_a{r}_{c} * {repr(scale2 / LOG2E)}f", f"zyx_o + {c * VK}")};
%     endfor
        __global float *zyx_w = zyx_out + ${B * Tk * DK} + ((long)zyx_b * ${Tk} + zyx_t0 + ${r}) * ${DV};
%     for c in range(NV):
        ${vstore(VW, f"zyx_c{r}_{c}", f"zyx_w + {c * VW}")};
%     endfor
    }
%   endfor
}
% endif
