<%doc>
write_slice_rotating: in place, ring-buffer write of a dense source into dest.
Source row r on axis `axis` lands on dest row (p + r) % modulus, p = position % modulus
(Python modulo) read when the kernel runs: from the argument `zyx_position`
(position_from == "arg") or from element `zyx_pos_index` of the int/uint buffer
`zyx_pos_buf` (position_from == "int" / "uint"). Dest is a strided window of its
storage starting at run-time element offset `zyx_base`.
Parameters: itemsize, shape (source, size-1 axes dropped except `axis`, neighbours
merged), strides (dest element strides), axis, modulus, position_from, n, vw (1 unless
the last axis is not `axis`, strides[-1] == 1 and shape[-1] % vw == 0), per_item, index_t, stream (non-temporal stores),
exact (one element per work-item over an exact grid, index.mako `loop_head`).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    off_axis = [s if k != axis else 0 for k, s in enumerate(strides)]
    pos_t = {"int": "int", "uint": "uint"}.get(position_from)
%>\
/* zyx contract kernel write_slice_rotating: ${itemsize}-byte elements (any ${itemsize}-byte dtype), source ${list(shape)} into dest strides ${list(strides)}, ring axis ${axis} modulus ${modulus}, position from ${position_from}; vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
% if pos_t is None:
__kernel void zyx_write_slice_rotating(__global ${T} *restrict zyx_dest, __global const ${T} *restrict zyx_src, const long zyx_base, const long zyx_position)
% else:
__kernel void zyx_write_slice_rotating(__global ${T} *restrict zyx_dest, __global const ${T} *restrict zyx_src, const long zyx_base, __global const ${pos_t} *restrict zyx_pos_buf, const long zyx_pos_index)
% endif
{
% if pos_t is None:
    long zyx_pl = zyx_position % ${modulus};
% else:
    long zyx_pl = (long)zyx_pos_buf[zyx_pos_index] % ${modulus};
% endif
    /* the ring row in the index type: 64-bit index math kept the work-item loop from vectorizing */
    const ${index_t} zyx_p = (${index_t})(zyx_pl < 0 ? zyx_pl + ${modulus} : zyx_pl);
    const ${index_t} zyx_b = (${index_t})zyx_base;
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c", exact)}\
        const ${index_t} zyx_r = zyx_p + zyx_c${axis};
        const ${index_t} zyx_row = zyx_r >= ${modulus} ? zyx_r - ${modulus} : zyx_r;
        const ${index_t} zyx_dst = zyx_b + zyx_row${f" * {strides[axis]}" if strides[axis] != 1 else ""} + ${ix.dot("zyx_c", off_axis)};
        ${ix.move(itemsize, vw, "zyx_dest", "zyx_dst", "zyx_src", "zyx_i", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
