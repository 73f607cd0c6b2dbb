<%doc>
cumsum: inclusive prefix sum along one axis, accumulated in `acc` (float for
float32/float16/bfloat16, double for float64, long for bool and every integer dtype), each
output rounded once to `out_dtype` (the input dtype for floats, int64 for integers, which
wrap as in PyTorch). The input is (outer, dim_size, inner); a lane is one (outer, inner) pair, and lane
element j sits at (lane / inner) * dim_size * inner + j * inner + lane % inner.

strategy "blocks" (a parallel scan; each lane cut into `chunks` >= 2 blocks of wg * items):
  zyx_cumsum_partials  work-group (block, lane): each work-item sums its `items`
                       consecutive elements in order, the work-group scans those sums
                       (Hillis-Steele in local memory) and stores the block total.
  (host)               the (lanes, chunks) block totals are scanned by this same kernel
                       family, giving each block's carry-in.
  zyx_cumsum_scan      recomputes the same work-group scan, adds the block's carry-in,
                       re-reads its elements and stores each running sum rounded to
                       the dtype.
strategy "lanes": zyx_cumsum_lanes, one work-item per `lv` neighbouring lanes (lv > 1
  only when strided and lv divides inner, so the lv lanes sit side by side in memory)
  scanning them in order (for many short or strided lanes). Where a work-item's elements
  are all in range they are loaded (and converted) in one unrolled pass and summed after,
  so the compiler can vectorize the loads and the 16-bit conversions, and (blocks, items a
  multiple of 4) summed as 4 sub-runs side by side, so 4 add chains overlap their latency;
  each sub-run is offset by the running total before it. Both orders are fixed by the sizes and tunables: the same input
  gives the same bits on every run on one device.

