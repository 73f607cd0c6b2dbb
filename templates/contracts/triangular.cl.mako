<%doc>
triangular: triu / tril of the last two axes of a dense input; dropped elements become
all-zero bytes (zero / False in every dtype). `upper` keeps j >= i + diagonal, otherwise
j <= i + diagonal; the diagonal is a run-time argument.
Parameters: itemsize, batch, rows, cols, upper, n, vw (divides cols), per_item, index_t.
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    VT = ix.attr.vtype(itemsize, vw)
    cmp = ">=" if upper else "<="
%>\
/* zyx contract kernel triangular (${"triu" if upper else "tril"}): ${itemsize}-byte elements (any ${itemsize}-byte dtype), ${batch} x ${rows} x ${cols}; vector ${vw}, ${per_item} per work-item */
__kernel void zyx_triangular(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in, const long zyx_diagonal)
{
${ix.loop_head(index_t, per_item, n // vw, vw)}\
${ix.coords(index_t, "zyx_i", (batch, rows, cols), "zyx_c")}\
        const long zyx_edge = (long)zyx_c1 + zyx_diagonal;  /* keep column j when j ${cmp} edge */
% if vw == 1:
        zyx_out[zyx_i] = ((long)zyx_c2 ${cmp} zyx_edge) ? zyx_in[zyx_i] : (${T})0;
% else:
        ${VT} zyx_x = vload${vw}(0, zyx_in + zyx_i);
%   for l in range(vw):
        if (!((long)zyx_c2 + ${l} ${cmp} zyx_edge)) zyx_x${ix.attr.lane(l)} = 0;
%   endfor
        vstore${vw}(zyx_x, 0, zyx_out + zyx_i);
% endif
    }
}
