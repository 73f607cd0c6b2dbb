<%doc>
write_slice: in place, copy a dense source into a box of dest.
The box is a strided window of dest's storage: `shape` (the source's, merged where dest's
strides allow) with dest element strides `strides`, starting at run-time element offset
`zyx_base` (dest's view offset plus the box origin), so boxes of one shape at any
position share the kernel. Parameters: itemsize, shape, strides, n, vw (1 unless
strides[-1] == 1 and shape[-1] % vw == 0), per_item, index_t, stream (non-temporal stores),
exact (one element per work-item over an exact grid, index.mako `loop_head`).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<% T = ix.attr.bits(itemsize) %>\
/* zyx contract kernel write_slice: ${itemsize}-byte elements (any ${itemsize}-byte dtype), box ${list(shape)} with dest strides ${list(strides)}, ${n} elements; vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_write_slice(__global ${T} *restrict zyx_dest, __global const ${T} *restrict zyx_src, const ${index_t} zyx_base)
{
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c", exact)}\
        const ${index_t} zyx_dst = zyx_base + ${ix.dot("zyx_c", strides)};
        ${ix.move(itemsize, vw, "zyx_dest", "zyx_dst", "zyx_src", "zyx_i", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
