<%doc>
x @ W^T with W in GGUF blocks (zyx.kernels.quantized_matmul): out (M, N) float32 from x (M, K) float32 and W's N
rows of K / block blocks each (uchar). Row n of W is read once for `mt` rows of x (t * mt ...), so a decode step
(M = 1) reads every weight byte once and a prefill reuses each dequantized block over `mt` rows: by work item
(n, t) alone (`lanes` = 1, CPUs), or by a work-group of `lanes` work items taking every `lanes`-th block
(neighbours read neighbouring blocks: GPUs), their sums added in local memory. The last tile of x rows may hang
past M: its missing rows read row M - 1 and are not stored. W may come in several `parts` (buffers w0, w1, ...
of parts[i] rows: the Q, K and V projections of one input in one launch), their rows numbered one after another
into out's N = sum(parts) columns. Q8_0, Q4_0 and Q4_K expand a block into float16 vectors and keep one vector
accumulator per x row (their float16 scales read by vload_half: blocks start at even bytes; subtracting Q4_0's 8
on the bytes, before the conversion); the other types take the element values of gguf/blocks.mako one by one.
Parameters: qtype, block, type_size, K, parts, mt, lanes (1 or a power of two), index_t. Arguments: out, x, w0,
w1, ..., M; launched over exactly (N * lanes, ceil(M / mt)) work items in work-groups of `lanes` along axis 0
(no bounds test).
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%namespace name="bk" file="/gguf/blocks.mako"/>\
<%! from zyx import dtype as dtypes %>\
<%
    I = index_t
    N = sum(parts)
    starts = [sum(parts[:i]) for i in range(len(parts))]
    nb = K // block
    row_bytes = nb * type_size
    fast = qtype in ("Q8_0", "Q4_0", "Q4_K")
