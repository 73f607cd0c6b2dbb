<%doc>
contiguize: copy a strided / broadcast / offset / reversed view into a dense buffer.
Parameters: itemsize, shape, strides, offset (the merged source view, element units), ostr (the
output's strides when its rows are padded, else None on the elementwise copy: dense),
n (elements), vw (vector width: elements per load, 1 unless strides[-1] == 1 and
shape[-1] % vw == 0), per_item (vectors per work-item), index_t, stream (non-temporal
stores), exact (one element per work-item over an exact grid, index.mako `loop_head`;
vw == 1, tile == 0), and tile: 0 for the elementwise copy, else the transposed copy (the source's
unit-stride axis `unit` is not the last axis): each work-item copies tile x tile_l blocks
of (axis unit, last axis), reading source runs along `unit` and writing output runs
along the last axis; `per_item` blocks per work-item (grid-stride), edges guarded.
Full tiles move sb tv x sb tv superblocks through registers (tv x tv blocks transposed by
vector shuffles; sb is 2, or 4 for bytes so that each output row gets a whole cache line:
their 16 x 16 blocks with 16-byte row writes ran at half the speed of 32 x 32, and 64 x 64
ran ~1.25x faster); sb tv divides tile and tile_l. Consecutive tiles step along `unit` (a
tile's source rows stream on, the output moves down its rows). Streamed stores skip the
alignment test when every output row is aligned.
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    rank = len(shape)
%>\
% if not tile:
/* zyx contract kernel contiguize: ${itemsize}-byte elements (any ${itemsize}-byte dtype), view ${list(shape)} strides ${list(strides)} offset ${offset} -> dense ${n}; vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_contiguize(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in)
{
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c", exact)}\
        const ${index_t} zyx_src = ${offset} + ${ix.dot("zyx_c", strides)};
% if ostr:
        const ${index_t} zyx_dst = ${ix.dot("zyx_c", ostr)};
        ${ix.move(itemsize, vw, "zyx_out", "zyx_dst", "zyx_in", "zyx_src", stream)}
% else:
        ${ix.move(itemsize, vw, "zyx_out", "zyx_i", "zyx_in", "zyx_src", stream)}
% endif
    }
${ix.stream_fence(vw, stream)}\
}
% else:
<%
    last = rank - 1
    U, L = shape[unit], shape[last]
    s_last = strides[last]
    o_unit = ostr[unit]
    outer_axes = [k for k in range(rank) if k not in (unit, last)]
    outer_shape = [shape[k] for k in outer_axes]
    n_outer = ix.attr.prod(outer_shape)
    tu, tl = -(-U // tile), -(-L // tile_l)
    n_tiles = n_outer * tu * tl
    src_terms = [f"zyx_c{j} * {strides[k]}" for j, k in enumerate(outer_axes) if strides[k] != 0]
    out_terms = [f"zyx_c{j} * {ostr[k]}" for j, k in enumerate(outer_axes)]
    sl = f" * {s_last}" if s_last != 1 else ""
    # A full tile: element by element (tv == 1), or superblocks of sb tv x sb tv elements (for
    # sb 2, both sides whole cache lines when a tv vector is half a line): sb tv source rows
    # read as sb tv-lane vectors each, the sb x sb blocks of tv x tv transposed in registers,
    # then each output row's sb parts stored back to back. Addresses come from one base pointer per superblock
    # plus constants (indexing every load from the tile's base ran ~1.5x slower on PoCL).
    if tv == 1:
        ft = [f"for (int zyx_a = 0; zyx_a < {tile}; ++zyx_a)",
              f"    for (int zyx_b = 0; zyx_b < {tile_l}; ++zyx_b)",
              f"        zyx_d[zyx_a * {o_unit} + zyx_b] = zyx_s[zyx_a + zyx_b{sl}];"]
    else:
        VT = ix.attr.vtype(itemsize, tv)
        ft = [f"for (int zyx_a = 0; zyx_a < {tile}; zyx_a += {sb * tv})",
              f"    for (int zyx_b = 0; zyx_b < {tile_l}; zyx_b += {sb * tv}) {{",
              f"        __global const {T} *zyx_bs = zyx_s + zyx_a + zyx_b{sl};",
              f"        __global {T} *zyx_bd = zyx_d + zyx_a * {o_unit} + zyx_b;"]
        names = {}  # (hh, g, q): block hh along the unit axis, g along the last axis, row q
        for q in range(sb * tv):  # source row q of the superblock: its sb blocks (one line for sb 2)
            g, r = divmod(q, tv)
            for hh in range(sb):
                names[(hh, g, r)] = f"zyx_r{hh}{g}_{r}"
                ft.append(f"        const {VT} zyx_r{hh}{g}_{r} = {ix.attr.vload(itemsize, tv, f'zyx_bs + {q * s_last + hh * tv}')};")

        def shuffle(nm, x, y, idx):
            """nm = lanes idx of x (0 .. tv-1) and y (tv ..) (ZYX_SHUFFLE2: one vector shuffle)."""
            ft.append(f"        const {VT} {nm} = ZYX_SHUFFLE2({x}, {y}, {', '.join(map(str, idx))});")

        def pair(ni, nj, x, y, lo, hi):
            """ni, nj: the lanes of x and y listed in lo and hi, as (lane, x-or-y) pairs."""
            for nm, sel in ((ni, lo), (nj, hi)):
                shuffle(nm, x, y, [k + v * tv for k, v in sel])

        for g in range(sb):
            for hh in range(sb):
                rows = [names[(hh, g, q)] for q in range(tv)]
                tag = f"{hh}{g}"
                if tv == 8:
                    # The classic AVX 8x8: unpack pairs, shuffle pairs of pairs, swap 128-bit
                    # halves (one instruction each there; the bit swaps below need two for h = 1).
                    t = [f"zyx_p{tag}_{i}" for i in range(8)]
                    u = [f"zyx_q{tag}_{i}" for i in range(8)]
                    w = [f"zyx_w{tag}_{i}" for i in range(8)]
                    for m in range(4):
                        pair(t[2 * m], t[2 * m + 1], rows[2 * m], rows[2 * m + 1],
                             [(0, 0), (0, 1), (1, 0), (1, 1), (4, 0), (4, 1), (5, 0), (5, 1)],
                             [(2, 0), (2, 1), (3, 0), (3, 1), (6, 0), (6, 1), (7, 0), (7, 1)])
                    for m in (0, 1, 4, 5):
                        pair(u[m], u[m + 2], t[m], t[m + 2],
                             [(0, 0), (1, 0), (0, 1), (1, 1), (4, 0), (5, 0), (4, 1), (5, 1)],
                             [(2, 0), (3, 0), (2, 1), (3, 1), (6, 0), (7, 0), (6, 1), (7, 1)])
                    for m in range(4):  # u0 u2 u1 u3 (and u4 u6 u5 u7) hold rows 0-3 (4-7)
                        src = [0, 2, 1, 3][m]
                        pair(w[m], w[m + 4], u[src], u[src + 4],
                             [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (2, 1), (3, 1)],
                             [(4, 0), (5, 0), (6, 0), (7, 0), (4, 1), (5, 1), (6, 1), (7, 1)])
                    rows = w
                elif itemsize == 1:
                    # Bytes: perfect shuffles: each stage interleaves row m with row m + tv/2 (the low
                    # halves into row 2m, the high halves into row 2m + 1: one unpack each on
                    # x86); after log2(tv) stages row i lane l holds what row l lane i held.
                    lo = [k // 2 + (k % 2) * tv for k in range(tv)]
                    hi = [tv // 2 + k for k in lo]
                    stage = 0
                    while (1 << stage) < tv:
                        new = [f"zyx_s{stage}_{tag}_{i}" for i in range(tv)]
                        for m in range(tv // 2):
                            shuffle(new[2 * m], rows[m], rows[m + tv // 2], lo)
                            shuffle(new[2 * m + 1], rows[m], rows[m + tv // 2], hi)
                        rows, stage = new, stage + 1
                else:
                    # Bit swaps: stage h (1, 2, 4, ...) swaps bit h of the row with bit h of the
                    # lane; after all of them row i lane l holds what row l lane i held.
                    stage, h = 0, 1
                    while h < tv:
                        for i in range(tv):
                            if i & h:
                                continue
                            j = i + h
                            ni, nj = f"zyx_s{stage}_{tag}_{i}", f"zyx_s{stage}_{tag}_{j}"
                            for nm, at in ((ni, 0), (nj, h)):
                                shuffle(nm, rows[i], rows[j], [v * tv + c * 2 * h + at + t for c in range(tv // (2 * h))
                                                               for v in range(2) for t in range(h)])
                            rows[i], rows[j] = ni, nj
                        stage, h = stage + 1, h * 2
                for i in range(tv):
                    names[(hh, g, i)] = rows[i]
        # block (hh, g) row p is output row a + hh*tv + p, columns b + g*tv ..
        for hh in range(sb):
            for p in range(tv):
                for g in range(sb):
                    ft.append("        " + capture(ix.store, itemsize, tv, "zyx_bd", f"{(hh * tv + p) * o_unit + g * tv}",
                                                   names[(hh, g, p)], stream))
        ft.append("    }")
    full_tile = "\n".join("            " + line for line in ft)
%>\
/* zyx contract kernel contiguize (transposed tiles): ${itemsize}-byte elements (any ${itemsize}-byte dtype), view ${list(shape)} strides ${list(strides)} offset ${offset} -> dense ${n}; unit axis ${unit}, ${tile} x ${tile_l} tiles, ${per_item} per work-item */
${ix.preamble(itemsize, tv, stream, aligned=all(ostr[k] % tv == 0 for k in [unit, *outer_axes]))}
% if tv > 1:
/* ZYX_SHUFFLE2(x, y, i...): lanes i of x (0 .. ${tv - 1}) and y (${tv} ..) as one shuffle instruction where the compiler has it */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define ZYX_SHUFFLE2(x, y, ...) __builtin_shufflevector(x, y, __VA_ARGS__)
#endif
#endif
#ifndef ZYX_SHUFFLE2
#define ZYX_SHUFFLE2(x, y, ...) shuffle2(x, y, (${ix.attr.vtype(itemsize, tv)})(__VA_ARGS__))
#endif
% endif
__kernel void zyx_contiguize(__global ${T} *restrict zyx_out, __global const ${T} *restrict zyx_in)
{
    for (int zyx_k = 0; zyx_k < ${per_item}; ++zyx_k) {
        const ${index_t} zyx_t = (${index_t})get_global_id(0) + (${index_t})zyx_k * (${index_t})get_global_size(0);
        if (zyx_t >= ${n_tiles}) break;
        /* consecutive tiles step along the unit axis: a tile's source rows stream on */
        const ${index_t} zyx_u0 = (zyx_t % ${tu}) * ${tile};
        const ${index_t} zyx_l0 = ((zyx_t / ${tu}) % ${tl}) * ${tile_l};
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
