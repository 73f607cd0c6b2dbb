## GGUF block layouts (ggml's quantization types), shared by the dequantization kernel
## (templates/gguf/dequant.cl.mako) and the quantized matmul (templates/gguf/qmatmul.cl.mako).
##
## A block of `qtype` starts at the `__global const uchar *` named by `b`; `setup(qtype, b)` declares the
## block-wide values (scales as float, the Q5 high-bit words) and `value(qtype, b, j)` is element `j` of
## the block as float. Every product and sum is its own float32 operation in the order
## `gguf.quants.dequantize` (NumPy) computes it, and the including kernel turns FP_CONTRACT off, so the
## values are bit for bit NumPy's. Halves are read as two bytes (block fields sit at even, not 4-byte,
## offsets) and widened by the shared float16 helper (common/dtypes.mako).

<%def name="half(p)">zyx_f16_to_f32((uint)(${p})[0] | ((uint)(${p})[1] << 8))</%def>

<%def name="word(p)">((uint)(${p})[0] | ((uint)(${p})[1] << 8) | ((uint)(${p})[2] << 16) | ((uint)(${p})[3] << 24))</%def>

## Statements: the block-wide values of block `b`.
<%def name="setup(qtype, b)">\
% if qtype in ("Q4_0", "Q5_0", "Q8_0", "Q3_K", "Q6_K"):
    const float zyx_d = ${half(b if qtype in ("Q4_0", "Q5_0", "Q8_0") else b + " + " + str({"Q3_K": 108, "Q6_K": 208}[qtype]))};
% elif qtype in ("Q4_1", "Q5_1"):
    const float zyx_d = ${half(b)};
    const float zyx_m = ${half(b + " + 2")};
% elif qtype == "Q2_K":
    const float zyx_d = ${half(b + " + 80")};
    const float zyx_dmin = ${half(b + " + 82")};
% elif qtype in ("Q4_K", "Q5_K"):
    const float zyx_d = ${half(b)};
    const float zyx_dmin = ${half(b + " + 2")};
% endif
% if qtype == "Q5_0":
    const uint zyx_qh = ${word(b + " + 2")};
% elif qtype == "Q5_1":
    const uint zyx_qh = ${word(b + " + 4")};
% endif
</%def>

## Q4_K / Q5_K: the 6-bit scale (`sc`) or min (`mn`) of sub-block `s` (0..7) from the 12 scale bytes at `p`.
<%def name="k4_scale(p, s)">(${s} < 4 ? ((${p})[${s}] & 63) : (((${p})[${s} + 4] & 15) | (((${p})[${s} - 4] >> 2) & 48)))</%def>
<%def name="k4_min(p, s)">(${s} < 4 ? ((${p})[${s} + 4] & 63) : (((${p})[${s} + 4] >> 4) | (((${p})[${s}] >> 2) & 48)))</%def>

## Expression: element `j` (an int expression, 0 <= j < block size) of block `b`, as float.
<%def name="value(qtype, b, j)">\
<% J = "(" + j + ")" %>\
% if qtype == "Q4_0":
(zyx_d * (float)((int)((${b}[2 + ${J} % 16] >> (4 * (${J} / 16))) & 15) - 8))\
% elif qtype == "Q4_1":
((zyx_d * (float)((${b}[4 + ${J} % 16] >> (4 * (${J} / 16))) & 15)) + zyx_m)\
% elif qtype == "Q5_0":
(zyx_d * (float)((int)(((${b}[6 + ${J} % 16] >> (4 * (${J} / 16))) & 15) | (((zyx_qh >> ${J}) & 1) << 4)) - 16))\
% elif qtype == "Q5_1":
((zyx_d * (float)(((${b}[8 + ${J} % 16] >> (4 * (${J} / 16))) & 15) | (((zyx_qh >> ${J}) & 1) << 4))) + zyx_m)\
% elif qtype == "Q8_0":
((float)((char)${b}[2 + ${J}]) * zyx_d)\
% elif qtype == "Q2_K":
(((zyx_d * (float)(${b}[${J} / 16] & 15)) * (float)((${b}[16 + (${J} / 128) * 32 + ${J} % 32] >> (2 * ((${J} % 128) / 32))) & 3)) - (zyx_dmin * (float)(${b}[${J} / 16] >> 4)))\
% elif qtype == "Q3_K":
((zyx_d * (float)((int)(((${b}[96 + (${J} / 16) % 8] >> (4 * (${J} / 128))) & 15) | (((${b}[104 + (${J} / 16) % 4] >> (2 * (${J} / 64))) & 3) << 4)) - 32)) * (float)((int)((${b}[32 + (${J} / 128) * 32 + ${J} % 32] >> (2 * ((${J} % 128) / 32))) & 3) - (int)((((${b}[${J} % 32] >> (${J} / 32)) & 1) ^ 1) << 2)))\
% elif qtype == "Q4_K":
(((zyx_d * (float)${k4_scale(b + " + 4", "(" + J + " / 32)")}) * (float)((${b}[16 + (${J} / 64) * 32 + ${J} % 32] >> (4 * ((${J} / 32) % 2))) & 15)) - (zyx_dmin * (float)${k4_min(b + " + 4", "(" + J + " / 32)")}))\
% elif qtype == "Q5_K":
(((zyx_d * (float)${k4_scale(b + " + 4", "(" + J + " / 32)")}) * (float)(((${b}[48 + (${J} / 64) * 32 + ${J} % 32] >> (4 * ((${J} / 32) % 2))) & 15) | (((${b}[16 + ${J} % 32] >> (${J} / 32)) & 1) << 4))) - (zyx_dmin * (float)${k4_min(b + " + 4", "(" + J + " / 32)")}))\
% elif qtype == "Q6_K":
((zyx_d * (float)((char)${b}[192 + ${J} / 16])) * (float)((int)(((${b}[(${J} / 128) * 64 + ${J} % 64] >> (4 * ((${J} % 128) / 64))) & 15) | (((${b}[128 + (${J} / 128) * 32 + ${J} % 32] >> (2 * ((${J} % 128) / 32))) & 3) << 4)) - 32))\
% else:
<% raise ValueError(f"blocks.mako: no block layout for {qtype}") %>\
% endif
</%def>
