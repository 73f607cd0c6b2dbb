<%doc>
GGUF dequantization (zyx.kernels.gguf_dequant): the raw bytes of one tensor, uploaded as uchar, to float32.
Quantized types: work item i expands block i (`block` elements from `type_size` bytes) through the block
layouts of gguf/blocks.mako. F16 / BF16: work item i widens element i.
Parameters: qtype, block, type_size, index_t (int or long: every byte and element index fits it).
Arguments: out (float), src (uchar); launched over exactly the blocks (elements), so no bounds test.
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%namespace name="bk" file="/gguf/blocks.mako"/>\
<%! from zyx import dtype as dtypes %>\
<% I = index_t %>\
/* zyx GGUF dequantize ${qtype}: ${block} values from ${type_size} bytes a work item */
#pragma OPENCL FP_CONTRACT OFF
${dt.preamble([dtypes.float16])}
__kernel void zyx_gguf_dequant(__global float *restrict zyx_out, __global const uchar *restrict zyx_src)
{
    const ${I} zyx_i = get_global_id(0);
% if qtype == "F16":
    zyx_out[zyx_i] = zyx_f16_to_f32((uint)zyx_src[2 * zyx_i] | ((uint)zyx_src[2 * zyx_i + 1] << 8));
% elif qtype == "BF16":
    zyx_out[zyx_i] = as_float(((uint)zyx_src[2 * zyx_i] << 16) | ((uint)zyx_src[2 * zyx_i + 1] << 24));
% else:
    __global const uchar *zyx_b = zyx_src + zyx_i * ${type_size};
    __global float *zyx_o = zyx_out + zyx_i * ${block};
${bk.setup(qtype, "zyx_b")}\
    for (int zyx_j = 0; zyx_j < ${block}; zyx_j++)
        zyx_o[zyx_j] = ${bk.value(qtype, "zyx_b", "zyx_j")};
% endif
}