%>\
/* zyx quantized matmul ${qtype}: (M, ${K}) x (${" + ".join(map(str, parts))}, ${K})^T, ${mt} x row(s) a work item */
${dt.preamble([dtypes.float16])}
__kernel void zyx_qmatmul(__global float *restrict zyx_out, __global const float *restrict zyx_x,
                          ${"".join(f"__global const uchar *restrict zyx_w{i}, " for i in range(len(parts)))}const ${I} zyx_m)
{
% if lanes > 1:
    const ${I} zyx_n = get_group_id(0);
    const int zyx_lane = get_local_id(0);
    __local float zyx_red[${mt * lanes}];
% else:
    const ${I} zyx_n = get_global_id(0);
% endif
    const ${I} zyx_m0 = (${I})get_global_id(1) * ${mt};
% if len(parts) == 1:
    __global const uchar *zyx_row = zyx_w0 + zyx_n * ${row_bytes};
% else:
    __global const uchar *zyx_row = ${" : ".join([f"zyx_n < {starts[i + 1]} ? zyx_w{i} + (zyx_n - {starts[i]}) * {row_bytes}" for i in range(len(parts) - 1)] + [f"zyx_w{len(parts) - 1} + (zyx_n - {starts[-1]}) * {row_bytes}"])};
% endif
% for r in range(mt):
    __global const float *zyx_xr${r} = zyx_x + ${"zyx_m0" if r == 0 else f"min(zyx_m0 + {r}, zyx_m - 1)"} * ${K};  /* rows past M: read row M - 1, never stored */
% endfor
% for r in range(mt):
    ${"float16" if fast else "float"} zyx_acc${r} = 0.0f;
% endfor
    for (int zyx_k = ${"zyx_lane" if lanes > 1 else "0"}; zyx_k < ${nb}; zyx_k += ${lanes}) {
        __global const uchar *zyx_b = zyx_row + zyx_k * ${type_size};
% for r in range(mt):
        __global const float *zyx_xb${r} = zyx_xr${r} + zyx_k * ${block};
% endfor
% if qtype == "Q8_0":
        const float zyx_d = vload_half(0, (__global const half *)zyx_b);
        const float16 zyx_q0 = convert_float16(as_char16(vload16(0, zyx_b + 2)));
        const float16 zyx_q1 = convert_float16(as_char16(vload16(0, zyx_b + 18)));
%   for r in range(mt):
        zyx_acc${r} += zyx_d * (zyx_q0 * vload16(0, zyx_xb${r}) + zyx_q1 * vload16(0, zyx_xb${r} + ${16}));
%   endfor
% elif qtype == "Q4_0":
        const float zyx_d = vload_half(0, (__global const half *)zyx_b);
        const uchar16 zyx_q = vload16(0, zyx_b + 2);
        const float16 zyx_lo = convert_float16(as_char16(zyx_q & (uchar)15) - (char)8);
        const float16 zyx_hi = convert_float16(as_char16(zyx_q >> (uchar)4) - (char)8);
%   for r in range(mt):
        zyx_acc${r} += zyx_d * (zyx_lo * vload16(0, zyx_xb${r}) + zyx_hi * vload16(0, zyx_xb${r} + ${16}));
%   endfor
% elif qtype == "Q4_K":
        const float zyx_d = vload_half(0, (__global const half *)zyx_b);
        const float zyx_dmin = vload_half(1, (__global const half *)zyx_b);
        __global const uchar *zyx_sc = zyx_b + 4;
%   for c in range(4):
        {
            const float zyx_d0 = zyx_d * (float)${bk.k4_scale("zyx_sc", str(2 * c))};
            const float zyx_d1 = zyx_d * (float)${bk.k4_scale("zyx_sc", str(2 * c + 1))};
            const float zyx_n0 = zyx_dmin * (float)${bk.k4_min("zyx_sc", str(2 * c))};
            const float zyx_n1 = zyx_dmin * (float)${bk.k4_min("zyx_sc", str(2 * c + 1))};
            const uchar16 zyx_qa = vload16(0, zyx_b + ${16 + 32 * c});
            const uchar16 zyx_qb = vload16(0, zyx_b + ${32 + 32 * c});
            const float16 zyx_la = convert_float16(zyx_qa & (uchar)15), zyx_lb = convert_float16(zyx_qb & (uchar)15);
            const float16 zyx_ha = convert_float16(zyx_qa >> (uchar)4), zyx_hb = convert_float16(zyx_qb >> (uchar)4);
%     for r in range(mt):
            {
                const float16 zyx_x0 = vload16(0, zyx_xb${r} + ${64 * c});
                const float16 zyx_x1 = vload16(0, zyx_xb${r} + ${64 * c + 16});
                const float16 zyx_x2 = vload16(0, zyx_xb${r} + ${64 * c + 32});
                const float16 zyx_x3 = vload16(0, zyx_xb${r} + ${64 * c + 48});
                zyx_acc${r} += zyx_d0 * (zyx_la * zyx_x0 + zyx_lb * zyx_x1) + zyx_d1 * (zyx_ha * zyx_x2 + zyx_hb * zyx_x3)
                               - zyx_n0 * (zyx_x0 + zyx_x1) - zyx_n1 * (zyx_x2 + zyx_x3);
            }
%     endfor
        }
%   endfor
% else:
${bk.setup(qtype, "zyx_b")}\
        for (int zyx_j = 0; zyx_j < ${block}; zyx_j++) {
            const float zyx_v = ${bk.value(qtype, "zyx_b", "zyx_j")};
%   for r in range(mt):
            zyx_acc${r} += zyx_v * zyx_xb${r}[zyx_j];
%   endfor
        }
% endif
    }
% for r in range(mt):
<%  acc = f"zyx_acc{r}" %>\
%   if fast:
<%
    terms = [f"{acc}.s{c:x}" for c in range(16)]
    while len(terms) > 1:  # a pairwise tree over the lanes (.lo / .hi halves read as uninitialized to Oclgrind)
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])]
%>\
    const float zyx_sum${r} = ${terms[0]};
%   else:
    const float zyx_sum${r} = ${acc};
%   endif
% endfor
% if lanes > 1:
% for r in range(mt):
    zyx_red[${r * lanes} + zyx_lane] = zyx_sum${r};
% endfor
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int zyx_s = ${lanes // 2}; zyx_s > 0; zyx_s >>= 1) {
        if (zyx_lane < zyx_s) {
% for r in range(mt):
            zyx_red[${r * lanes} + zyx_lane] += zyx_red[${r * lanes} + zyx_lane + zyx_s];
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (zyx_lane == 0) {
% for r in range(mt):
%   if r:
        if (zyx_m0 + ${r} < zyx_m)
%   endif
        zyx_out[(zyx_m0 + ${r}) * ${N} + zyx_n] = zyx_red[${r * lanes}];
% endfor
    }
% else:
% for r in range(mt):
%   if r:
    if (zyx_m0 + ${r} < zyx_m)
%   endif
    zyx_out[(zyx_m0 + ${r}) * ${N} + zyx_n] = zyx_sum${r};
% endfor
% endif
}
