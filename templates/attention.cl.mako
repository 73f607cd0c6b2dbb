<%doc>
Attention without the T x T matrix, for CPUs (zyx.kernels.attention): float32, work-groups of one,
explicit vectors. Three kernels (``kind``):

* ``fwd``: a work item owns R query rows of one batch entry; it walks the keys KB at a time (scores
  as one KB-lane vector per row, from the blocked keys kt), keeps the running max m and the sum l (a
  vector, summed at the end) per row and R x DV output accumulators, rescaled when m grows. Writes out
  (B, Tq, DV), then lse (B, Tqp): m + log(l), +inf for a row with no live key (its output is 0), 0 in
  the padding columns.
* ``dq``: a work item owns R query rows; per key block it recomputes p = exp(s - lse) from q, kt and
  lse, dp = dO . v from vt (blocked values), ds = p * (dp - delta), and accumulates dq += ds * k over
  the block's key rows. Writes dq (B, Tq, DK), scaled.
* ``dkdv``: a work item owns R key rows; per query block (qt and gt: blocked queries and output
  gradient; lse and delta padded) the same p and ds, transposed, then dv += p * dO and dk += ds * q
  over the block's query rows. Writes dk (B, Tk, DK) then dv (B, Tk, DV).

Operands (``ops``): name -> (offset, batch strides, row stride, column stride) in elements over the
batch shape ``bshape`` (B = its product); a vector load along a row needs column stride 1 (the
launcher makes it so). The blocked copies (kt, vt, qt, gt: rows padded to whole blocks of KB, each
block stored d-major as D x KB, so a block's columns are one contiguous stream) give (offset, batch
strides, d stride, block stride) instead. Causal: query i sees keys j <= i (top-left aligned,
PyTorch's). A lane or row outside the problem is masked by selects, so padding and garbage never reach
a stored value.
Parameters: name, kind, bshape, Tq, Tk, Tqp, Tkp, DK, DV, R, KB, VW (DV vectors), VK (DK vectors),
scale, causal, ops, mask (whether the ``m`` operand is given).
</%doc>\
<%namespace name="fm" file="/common/math.mako"/>\
<%!
    import math

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
${fm.exp_fn("float")}
${fm.exp_fn(vt(KB))}
## horizontal max and sum by halves, each half loaded through a pointer rather than swizzled (.lo, .hi):
## the same shuffles on PoCL, but Oclgrind's -O0 build of a swizzle reads undefined lanes
% for fn, op in (("hmax", "max(vload{w}(0, {a}), vload{w}(1, {a}))"), ("hsum", "vload{w}(0, {a}) + vload{w}(1, {a})")):
inline float zyx_${fn}(${KT} zyx_v${KB}) {
%   for w in [x for x in (8, 4, 2) if x < KB]:
    const ${vt(w)} zyx_v${w} = ${op.format(w=w, a="(const float *)&zyx_v" + str(2 * w))};
%   endfor
    return ${"max(zyx_v2.s0, zyx_v2.s1)" if fn == "hmax" else "zyx_v2.s0 + zyx_v2.s1"};
}
% endfor
<%def name="dots(acc, src, row, rstride, cstride, tb, tstride, bstride, dim)">\
## ${acc}<r> (KB lanes) = sum over d of row ${row}<r> of ${src} times ${tb}'s block j0 / KB (d x KB): the R
## rows in one loop (a loaded vector serves them all), two partial sums a row (FMA latency)
% for r in range(R):
        ${vt(KB)} ${acc}${r} = (${vt(KB)})(0.0f), ${acc}${r}_h = (${vt(KB)})(0.0f);
        __global const float *${acc}_r${r} = zyx_${src}b + (long)${row}${r} * ${rstride};
% endfor
        {
            __global const float *zyx_tc = ${tb} + (long)(zyx_j0 / ${KB}) * ${bstride};
            for (int zyx_d = 0; zyx_d < ${dim - 1}; zyx_d += 2) {
                const ${vt(KB)} zyx_u0 = ${vload(KB, "zyx_tc + (long)zyx_d * " + str(tstride))};
                const ${vt(KB)} zyx_u1 = ${vload(KB, "zyx_tc + (long)(zyx_d + 1) * " + str(tstride))};
% for r in range(R):
                ${acc}${r} = fma((${vt(KB)})(${acc}_r${r}[zyx_d * ${cstride}]), zyx_u0, ${acc}${r});
                ${acc}${r}_h = fma((${vt(KB)})(${acc}_r${r}[(zyx_d + 1) * ${cstride}]), zyx_u1, ${acc}${r}_h);
% endfor
            }
% if dim % 2:
            const ${vt(KB)} zyx_u0 = ${vload(KB, "zyx_tc + " + str((dim - 1) * tstride))};
%   for r in range(R):
            ${acc}${r} = fma((${vt(KB)})(${acc}_r${r}[${(dim - 1) * cstride}]), zyx_u0, ${acc}${r});
%   endfor
% endif
        }
% for r in range(R):
        ${acc}${r} += ${acc}${r}_h;
% endfor
</%def>\
<%def name="masked(r, qi, kj, qlane)">\
## zyx_s${r} scaled, the mask added, dead lanes -inf (query ${qi}, key ${kj}: one is a lane vector)
            zyx_s${r} *= ${repr(scale)}f;
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
                zyx_s${r} += vload${KB}(0, zyx_mv);
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
    float zyx_m${r} = -INFINITY;
    ${KT} zyx_l${r} = (${KT})(0.0f);
%     for c in range(NV):
    ${vt(VW)} zyx_a${r}_${c} = (${vt(VW)})(0.0f);
%     endfor
%   endfor
    const int zyx_end = ${f"min({Tk}, zyx_i0 + {R})" if causal else Tk};
    float zyx_p[${R}][${KB}];
    for (int zyx_j0 = 0; zyx_j0 < zyx_end; zyx_j0 += ${KB}) {
${dots('zyx_s', 'q', 'zyx_row', rs('q'), cs('q'), 'zyx_ktb', rs('kt'), cs('kt'), DK)}\
%   for r in range(R):
        {
${masked(r, 'zyx_row' + str(r), None, False)}\
            const float zyx_bm = zyx_hmax(zyx_s${r});
            if (zyx_bm > zyx_m${r}) {  /* the row's max grows (rarely after the first blocks): rescale */
                const float zyx_alpha = zyx_exp_float(zyx_m${r} - zyx_bm);
                zyx_l${r} *= zyx_alpha;
%     for c in range(NV):
                zyx_a${r}_${c} *= zyx_alpha;
%     endfor
                zyx_m${r} = zyx_bm;
            }
            const ${KT} zyx_e = zyx_exp_${KT}(zyx_s${r} - (zyx_m${r} == -INFINITY ? 0.0f : zyx_m${r}));
            zyx_l${r} += zyx_e;
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
        const float zyx_sum = zyx_hsum(zyx_l${r});
        const float zyx_inv = zyx_sum > 0.0f ? 1.0f / zyx_sum : 0.0f;
        __global float *zyx_o = zyx_out + ((long)zyx_b * ${Tq} + zyx_i0 + ${r}) * ${DV};
%     for c in range(NV):
        ${vstore(VW, f"zyx_a{r}_{c} * zyx_inv", f"zyx_o + {c * VW}")};
%     endfor
        zyx_out[${B * Tq * DV} + (long)zyx_b * ${Tqp} + zyx_i0 + ${r}] = zyx_sum > 0.0f ? zyx_m${r} + log(zyx_sum) : INFINITY;
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
${dots('zyx_s', 'q', 'zyx_row', rs('q'), cs('q'), 'zyx_ktb', rs('kt'), cs('kt'), DK)}\
${dots('zyx_dp', 'g', 'zyx_row', rs('g'), cs('g'), 'zyx_vtb', rs('vt'), cs('vt'), DV)}\
%   for r in range(R):
        {
${masked(r, 'zyx_row' + str(r), None, False)}\
            const ${KT} zyx_e = zyx_exp_${KT}(zyx_s${r} - zyx_lse${r});
            vstore${KB}(select(zyx_e * (zyx_dp${r} - zyx_dl${r}), (${KT})(0.0f), isequal(zyx_s${r}, (${KT})(-INFINITY))), 0, zyx_p[${r}]);
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
        ${vstore(VK, f"zyx_a{r}_{c} * {repr(scale)}f", f"zyx_o + {c * VK}")};
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
${dots('zyx_s', 'k', 'zyx_key', rs('k'), cs('k'), 'zyx_qtb', rs('qt'), cs('qt'), DK)}\
${dots('zyx_dp', 'v', 'zyx_key', rs('v'), cs('v'), 'zyx_gtb', rs('gt'), cs('gt'), DV)}\
%   for r in range(R):
        {
${masked(r, None, 'zyx_key' + str(r), True)}\
            const ${vt(KB).replace("float", "int")} zyx_dead = isequal(zyx_s${r}, (${KT})(-INFINITY));
            const ${KT} zyx_e = select(zyx_exp_${KT}(zyx_s${r} - zyx_lsev), (${KT})(0.0f), zyx_dead);
            vstore${KB}(zyx_e, 0, zyx_p[${r}]);
            vstore${KB}(select(zyx_e * (zyx_dp${r} - zyx_dlv), (${KT})(0.0f), zyx_dead), 0, zyx_ds[${r}]);
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
        ${vstore(VK, f"zyx_a{r}_{c} * {repr(scale)}f", f"zyx_o + {c * VK}")};
%     endfor
        __global float *zyx_w = zyx_out + ${B * Tk * DK} + ((long)zyx_b * ${Tk} + zyx_t0 + ${r}) * ${DV};
%     for c in range(NV):
        ${vstore(VW, f"zyx_c{r}_{c}", f"zyx_w + {c * VW}")};
%     endfor
    }
%   endfor
}
% endif
