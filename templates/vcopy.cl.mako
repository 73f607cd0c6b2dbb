<%doc>
Vectorized dense copy used to measure the device's copy ceiling: each work item moves
`vec` consecutive 16-byte words. Parameters: name, n_words (uint4 count), vec.
</%doc>\
/* zyx ${name}: ${n_words} x 16 bytes, ${vec} words per work item */
__kernel void ${name}(__global uint4 *restrict zyx_out, __global const uint4 *restrict zyx_in)
{
    const size_t base = get_global_id(0) * ${vec};
% for k in range(vec):
    if (base + ${k} < ${n_words}) zyx_out[base + ${k}] = zyx_in[base + ${k}];
% endfor
}
