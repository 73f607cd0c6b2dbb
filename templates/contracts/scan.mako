<%doc>
The scan body shared by cumprod, logcumsumexp and cummax/cummin: an inclusive scan along
one axis with an associative operator. Each of those contracts' templates (its
`entry_point`) inherits this file and defines, at module level:
  indexed           whether the scan carries an int64 index with each value (cummax/cummin)
  identity(p)       an `acc` expression no element is hurt by being combined after
  combine(p, a, b)  (indexed = False) the `acc` expression "a, then b"
  better(p, a, b)   (indexed = True) whether the later value b replaces the earlier a
and a def helpers() for any OpenCL functions those expressions call; `p` is the dict of
render parameters below. A template may also set `run_fold = True` and define
  fold_init(p, m, s, start)  statements: a run state (m, s) worth the `acc` value `start`
  fold_step(p, m, s, x)      statement: fold x into the run state
  fold_value(p, m, s)        the `acc` value of the run state (also on 16-wide vectors)
  fold_run(p, xs, cnt, items, m, s, ws, keep)
                             statements: fold the private array xs[0 .. cnt) (items long, defined
                             past cnt) into (m, s) using the scratch array ws; keep = (ms, ss):
                             store each element's state there too (used when items % 16 == 0)
to fold each work-item's own elements in that state instead of through combine (logcumsumexp:
a running max and a sum scaled by it, one exp an element and no log in the dependency chain);
combine still joins work-items, blocks and carries.

The input is (outer, dim_size, inner); a lane is one (outer, inner) pair, lane element j
sits at (lane / inner) * dim_size * inner + j * inner + lane % inner. The strategies and
the work split are cumsum's (cumsum.cl.mako; zyx/kernels/contracts/scan.py picks them):
strategy "lanes": zyx_<name>_lanes, one work-item per `lv` neighbouring lanes (lv > 1
  only when strided and lv divides inner) folding them in order.
