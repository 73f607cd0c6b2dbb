<%doc>
One query position attending over a KV cache (zyx.kernels.decode_attention), the decode step of a language
model: q (B, H, D) float32 (dense), the key and value rings (R, B, KVH, D) of which rows j < n are read (n a
run-time argument), an additive mask ring (R, B) (0, or -inf for left padding), out (B, H, D). The rings and
the mask are read in place: element (j, b, h, d) of the keys at K0 + j KS[0] + b KS[1] + h KS[2] + d (V0, VS
for the values, M0, MS for the mask), so keys and values may be two halves of one ring. Query head h reads key
and value head h / (H / KVH) (grouped-query attention: the cache is never repeated per head).
A work item owns one (batch, head) and walks the n rows once with an online softmax: the running max m and
sum l, and D accumulators rescaled when m grows, so no score is stored. Rows go TB at a time: their scores
first (independent dot products a core overlaps), then one rescale; the last n % TB one at a time. A row whose
score is -inf adds nothing (the first live row sets m). D goes in vectors of VW floats (VW divides D).
Parameters: B, H, KVH, D, VW, TB, scale, K0, KS, V0, VS, M0, MS, index_t. Arguments: out, q, k, v, mask, n; one work item per (b, h),
launched over exactly B * H (no bounds test).
</%doc>\
<%
    I = index_t
    V = f"float{VW}" if VW > 1 else "float"
    load = (lambda c, p: f"vload{VW}({c}, {p})") if VW > 1 else (lambda c, p: f"{p}[{c}]")
    chunks = D // VW
    def reduce_max(terms):
        while len(terms) > 1:
            terms = [f"fmax({a}, {b})" for a, b in zip(terms[::2], terms[1::2])] + (terms[-1:] if len(terms) % 2 else [])
        return terms[0]
    def hsum(v):
        if VW == 1:
            return v
        terms = [f"{v}.s{c:x}" for c in range(VW)]
        while len(terms) > 1:  # a pairwise tree over the lanes
            terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])]
        return terms[0]
%>\
<%def name="rows(T)">\
    {  /* ${T} row(s): their scores first (independent dot products), then one rescale for all */
% for t in range(T):
        __global const float *zyx_kr${t} = zyx_k + (${K0} + (zyx_j + ${t}) * ${KS[0]} + zyx_b * ${KS[1]} + zyx_kvh * ${KS[2]});
        ${V} zyx_dot${t} = zyx_q0 * ${load(0, f"zyx_kr{t}")};
%   for c in range(1, chunks):
        zyx_dot${t} = fma(zyx_q${c}, ${load(c, f"zyx_kr{t}")}, zyx_dot${t});
%   endfor
        const float zyx_s${t} = ${hsum(f"zyx_dot{t}")} + zyx_mask[${M0} + (zyx_j + ${t}) * ${MS[0]} + zyx_b * ${MS[1]}];
% endfor
        const float zyx_sb = ${reduce_max([f"zyx_s{t}" for t in range(T)])};
        if (zyx_sb != -INFINITY) {
            const float zyx_mn = fmax(zyx_m, zyx_sb);
            const float zyx_corr = exp(zyx_m - zyx_mn);
% for t in range(T):
            const float zyx_p${t} = exp(zyx_s${t} - zyx_mn);
% endfor
            zyx_l = zyx_l * zyx_corr + ${" + ".join(f"zyx_p{t}" for t in range(T))};
            zyx_m = zyx_mn;
% for t in range(T):
            __global const float *zyx_vr${t} = zyx_v + (${V0} + (zyx_j + ${t}) * ${VS[0]} + zyx_b * ${VS[1]} + zyx_kvh * ${VS[2]});
% endfor
% for c in range(chunks):
            zyx_acc${c} *= zyx_corr;
%   for t in range(T):
            zyx_acc${c} = fma((${V})zyx_p${t}, ${load(c, f"zyx_vr{t}")}, zyx_acc${c});
%   endfor
% endfor
        }
    }
</%def>\
/* zyx decode attention: (${B}, ${H}, ${D}) over rings of (R, ${B}, ${KVH}, ${D}), ${V} vectors */
__kernel void zyx_decode_attention(__global float *restrict zyx_out, __global const float *restrict zyx_q,
                                   __global const float *restrict zyx_k, __global const float *restrict zyx_v,
                                   __global const float *restrict zyx_mask, const ${I} zyx_n)
{
    const ${I} zyx_bh = get_global_id(0);
    const ${I} zyx_b = zyx_bh / ${H};
    const ${I} zyx_kvh = zyx_bh % ${H} / ${H // KVH};
    __global const float *zyx_qr = zyx_q + zyx_bh * ${D};
% for c in range(chunks):
    const ${V} zyx_q${c} = ${load(c, "zyx_qr")} * ${repr(float(scale))}f;
    ${V} zyx_acc${c} = 0.0f;
% endfor
    float zyx_m = -INFINITY;
    float zyx_l = 0.0f;
    ${I} zyx_j = 0;
    for (; zyx_j + ${TB} <= zyx_n; zyx_j += ${TB})
${rows(TB)}\
    for (; zyx_j < zyx_n; zyx_j++)
${rows(1)}\
    const float zyx_inv = 1.0f / zyx_l;
    __global float *zyx_o = zyx_out + zyx_bh * ${D};
% for c in range(chunks):
%   if VW > 1:
    vstore${VW}(zyx_acc${c} * zyx_inv, ${c}, zyx_o);
%   else:
    zyx_o[${c}] = zyx_acc${c} * zyx_inv;
%   endif
% endfor
}
