<%doc>
write_slice_doff: in place, write a dense source into dest with the start on `axis`
read when the kernel runs from element `zyx_off_index` of the int64 buffer `zyx_off_buf`.
Out of range (offset < 0 or offset + width > dest_extent) writes nothing; work-item 0
always records (bad, offset) in slot `zyx_slot` of the error-flag buffer, which the host
checks at the next sync. Dest is a strided window of its storage starting at run-time
element offset `zyx_base` (view offset plus the off-axis box origin).
Parameters: itemsize, shape (source, size-1 axes dropped except `axis`, neighbours
merged), strides (dest element strides), axis, width (= shape[axis]), dest_extent,
n, vw, per_item, index_t, stream (non-temporal stores),
exact (one element per work-item over an exact grid, index.mako `loop_head`).
</%doc>\
<%namespace name="ix" file="/contracts/index.mako"/>\
<%
    T = ix.attr.bits(itemsize)
    off_axis = [s if k != axis else 0 for k, s in enumerate(strides)]
%>\
/* zyx contract kernel write_slice_doff: ${itemsize}-byte elements (any ${itemsize}-byte dtype), source ${list(shape)} into dest strides ${list(strides)}, device offset on axis ${axis} (width ${width}, dest extent ${dest_extent}); vector ${vw}, ${"one element" if exact else per_item} per work-item */
${ix.stream_preamble(itemsize, vw, stream)}
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
${ix.loop_head(index_t, per_item, n // vw, vw, stream, exact)}\
${ix.coords(index_t, "zyx_i", shape, "zyx_c", exact)}\
        const long zyx_dst = zyx_base + (zyx_off + zyx_c${axis})${f" * {strides[axis]}" if strides[axis] != 1 else ""} + ${ix.dot("zyx_c", off_axis)};
        ${ix.move(vw, "zyx_dest", "zyx_dst", "zyx_src", "zyx_i", stream)}
    }
${ix.stream_fence(vw, stream)}\
}