strategy "rows" (CPUs; contiguous lanes, the input stored as a C type of its own, so neither 16-bit float):
  zyx_cumsum_rows, one work-item per row, `vec` elements a step as one vector of `acc`: an
  inclusive scan inside the vector (log2(vec) shift-and-add steps), plus the running total, stored
  as one vector; the last element is the next step's running total. The rows stay contiguous
  streams (the "lanes" kernel's vector loads gather one element from each of 16 rows).

Scan kernels compile slowly (barriers), so the sizes (dim_size, inner, lanes, chunks) are
run-time arguments; the source is specialized only on the dtype and the code shape.
Parameters: dtype, out_dtype, acc, strategy, strided (inner > 1), wg, items, lv, vec, index_t.
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%
    S = dtype.cl_storage
    O = out_dtype.cl_storage
    sub = 4 if items % 4 == 0 and items >= 8 else 1  # independent add chains in a work-item's full run
    I = index_t
    sizes = f"const {I} zyx_dim, const {I} zyx_inner"
    def at(lane, j):
        if not strided:
            return f"{lane} * zyx_dim + {j}"
        return f"({lane} / zyx_inner) * zyx_dim * zyx_inner + {j} * zyx_inner + {lane} % zyx_inner"
%>\
/* zyx contract kernel cumsum (${strategy}): ${dtype.name} -> ${out_dtype.name} accumulated in ${acc}, ${"strided" if strided else "contiguous"} lanes${f", blocks of {wg} x {items}" if strategy == "blocks" else ""} */
${dt.preamble([dtype])}
% if strategy == "rows":
<%
    V = vec
    vector = f"{acc}{V}"
    mask = ("uint" if acc == "float" else "ulong") + str(V)
    load = f"vload{V}(0, zyx_src + zyx_j)" if S == acc else f"convert_{vector}(vload{V}(0, zyx_src + zyx_j))"
    shifts = [k for k in (1, 2, 4, 8) if k < V]
    last = "0123456789abcdef"[V - 1]
%>\
__kernel void zyx_cumsum_rows(__global ${O} *restrict zyx_out, __global const ${S} *restrict zyx_in,
                              ${sizes}, const ${I} zyx_lanes)
{
    const ${I} zyx_lane = get_global_id(0);
    if (zyx_lane >= zyx_lanes) return;
    __global const ${S} *zyx_src = zyx_in + zyx_lane * zyx_dim;
    __global ${O} *zyx_dst = zyx_out + zyx_lane * zyx_dim;
    const ${vector} zyx_zero = (${vector})(0);
    ${acc} zyx_run = 0;
    ${I} zyx_j = 0;
    for (; zyx_j + ${V} <= zyx_dim; zyx_j += ${V}) {
        ${vector} zyx_v = ${load};
%   for k in shifts:
        zyx_v += shuffle2(zyx_zero, zyx_v, (${mask})(${", ".join(str(V + i - k if i >= k else 0) for i in range(V))}));
%   endfor
        zyx_v += zyx_run;
        vstore${V}(zyx_v, 0, zyx_dst + zyx_j);
        zyx_run = zyx_v.s${last};
    }
    for (; zyx_j < zyx_dim; ++zyx_j) {
        zyx_run += ${dt.load(dtype, "zyx_src", "zyx_j")};
        ${dt.store(out_dtype, "zyx_dst", "zyx_j", "zyx_run")}
    }
}
% elif strategy == "lanes":
__kernel void zyx_cumsum_lanes(__global ${O} *restrict zyx_out, __global const ${S} *restrict zyx_in,
                               ${sizes}, const ${I} zyx_lanes)
{
%   if lv == 1:
    const ${I} zyx_lane = get_global_id(0);
    if (zyx_lane >= zyx_lanes) return;
    ${acc} zyx_run = 0;
    for (${I} zyx_j = 0; zyx_j < zyx_dim; ++zyx_j) {
        const ${I} zyx_at = ${at("zyx_lane", "zyx_j")};
        zyx_run += ${dt.load(dtype, "zyx_in", "zyx_at")};
        ${dt.store(out_dtype, "zyx_out", "zyx_at", "zyx_run")}
    }
%   else:
    /* lanes lane0 .. lane0 + ${lv - 1}: neighbours in memory (${lv} divides inner) */
    const ${I} zyx_lane0 = (${I})get_global_id(0) * ${lv};
    if (zyx_lane0 >= zyx_lanes) return;
    ${acc} zyx_run[${lv}];
    for (int zyx_q = 0; zyx_q < ${lv}; ++zyx_q) zyx_run[zyx_q] = 0;
    for (${I} zyx_j = 0; zyx_j < zyx_dim; ++zyx_j) {
        const ${I} zyx_at = ${at("zyx_lane0", "zyx_j")};
        for (int zyx_q = 0; zyx_q < ${lv}; ++zyx_q) zyx_run[zyx_q] += ${dt.load(dtype, "zyx_in", "zyx_at + zyx_q")};
        for (int zyx_q = 0; zyx_q < ${lv}; ++zyx_q) ${dt.store(out_dtype, "zyx_out", "zyx_at + zyx_q", "zyx_run[zyx_q]")}
    }
%   endif
}
% else:
% for kind in ("partials", "scan"):
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
%   if kind == "partials":
void zyx_cumsum_partials(__global ${acc} *restrict zyx_partials, __global const ${S} *restrict zyx_in,
                         ${sizes}, const ${I} zyx_chunks)
%   else:
void zyx_cumsum_scan(__global ${O} *restrict zyx_out, __global const ${S} *restrict zyx_in,
                     __global const ${acc} *restrict zyx_carry, ${sizes}, const ${I} zyx_chunks)
%   endif
{
    __local ${acc} zyx_tmp[${wg}];
    const ${I} zyx_lane = get_global_id(1);
    const ${I} zyx_block = get_group_id(0);
    const int zyx_t = get_local_id(0);
    const ${I} zyx_j0 = zyx_block * ${wg * items} + (${I})zyx_t * ${items};
    /* this work-item's elements j0 .. j0 + items - 1, summed in order */
    ${acc} zyx_sum = 0;
    if (zyx_j0 + ${items} <= zyx_dim) {
        ${acc} zyx_e[${items}];
        for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) zyx_e[zyx_k] = ${dt.load(dtype, "zyx_in", at("zyx_lane", "(zyx_j0 + zyx_k)"))};
%   if sub == 1:
        for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) zyx_sum += zyx_e[zyx_k];
%   else:
        ${acc} zyx_s[${sub}];
        for (int zyx_c = 0; zyx_c < ${sub}; ++zyx_c) zyx_s[zyx_c] = 0;
        for (int zyx_k = 0; zyx_k < ${items // sub}; ++zyx_k)
            for (int zyx_c = 0; zyx_c < ${sub}; ++zyx_c) zyx_s[zyx_c] += zyx_e[zyx_c * ${items // sub} + zyx_k];
        for (int zyx_c = 0; zyx_c < ${sub}; ++zyx_c) zyx_sum += zyx_s[zyx_c];
%   endif
    } else {
        for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) {
            const ${I} zyx_j = zyx_j0 + zyx_k;
            if (zyx_j >= zyx_dim) break;
            const ${I} zyx_at = ${at("zyx_lane", "zyx_j")};
            zyx_sum += ${dt.load(dtype, "zyx_in", "zyx_at")};
        }
    }
    /* inclusive Hillis-Steele scan of the work-items' sums, in local memory */
    zyx_tmp[zyx_t] = zyx_sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int zyx_d = 1; zyx_d < ${wg}; zyx_d <<= 1) {
        const ${acc} zyx_left = zyx_t >= zyx_d ? zyx_tmp[zyx_t - zyx_d] : (${acc})0;
        barrier(CLK_LOCAL_MEM_FENCE);
        zyx_tmp[zyx_t] += zyx_left;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
%   if kind == "partials":
    if (zyx_t == ${wg - 1}) zyx_partials[zyx_lane * zyx_chunks + zyx_block] = zyx_tmp[zyx_t];
}

%   else:
    ${acc} zyx_run = zyx_t > 0 ? zyx_tmp[zyx_t - 1] : (${acc})0;
    if (zyx_block > 0) zyx_run = zyx_carry[zyx_lane * zyx_chunks + zyx_block - 1] + zyx_run;
    /* the same elements again (cache-hot; nothing private lives across the barriers) */
    if (zyx_j0 + ${items} <= zyx_dim) {
        ${acc} zyx_e[${items}];
        for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) zyx_e[zyx_k] = ${dt.load(dtype, "zyx_in", at("zyx_lane", "(zyx_j0 + zyx_k)"))};
%   if sub == 1:
        for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) { zyx_run += zyx_e[zyx_k]; zyx_e[zyx_k] = zyx_run; }
%   else:
        /* ${sub} sub-runs of ${items // sub} side by side (independent add chains), then each offset by the ones before */
        ${acc} zyx_s[${sub}];
        for (int zyx_c = 0; zyx_c < ${sub}; ++zyx_c) zyx_s[zyx_c] = 0;
        for (int zyx_k = 0; zyx_k < ${items // sub}; ++zyx_k)
            for (int zyx_c = 0; zyx_c < ${sub}; ++zyx_c) {
                zyx_s[zyx_c] += zyx_e[zyx_c * ${items // sub} + zyx_k];
                zyx_e[zyx_c * ${items // sub} + zyx_k] = zyx_s[zyx_c];
            }
        for (int zyx_c = 0; zyx_c < ${sub}; ++zyx_c) {
            for (int zyx_k = 0; zyx_k < ${items // sub}; ++zyx_k) zyx_e[zyx_c * ${items // sub} + zyx_k] += zyx_run;
            zyx_run += zyx_s[zyx_c];
        }
%   endif
        for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) ${dt.store(out_dtype, "zyx_out", at("zyx_lane", "(zyx_j0 + zyx_k)"), "zyx_e[zyx_k]")}
    } else {
        for (int zyx_k = 0; zyx_k < ${items}; ++zyx_k) {
            const ${I} zyx_j = zyx_j0 + zyx_k;
            if (zyx_j >= zyx_dim) break;
            const ${I} zyx_at = ${at("zyx_lane", "zyx_j")};
            zyx_run += ${dt.load(dtype, "zyx_in", "zyx_at")};
            ${dt.store(out_dtype, "zyx_out", "zyx_at", "zyx_run")}
        }
    }
}
%   endif
% endfor
% endif