strategy "blocks" (each lane cut into `chunks` >= 2 blocks of wg * items):
  zyx_<name>_partials  work-group (block, lane): each work-item folds its `items`
                       consecutive elements in order, the work-group scans those
                       (Hillis-Steele in local memory) and stores the block total.
  (host)               the (lanes, chunks) block totals are scanned by this same kernel
                       family (`carry`: the values are `acc`, and indexed scans read each
                       total's index from zyx_in_idx), giving each block's carry-in.
  zyx_<name>_scan      redoes the work-group scan, starts from the block's carry-in and
                       the work-items before it, folds its elements again and stores each
                       running value (rounded once to out_dtype) and index.
The order of the operations is fixed by the sizes and tunables, never by scheduling: the
same input gives the same bits on every run on one device.

Parameters: name (the kernel name prefix), dtype (input storage), out_dtype, acc (the
OpenCL type values are folded in), op (max or min for cummax/cummin, else the name),
float_acc (acc is a float type),
strategy, strided (inner > 1), carry, wg, items, lv, index_t.
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%
    S, O, I = dtype.cl_storage, out_dtype.cl_storage, index_t
    K = "zyx_" + name
    indexed = self.attr.indexed
    run_fold = getattr(self.attr, "run_fold", False) and not indexed
    p = dict(acc=acc, op=op, float_acc=float_acc)
    IDENT = self.attr.identity(p)
    sizes = f"const {I} zyx_dim, const {I} zyx_inner"
    def at(lane, j):
        if not strided:
            return f"{lane} * zyx_dim + {j}"
        return f"({lane} / zyx_inner) * zyx_dim * zyx_inner + {j} * zyx_inner + {lane} % zyx_inner"
    def step(rv, ri, xv, xi):
        """Statement: fold the later (xv, xi) into the running (rv, ri)."""
        if indexed:
            return f"if ({self.attr.better(p, rv, xv)}) {{ {rv} = {xv}; {ri} = {xi}; }}"
        return f"{rv} = {self.attr.combine(p, rv, xv)};"
    def index_of(at_expr, j):
        return f"zyx_in_idx[{at_expr}]" if carry else f"(long){j}"
    idx_out = "__global long *restrict zyx_out_idx, " if indexed else ""
    idx_in = "__global const long *restrict zyx_in_idx, " if indexed and carry else ""
%>\
/* zyx contract kernel ${name} (${strategy}): ${dtype.name} -> ${out_dtype.name} folded in ${acc}${", with indices" if indexed else ""}, ${"strided" if strided else "contiguous"} lanes${f", blocks of {wg} x {items}" if strategy == "blocks" else ""} */
${dt.preamble([dtype])}
${self.helpers()}
% if strategy == "lanes":
__kernel void ${K}_lanes(__global ${O} *restrict zyx_out, ${idx_out}__global const ${S} *restrict zyx_in,
                         ${idx_in}${sizes}, const ${I} zyx_lanes)
{
    /* lanes lane0 .. lane0 + ${lv - 1}: neighbours in memory (${lv} divides inner) */
    const ${I} zyx_lane0 = (${I})get_global_id(0) * ${lv};
    if (zyx_lane0 >= zyx_lanes) return;
    ${acc} zyx_v[${lv}];
%   if indexed:
    long zyx_i[${lv}];
%   endif
    for (int zyx_q = 0; zyx_q < ${lv}; ++zyx_q) {
        zyx_v[zyx_q] = ${IDENT};
%   if indexed:
        zyx_i[zyx_q] = -1;
%   endif
    }
%   if run_fold:
    ${acc} zyx_m[${lv}], zyx_s[${lv}];
    for (int zyx_q = 0; zyx_q < ${lv}; ++zyx_q) {
        ${self.attr.fold_init(p, "zyx_m[zyx_q]", "zyx_s[zyx_q]", IDENT)}
    }
%   endif
    for (${I} zyx_j = 0; zyx_j < zyx_dim; ++zyx_j) {
        const ${I} zyx_at = ${at("zyx_lane0", "zyx_j")};
        for (int zyx_q = 0; zyx_q < ${lv}; ++zyx_q) {
            const ${acc} zyx_x = ${dt.load(dtype, "zyx_in", "zyx_at + zyx_q")};
%   if run_fold:
            ${self.attr.fold_step(p, "zyx_m[zyx_q]", "zyx_s[zyx_q]", "zyx_x")}
            zyx_v[zyx_q] = ${self.attr.fold_value(p, "zyx_m[zyx_q]", "zyx_s[zyx_q]")};
%   else:
            ${step("zyx_v[zyx_q]", "zyx_i[zyx_q]", "zyx_x", index_of("zyx_at + zyx_q", "zyx_j"))}
%   endif
            ${dt.store(out_dtype, "zyx_out", "zyx_at + zyx_q", "zyx_v[zyx_q]")}
%   if indexed:
            zyx_out_idx[zyx_at + zyx_q] = zyx_i[zyx_q];
%   endif
        }
    }
}
% else:
% for kind in ("partials", "scan"):
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
%   if kind == "partials":
void ${K}_partials(__global ${acc} *restrict zyx_pv, ${"__global long *restrict zyx_pi, " if indexed else ""}__global const ${S} *restrict zyx_in,
                   ${idx_in}${sizes}, const ${I} zyx_chunks)
%   else:
void ${K}_scan(__global ${O} *restrict zyx_out, ${idx_out}__global const ${S} *restrict zyx_in, ${idx_in}
               __global const ${acc} *restrict zyx_cv, ${"__global const long *restrict zyx_ci, " if indexed else ""}${sizes}, const ${I} zyx_chunks)
%   endif
{
    __local ${acc} zyx_tv[${wg}];
%   if indexed:
    __local long zyx_ti[${wg}];
%   endif
    const ${I} zyx_lane = get_global_id(1);
    const ${I} zyx_block = get_group_id(0);
    const int zyx_t = get_local_id(0);
    const ${I} zyx_j0 = zyx_block * ${wg * items} + (${I})zyx_t * ${items};
    /* this work-item's elements j0 .. j0 + items - 1, folded in order */
    ${acc} zyx_v = ${IDENT};
    long zyx_i = -1;
%   if run_fold:
    ${acc} zyx_m, zyx_s;
    ${self.attr.fold_init(p, "zyx_m", "zyx_s", IDENT)}
%   endif
%   if run_fold and items % 16 == 0:
    /* the run loaded once into private memory and folded by fold_run, whose math runs 16 at a
       time (PoCL's scalar exp and log2 are calls, ~10 and ~30 ns an element) */
    ${acc} zyx_xs[${items}], zyx_ms[${items}], zyx_ss[${items}], zyx_ws[${items}];
    for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) {
        zyx_xs[zyx_k] = 0;  /* defined values past the end of a last partial run */
        zyx_ms[zyx_k] = 0;
        zyx_ss[zyx_k] = 1;
        zyx_ws[zyx_k] = 0;
    }
    const int zyx_cnt = zyx_j0 >= zyx_dim ? 0 : (int)min((${I})${items}, zyx_dim - zyx_j0);
    for (int zyx_k = 0; zyx_k < zyx_cnt; ++zyx_k) {
        zyx_xs[zyx_k] = ${dt.load(dtype, "zyx_in", at("zyx_lane", "(zyx_j0 + zyx_k)"))};
    }
    ${self.attr.fold_run(p, "zyx_xs", "zyx_cnt", items, "zyx_m", "zyx_s", "zyx_ws", None)}
%   else:
    for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) {
        const ${I} zyx_j = zyx_j0 + zyx_k;
        if (zyx_j >= zyx_dim) break;
        const ${I} zyx_at = ${at("zyx_lane", "zyx_j")};
        const ${acc} zyx_x = ${dt.load(dtype, "zyx_in", "zyx_at")};
%   if run_fold:
        ${self.attr.fold_step(p, "zyx_m", "zyx_s", "zyx_x")}
%   else:
        ${step("zyx_v", "zyx_i", "zyx_x", index_of("zyx_at", "zyx_j"))}
%   endif
    }
