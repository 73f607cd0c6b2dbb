<%doc>
contiguize: copy a strided / broadcast / offset / reversed view into a dense buffer.
Parameters: itemsize, shape, strides, offset (the merged source view, element units),
n (elements), vw (vector width: elements per load, 1 unless strides[-1] == 1 and
shape[-1] % vw == 0), per_item (vectors per work-item), index_t.
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    rank = len(shape)
%>\
/* zyx contract kernel contiguize: ${itemsize}-byte elements (any ${itemsize}-byte dtype), view ${list(shape)} strides ${list(strides)} offset ${offset} -> dense ${n}; vector ${vw}, ${per_item} per work-item */
__kernel void zyx_contiguize(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in)
{
${ix.loop_head(index_t, per_item, n // vw, vw)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c")}\
        const ${index_t} zyx_src = ${offset} + ${ix.dot("zyx_c", strides)};
        ${ix.move(vw, "zyx_out", "zyx_i", "zyx_in", "zyx_src")}
    }
}
