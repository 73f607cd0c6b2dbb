<%doc>
triangular: triu / tril of the last two axes of a dense input; dropped elements become
all-zero bytes (zero / False in every dtype). `upper` keeps j >= i + diagonal, otherwise
j <= i + diagonal; the diagonal is a run-time argument.
Parameters: itemsize, batch, rows, cols, upper, n, vw (divides cols), per_item, index_t,
stream (non-temporal stores),
rowwise: each work-item handles whole rows (`per_item` of them, grid-stride): vectors
wholly kept are copied, vectors wholly dropped are stored as zeros without reading the
input, and the one boundary vector is masked lane by lane (CPUs); otherwise one
vector per step (`per_item` vectors per work-item, GPUs).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    VT = ix.attr.vtype(itemsize, vw)
    cmp = ">=" if upper else "<="
    nvc = cols // vw
%>\
/* zyx contract kernel triangular (${"triu" if upper else "tril"}): ${itemsize}-byte elements (any ${itemsize}-byte dtype), ${batch} x ${rows} x ${cols}; vector ${vw}, ${per_item} ${"rows" if rowwise else ""} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_triangular(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in, const long zyx_diagonal)
{
% if rowwise:
    for (int zyx_k = 0; zyx_k < ${per_item}; ++zyx_k) {
        const ${index_t} zyx_r = (${index_t})get_global_id(0) + (${index_t})zyx_k * (${index_t})get_global_size(0);
        if (zyx_r >= ${batch * rows}) break;
        const long zyx_row = (long)(zyx_r % ${rows});
        __global const ${T} *zyx_s = zyx_in + zyx_r * ${cols};
        __global ${T} *zyx_d = zyx_out + zyx_r * ${cols};
        /* the first ${"dropped" if not upper else "kept"} column (the ${"kept" if not upper else "dropped"} ones come first) */
        const ${index_t} zyx_e = (${index_t})clamp(zyx_row + zyx_diagonal${" + 1" if not upper else ""}, 0L, ${cols}L);
        const ${index_t} zyx_ev = zyx_e / ${vw};
%   if not upper:
        for (${index_t} zyx_v = 0; zyx_v < zyx_ev; ++zyx_v)
            ${ix.move(itemsize, vw, "zyx_d", f"zyx_v * {vw}" if vw > 1 else "zyx_v", "zyx_s", f"zyx_v * {vw}" if vw > 1 else "zyx_v", stream)}
%   else:
        for (${index_t} zyx_v = 0; zyx_v < zyx_ev; ++zyx_v)
            ${zero("zyx_d", f"zyx_v * {vw}" if vw > 1 else "zyx_v")}
%   endif
%   if vw > 1:
        if (zyx_ev < ${nvc}) {
            const ${index_t} zyx_j = zyx_ev * ${vw};
            ${VT} zyx_x = ${ix.attr.vload(itemsize, vw, "zyx_s + zyx_j")};
%     for l in range(vw):
            if (!(zyx_j + ${l} ${cmp} zyx_e${" - 1" if not upper else ""})) zyx_x${ix.attr.lane(l)} = 0;
%     endfor
            ${ix.store(itemsize, vw, "zyx_d", "zyx_j", "zyx_x", stream)}
        }
        const ${index_t} zyx_rest = zyx_ev + (zyx_e % ${vw} != 0 ? 1 : 0);
%   else:
        const ${index_t} zyx_rest = zyx_ev;
%   endif
%   if not upper:
        for (${index_t} zyx_v = zyx_rest; zyx_v < ${nvc}; ++zyx_v)
            ${zero("zyx_d", f"zyx_v * {vw}" if vw > 1 else "zyx_v")}
%   else:
        for (${index_t} zyx_v = zyx_rest; zyx_v < ${nvc}; ++zyx_v)
            ${ix.move(itemsize, vw, "zyx_d", f"zyx_v * {vw}" if vw > 1 else "zyx_v", "zyx_s", f"zyx_v * {vw}" if vw > 1 else "zyx_v", stream)}
%   endif
    }
% else:
${ix.loop_head(index_t, per_item, n // vw, vw, stream)}\
${ix.coords(index_t, "zyx_i", (batch, rows, cols), "zyx_c")}\
        const long zyx_edge = (long)zyx_c1 + zyx_diagonal;  /* keep column j when j ${cmp} edge */
% if vw == 1:
        zyx_out[zyx_i] = ((long)zyx_c2 ${cmp} zyx_edge) ? zyx_in[zyx_i] : (${T})0;
% else:
        ${VT} zyx_x = ${ix.attr.vload(itemsize, vw, "zyx_in + zyx_i")};
%   for l in range(vw):
        if (!((long)zyx_c2 + ${l} ${cmp} zyx_edge)) zyx_x${ix.attr.lane(l)} = 0;
%   endfor
        ${ix.store(itemsize, vw, "zyx_out", "zyx_i", "zyx_x", stream)}
% endif
    }
% endif
${ix.stream_fence(vw, stream)}\
}
<%def name="zero(dst, di)">\
% if vw == 1:
${dst}[${di}] = (${T})0;\
% else:
${ix.store(itemsize, vw, dst, di, f"({VT})0", stream)}\
% endif
</%def>
