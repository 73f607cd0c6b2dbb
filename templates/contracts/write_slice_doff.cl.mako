<%doc>
write_slice_doff: in place, write a dense source into dest with the start on the offset
axis read when the kernel runs from element `zyx_off_index` of the int64 buffer `zyx_off_buf`.
Out of range (offset < 0 or offset + width > dest_extent) writes nothing; work-item 0
always records (bad, offset) in slot `zyx_slot` of the error-flag buffer, which the host
checks at the next sync. Dest is a strided window of its storage starting at run-time
element offset `zyx_base` (view offset plus the off-axis box origin); the offset moves the
whole box by offset * `off_stride` elements, so the box is walked like write_slice's
(axes merged where dest's strides allow, one base computed once).
Parameters: itemsize, shape (source, merged), strides (dest element strides), off_stride
(dest stride of the offset axis), width (the source's extent on it), dest_extent,
n, vw, per_item, index_t (holds every dest index), stream (non-temporal stores),
exact (one element per work-item over an exact grid, index.mako `loop_head`).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<% T = ix.attr.bits(itemsize) %>\
/* zyx contract kernel write_slice_doff: ${itemsize}-byte elements (any ${itemsize}-byte dtype), source ${list(shape)} into dest strides ${list(strides)}, device offset moving it by ${off_stride} per unit (width ${width}, dest extent ${dest_extent}); vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.preamble(itemsize, vw, stream)}
__kernel void zyx_write_slice_doff(__global ${T} *restrict zyx_dest, __global const ${T} *restrict zyx_src, const long zyx_base,
                                   __global const long *restrict zyx_off_buf, const long zyx_off_index,
                                   __global long *restrict zyx_flags, const int zyx_slot)
{
    const long zyx_off = zyx_off_buf[zyx_off_index];
    const int zyx_bad = zyx_off < 0 || zyx_off > ${dest_extent - width};
    if (get_global_id(0) == 0) {
        zyx_flags[2 * zyx_slot] = zyx_bad;
        zyx_flags[2 * zyx_slot + 1] = zyx_off;
    }
    if (zyx_bad) return;
    /* in range: the box starts at one dest index, in the index type (64-bit index math per
       element kept the work-item loop from vectorizing) */
    const ${index_t} zyx_b = (${index_t})(zyx_base + zyx_off${f" * {off_stride}" if off_stride != 1 else ""});
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c", exact)}\
        const ${index_t} zyx_dst = zyx_b + ${ix.dot("zyx_c", strides)};
        ${ix.move(itemsize, vw, "zyx_dest", "zyx_dst", "zyx_src", "zyx_i", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
