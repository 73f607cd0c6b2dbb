<%doc>
A copy of `n` words of type `word` from `zyx_in` (starting `offset` words in) to `zyx_out`, one word a work
item: a device-side buffer copy that a captured plan can replay (a clEnqueueCopyBuffer is not a launch).
`n` and `offset` are run-time arguments, so one kernel serves every size. Parameters: name, word.
</%doc>\
/* zyx ${name}: copy ${word} words */
__kernel void ${name}(__global ${word} *restrict zyx_out, __global const ${word} *restrict zyx_in,
                      const ulong zyx_offset, const ulong zyx_n)
{
    const size_t i = get_global_id(0);
    if (i < zyx_n) zyx_out[i] = zyx_in[zyx_offset + i];
}
