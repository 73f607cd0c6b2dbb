<%doc>
Vectorized dense copy used to measure the device's copy ceiling: each work item moves
`vec` consecutive words of `word` (uint4: 16 bytes, uint8: 32 bytes), with `stream`
through non-temporal stores (common/stream.mako); the bounds test is left out when the
`group`-item work-groups cover the words exactly. Parameters: name, n_words, vec, word,
stream, group.
</%doc>\
<%namespace name="st" file="/common/stream.mako"/>\
/* zyx ${name}: ${n_words} x ${word}, ${vec} a work item${", streamed stores" if stream else ""} */
% if stream:
${st.store_fn("zyx_stream_store", word, word, "*zyx_p = zyx_value;")}
% endif
__kernel void ${name}(__global ${word} *restrict zyx_out, __global const ${word} *restrict zyx_in)
{
    const size_t base = get_global_id(0) * ${vec};
<% test = "" if n_words % (vec * group) == 0 else "if (base + %d < " + str(n_words) + ") " %>\
% for k in range(vec):
%   if stream:
    ${test % k if test else ""}zyx_stream_store(zyx_in[base + ${k}], zyx_out + base + ${k});
%   else:
    ${test % k if test else ""}zyx_out[base + ${k}] = zyx_in[base + ${k}];
%   endif
% endfor
% if stream:
    ZYX_STREAM_FENCE(get_local_id(0) == get_local_size(0) - 1);
% endif
}
