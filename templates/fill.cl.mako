<%doc>
Fill a dense buffer with one element's bit pattern (dtype-agnostic: specialized on the
element size only). Parameters: name, itemsize, n, index_t.
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<% t = dt.attr.uint_type(itemsize) %>\
/* zyx ${name}: ${n} elements of ${itemsize} bytes */
__kernel void ${name}(__global ${t} *restrict zyx_out, const ${t} zyx_value)
{
    const ${index_t} i = get_global_id(0);
    if (i < ${n}) zyx_out[i] = zyx_value;
}