%   endif
%   if run_fold:
    zyx_v = ${self.attr.fold_value(p, "zyx_m", "zyx_s")};
%   endif
    /* inclusive Hillis-Steele scan of the work-items' totals, in local memory */
    zyx_tv[zyx_t] = zyx_v;
%   if indexed:
    zyx_ti[zyx_t] = zyx_i;
%   endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int zyx_d = 1; zyx_d < ${wg}; zyx_d <<= 1) {
        ${acc} zyx_lv = ${IDENT};
        long zyx_li = -1;
        if (zyx_t >= zyx_d) {
            zyx_lv = zyx_tv[zyx_t - zyx_d];
%   if indexed:
            zyx_li = zyx_ti[zyx_t - zyx_d];
%   endif
        }
        const ${acc} zyx_mv = zyx_tv[zyx_t];
%   if indexed:
        const long zyx_mi = zyx_ti[zyx_t];
%   endif
        barrier(CLK_LOCAL_MEM_FENCE);
        ${step("zyx_lv", "zyx_li", "zyx_mv", "zyx_mi")}
        zyx_tv[zyx_t] = zyx_lv;
%   if indexed:
        zyx_ti[zyx_t] = zyx_li;
%   endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }
%   if kind == "partials":
    if (zyx_t == ${wg - 1}) {
        zyx_pv[zyx_lane * zyx_chunks + zyx_block] = zyx_tv[zyx_t];
%     if indexed:
        zyx_pi[zyx_lane * zyx_chunks + zyx_block] = zyx_ti[zyx_t];
%     endif
    }
}

%   else:
    /* the block's carry-in, then the work-items before this one, then its own elements */
    ${acc} zyx_r = ${IDENT};
    long zyx_ri = -1;
    if (zyx_block > 0) {
        zyx_r = zyx_cv[zyx_lane * zyx_chunks + zyx_block - 1];
%     if indexed:
        zyx_ri = zyx_ci[zyx_lane * zyx_chunks + zyx_block - 1];
%     endif
    }
    if (zyx_t > 0) {
        const ${acc} zyx_pv = zyx_tv[zyx_t - 1];
        const long zyx_pi = ${"zyx_ti[zyx_t - 1]" if indexed else "-1"};
        ${step("zyx_r", "zyx_ri", "zyx_pv", "zyx_pi")}
    }
%     if run_fold:
    ${self.attr.fold_init(p, "zyx_m", "zyx_s", "zyx_r")}
%     endif
%     if run_fold and items % 16 == 0:
    /* the run again from the carry-in, keeping each element's (m, s); then fold_value 16 at a time */
    ${self.attr.fold_run(p, "zyx_xs", "zyx_cnt", items, "zyx_m", "zyx_s", "zyx_ws", ("zyx_ms", "zyx_ss"))}
    for (int zyx_k0 = 0; zyx_k0 < zyx_cnt; zyx_k0 += 16) {
        const ${acc}16 zyx_m16 = vload16(0, zyx_ms + zyx_k0), zyx_s16 = vload16(0, zyx_ss + zyx_k0);
        ${acc} zyx_vals[16];
        vstore16(${self.attr.fold_value(p, "zyx_m16", "zyx_s16")}, 0, zyx_vals);
        for (int zyx_q = 0; zyx_q < 16 && zyx_k0 + zyx_q < zyx_cnt; ++zyx_q) {
            const ${I} zyx_at = ${at("zyx_lane", "(zyx_j0 + zyx_k0 + zyx_q)")};
            ${dt.store(out_dtype, "zyx_out", "zyx_at", "zyx_vals[zyx_q]")}
        }
    }
}
%     else:
    for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) {
        const ${I} zyx_j = zyx_j0 + zyx_k;
        if (zyx_j >= zyx_dim) break;
        const ${I} zyx_at = ${at("zyx_lane", "zyx_j")};
        const ${acc} zyx_x = ${dt.load(dtype, "zyx_in", "zyx_at")};
%     if run_fold:
        ${self.attr.fold_step(p, "zyx_m", "zyx_s", "zyx_x")}
        zyx_r = ${self.attr.fold_value(p, "zyx_m", "zyx_s")};
%     else:
        ${step("zyx_r", "zyx_ri", "zyx_x", index_of("zyx_at", "zyx_j"))}
%     endif
        ${dt.store(out_dtype, "zyx_out", "zyx_at", "zyx_r")}
%     if indexed:
        zyx_out_idx[zyx_at] = zyx_ri;
%     endif
    }
}
%     endif
%   endif
% endfor
% endif
