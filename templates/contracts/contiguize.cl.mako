<%doc>
contiguize: copy a strided / broadcast / offset / reversed view into a dense buffer.
Parameters: itemsize, shape, strides, offset (the merged source view, element units),
n (elements), vw (vector width: elements per load, 1 unless strides[-1] == 1 and
shape[-1] % vw == 0), per_item (vectors per work-item), index_t, stream (non-temporal
stores), exact (one element per work-item over an exact grid, index.mako `loop_head`;
vw == 1, tile == 0), and tile: 0 for the elementwise copy, else the transposed copy (the source's
unit-stride axis `unit` is not the last axis): each work-item copies tile x tile_l blocks
of (axis unit, last axis), reading source runs along `unit` and writing output runs
along the last axis; `per_item` blocks per work-item (grid-stride), edges guarded.
Full tiles move tv x tv register blocks (tv loads of tv lanes along `unit`, stores of
the regrouped lanes along the last axis); tv divides tile and tile_l. A narrow tile_l
(one output cache line) with a long tile keeps few source and output lines live at
once, which matters when both sides have power-of-two row strides.
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    rank = len(shape)
%>\
% if not tile:
/* zyx contract kernel contiguize: ${itemsize}-byte elements (any ${itemsize}-byte dtype), view ${list(shape)} strides ${list(strides)} offset ${offset} -> dense ${n}; vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.stream_preamble(itemsize, vw, stream)}
__kernel void zyx_contiguize(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in)
{
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c", exact)}\
        const ${index_t} zyx_src = ${offset} + ${ix.dot("zyx_c", strides)};
        ${ix.move(vw, "zyx_out", "zyx_i", "zyx_in", "zyx_src", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
% else:
<%
    last = rank - 1
    U, L = shape[unit], shape[last]
    s_last = strides[last]
    ostr = [ix.attr.prod(shape[k + 1:]) for k in range(rank)]
    o_unit = ostr[unit]
    outer_axes = [k for k in range(rank) if k not in (unit, last)]
    outer_shape = [shape[k] for k in outer_axes]
    n_outer = ix.attr.prod(outer_shape)
    tu, tl = -(-U // tile), -(-L // tile_l)
    n_tiles = n_outer * tu * tl
    src_terms = [f"zyx_c{j} * {strides[k]}" for j, k in enumerate(outer_axes) if strides[k] != 0]
    out_terms = [f"zyx_c{j} * {ostr[k]}" for j, k in enumerate(outer_axes)]
    sl = f" * {s_last}" if s_last != 1 else ""
    # A full tile: tv x tv register blocks (vector loads along the source's unit axis,
    # lanes regrouped, vector stores along the output's last axis), or element by element.
    if tv == 1:
        ft = [f"for (int zyx_a = 0; zyx_a < {tile}; ++zyx_a)",
              f"    for (int zyx_b = 0; zyx_b < {tile_l}; ++zyx_b)",
              f"        zyx_d[zyx_a * {o_unit} + zyx_b] = zyx_s[zyx_a + zyx_b{sl}];"]
    else:
        VT = ix.attr.vtype(itemsize, tv)
        ft = [f"for (int zyx_a = 0; zyx_a < {tile}; zyx_a += {tv})",
              f"    for (int zyx_b = 0; zyx_b < {tile_l}; zyx_b += {tv}) {{"]
        ft += [f"        const {VT} zyx_r{r} = vload{tv}(0, zyx_s + zyx_a + (zyx_b + {r}){sl});" for r in range(tv)]
        for r in range(tv):
            lanes = ", ".join(f"zyx_r{q}{ix.attr.lane(r)}" for q in range(tv))
            ft.append("        " + capture(ix.store, tv, "zyx_d", f"(zyx_a + {r}) * {o_unit} + zyx_b", f"({VT})({lanes})", stream))
        ft.append("    }")
    full_tile = "\n".join("            " + line for line in ft)
%>\
/* zyx contract kernel contiguize (transposed tiles): ${itemsize}-byte elements (any ${itemsize}-byte dtype), view ${list(shape)} strides ${list(strides)} offset ${offset} -> dense ${n}; unit axis ${unit}, ${tile} x ${tile_l} tiles, ${per_item} per work-item */
${ix.stream_preamble(itemsize, tv, stream)}
__kernel void zyx_contiguize(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in)
{
    for (int zyx_k = 0; zyx_k < ${per_item}; ++zyx_k) {
        const ${index_t} zyx_t = (${index_t})get_global_id(0) + (${index_t})zyx_k * (${index_t})get_global_size(0);
        if (zyx_t >= ${n_tiles}) break;
        const ${index_t} zyx_l0 = (zyx_t % ${tl}) * ${tile_l};
        const ${index_t} zyx_u0 = ((zyx_t / ${tl}) % ${tu}) * ${tile};
% if outer_axes:
        const ${index_t} zyx_o = zyx_t / ${tu * tl};
${ix.coords(index_t, "zyx_o", outer_shape, "zyx_c")}\
% endif
        const ${index_t} zyx_sb = ${offset} + ${" + ".join(src_terms) + " + " if src_terms else ""}zyx_u0 + zyx_l0${sl};
        const ${index_t} zyx_ob = ${" + ".join(out_terms) + " + " if out_terms else ""}zyx_u0 * ${o_unit} + zyx_l0;
        __global const ${T} *zyx_s = zyx_in + zyx_sb;
        __global ${T} *zyx_d = zyx_out + zyx_ob;
% if U % tile == 0 and L % tile_l == 0:
        {
${full_tile}
        }
% else:
        const int zyx_na = (int)min((${index_t})${tile}, (${index_t})${U} - zyx_u0);
        const int zyx_nb = (int)min((${index_t})${tile_l}, (${index_t})${L} - zyx_l0);
        if (zyx_na == ${tile} && zyx_nb == ${tile_l}) {
${full_tile}
        } else {
            for (int zyx_a = 0; zyx_a < zyx_na; ++zyx_a)
                for (int zyx_b = 0; zyx_b < zyx_nb; ++zyx_b)
                    zyx_d[zyx_a * ${o_unit} + zyx_b] = zyx_s[zyx_a + zyx_b${sl}];
        }
% endif
    }
${ix.stream_fence(tv, stream)}\
}
% endif
