<%doc>
One query position attending over a KV cache (zyx.kernels.decode_attention), the decode step of a language
model: q (B, H, D) float32 (dense), the key and value rings (R, B, KVH, D) of which rows j < n are read (n a
run-time argument), an additive mask ring (R, B) (0, or -inf for left padding), out (B, H, D). The rings and
the mask are read in place: element (j, b, h, d) of the keys at K0 + j KS[0] + b KS[1] + h KS[2] + d (V0, VS
for the values, M0, MS for the mask), so keys and values may be two halves of one ring. Query heads
g * G .. g * G + G - 1 (G = H / KVH) read key and value head g (grouped-query attention).
A work item owns GW of a key/value head's G query heads (GW divides G: all of them unless their vectors
would not fit the registers): it walks the n rows once, each row's key and value read once for its GW heads, with an online softmax per head (running max m, sum l, D accumulators
rescaled when m grows), so no score is stored. Rows go TB at a time: their scores first (independent dot
products a core overlaps), then one rescale per head; the last n % TB one at a time. A head whose scores are
all -inf so far adds nothing (its first live row sets m). D goes in vectors of VW floats (VW divides D).
Parameters: B, H, KVH, D, VW, TB, GW, scale, K0, KS, V0, VS, M0, MS, index_t. Arguments: out, q, k, v, mask,
n; one work item per (b, kv head, GW heads of its group), launched over exactly B * H / GW (no bounds test).
</%doc>\
<%
    I = index_t
    G = H // KVH
    GS = G // GW  # work items a key/value head
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
    {  /* ${T} row(s): every head's scores first (independent dot products), then one rescale a head */
% for t in range(T):
        __global const float *zyx_kr${t} = zyx_k + (${K0} + (zyx_j + ${t}) * ${KS[0]} + zyx_b * ${KS[1]} + zyx_kvh * ${KS[2]});
        const float zyx_mask${t} = zyx_mask[${M0} + (zyx_j + ${t}) * ${MS[0]} + zyx_b * ${MS[1]}];
%   for c in range(chunks):
        const ${V} zyx_k${t}_${c} = ${load(c, f"zyx_kr{t}")};
%   endfor
%   for g in range(GW):
        ${V} zyx_dot${g}_${t} = zyx_q${g}_0 * zyx_k${t}_0;
%     for c in range(1, chunks):
        zyx_dot${g}_${t} = fma(zyx_q${g}_${c}, zyx_k${t}_${c}, zyx_dot${g}_${t});
%     endfor
        const float zyx_s${g}_${t} = ${hsum(f"zyx_dot{g}_{t}")} + zyx_mask${t};
%   endfor
% endfor
% for g in range(GW):
        const float zyx_mn${g} = fmax(zyx_m${g}, ${reduce_max([f"zyx_s{g}_{t}" for t in range(T)])});
        const int zyx_dead${g} = zyx_mn${g} == -INFINITY;  /* no live row yet: nothing to add */
        const float zyx_corr${g} = zyx_dead${g} ? 1.0f : exp(zyx_m${g} - zyx_mn${g});
%   for t in range(T):
        const float zyx_p${g}_${t} = zyx_dead${g} ? 0.0f : exp(zyx_s${g}_${t} - zyx_mn${g});
%   endfor
        zyx_l${g} = zyx_l${g} * zyx_corr${g} + ${" + ".join(f"zyx_p{g}_{t}" for t in range(T))};
        zyx_m${g} = zyx_mn${g};
% endfor
% for t in range(T):
        __global const float *zyx_vr${t} = zyx_v + (${V0} + (zyx_j + ${t}) * ${VS[0]} + zyx_b * ${VS[1]} + zyx_kvh * ${VS[2]});
% endfor
% for c in range(chunks):
%   for g in range(GW):
        zyx_acc${g}_${c} *= zyx_corr${g};
%   endfor
%   for t in range(T):
        {
            const ${V} zyx_vv = ${load(c, f"zyx_vr{t}")};
%     for g in range(GW):
            zyx_acc${g}_${c} = fma((${V})zyx_p${g}_${t}, zyx_vv, zyx_acc${g}_${c});
%     endfor
        }
%   endfor
% endfor
    }
</%def>\
/* zyx decode attention: (${B}, ${H}, ${D}) over rings of (R, ${B}, ${KVH}, ${D}), ${GW} query head(s) a work item, ${V} vectors */
__kernel void zyx_decode_attention(__global float *restrict zyx_out, __global const float *restrict zyx_q,
                                   __global const float *restrict zyx_k, __global const float *restrict zyx_v,
                                   __global const float *restrict zyx_mask, const ${I} zyx_n)
{
    const ${I} zyx_it = get_global_id(0);  /* (b * KVH + kvh) * GS + part: query heads from it * GW on */
    const ${I} zyx_b = zyx_it / ${KVH * GS};
    const ${I} zyx_kvh = zyx_it / ${GS} % ${KVH};
    __global const float *zyx_qr = zyx_q + zyx_it * ${GW * D};
% for g in range(GW):
%   for c in range(chunks):
    const ${V} zyx_q${g}_${c} = ${load(c, f"(zyx_qr + {g * D})")} * ${repr(float(scale))}f;
    ${V} zyx_acc${g}_${c} = 0.0f;
%   endfor
    float zyx_m${g} = -INFINITY;
    float zyx_l${g} = 0.0f;
% endfor
    ${I} zyx_j = 0;
    for (; zyx_j + ${TB} <= zyx_n; zyx_j += ${TB})
${rows(TB)}\
    for (; zyx_j < zyx_n; zyx_j++)
${rows(1)}\
% for g in range(GW):
    {
        const float zyx_inv = 1.0f / zyx_l${g};
        __global float *zyx_o = zyx_out + zyx_it * ${GW * D} + ${g * D};
%   for c in range(chunks):
%     if VW > 1:
        vstore${VW}(zyx_acc${g}_${c} * zyx_inv, ${c}, zyx_o);
%     else:
        zyx_o[${c}] = zyx_acc${g}_${c} * zyx_inv;
%     endif
%   endfor
    }
% endfor
}
