<%doc>
Copy (and cast) a strided view into a dense row-major output.
Parameters: name, src (DType), dst (DType), shape/strides/offset of the merged source
view (element units, render-time constants), n (element count), index_t.
Same dtype: the copy moves raw bits (bit-exact for every dtype, NaN payloads included).
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%
    raw = src.name == dst.name
    src_t = dt.attr.bits_type(src) if raw else src.cl_storage
    dst_t = dt.attr.bits_type(dst) if raw else dst.cl_storage
%>\
/* zyx ${name}: ${src.name}${list(shape)} strides ${list(strides)} offset ${offset} -> ${dst.name} dense, ${n} elements */
${dt.preamble([src, dst])}
__kernel void ${name}(__global ${dst_t} *restrict zyx_out, __global const ${src_t} *restrict zyx_in)
{
    const ${index_t} i = get_global_id(0);
    if (i >= ${n}) return;
% if len(shape) <= 1 and (not strides or strides[0] == 1):
    const ${index_t} src_index = ${offset} + i;
% else:
    ${index_t} rest = i;
    ${index_t} src_index = ${offset};
% for k in range(len(shape) - 1, -1, -1):
%   if k > 0:
    src_index += (rest % ${shape[k]}) * ${strides[k]};
    rest /= ${shape[k]};
%   else:
    src_index += rest * ${strides[k]};
%   endif
% endfor
% endif
% if raw:
    zyx_out[i] = zyx_in[src_index];
% else:
    ${dt.store_converted(src, dst, "zyx_out", "i", capture(dt.load, src, "zyx_in", "src_index"))}
% endif
}
