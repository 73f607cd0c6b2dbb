## Index and element-move helpers shared by the contract kernel templates.
##
## Byte kernels move elements as unsigned integers of the element's width (uchar,
## ushort, uint, ulong), so one kernel serves every dtype of that size and copies
## NaN payloads bit for bit. Shapes are render-time constants; every helper emits
## plain statements with zyx_-prefixed names.
##
## A template includes this file with <%namespace name="ix" file="/contracts/index.mako"/>.
<%namespace name="st" file="/common/stream.mako"/>\
<%!
    import math

    from zyx.dtype import UINT_OF_SIZE  # the one itemsize -> unsigned type table

    _UNSIGNED = [(size, d.cl_storage) for size, d in UINT_OF_SIZE.items()]
    _SWIZZLE = "0123456789ABCDEF"

    def bits(itemsize):
        """The unsigned OpenCL type holding one element of ``itemsize`` bytes."""
        return UINT_OF_SIZE[itemsize].cl_storage

    def vtype(itemsize, vw):
        """The OpenCL vector (or scalar) type of ``vw`` elements of ``itemsize`` bytes."""
        return bits(itemsize) if vw == 1 else f"{bits(itemsize)}{vw}"

    def uvec(itemsize, vw):
        """The element-aligned alias of the ``vw``-wide vector type (declared by ``preamble``)."""
        return f"zyx_{vtype(itemsize, vw)}_u"

    def vload(itemsize, vw, ptr):
        """The ``vw`` elements at element pointer ``ptr`` as one vector: a plain (unaligned) vector
        move through the element-aligned alias. PoCL does not inline ``vloadN``/``vstoreN``: each is a
        call that spills its result (the transposed contiguize ran at a third of its speed)."""
        return ptr if vw == 1 else f"(*(__global const {uvec(itemsize, vw)} *)({ptr}))"

    def lane(l):
        """The component selector of lane ``l`` (``.s0`` .. ``.sF``)."""
        return f".s{_SWIZZLE[l]}"

    def reversed_lanes(vw):
        """A swizzle that reverses a ``vw``-wide vector (``.s3210`` for 4)."""
        return ".s" + "".join(_SWIZZLE[l] for l in reversed(range(vw)))

    def swap_expr(value, word_bytes, sub_bytes):
        """An expression reversing the order of the ``sub_bytes``-wide parts of each
        ``word_bytes``-wide unsigned word (lane) of ``value`` (a bswap for bytes)."""
        s, b = word_bytes // sub_bytes, 8 * sub_bytes
        if s == 1:
            return value
        suffix = "UL" if word_bytes == 8 else "U"
        terms = []
        for j in range(s):
            d = (s - 1 - 2 * j) * b
            if d > 0:
                terms.append(f"(({value} & 0x{((1 << b) - 1) << (j * b):X}{suffix}) << {d})")
            else:
                terms.append(f"(({value} >> {-d}) & 0x{((1 << b) - 1) << ((s - 1 - j) * b):X}{suffix})")
        return "(" + " | ".join(terms) + ")"

    def prod(xs):
        return math.prod(xs) if xs else 1
%>

## Statements: decompose linear element index `var` of a dense array of `shape` into
## coordinates `prefix0 .. prefixN-1` (size-1 axes get the constant 0); indented for the
## body of `loop_head`. With `rows` > 1 (`loop_head`'s 2-D exact grid over rows of that
## many elements) the last axis longer than 1 is `zyx_x` and the axes before it come from
## the row `zyx_y`, so no division runs per element.
<%def name="coords(index_t, var, shape, prefix, rows=0)">\
<%  last = max((k for k, size in enumerate(shape) if size > 1), default=-1) if rows > 1 else -1 %>\
% for k, size in enumerate(shape):
<%  inner = prod(shape[k + 1:last]) if k < last else prod(shape[k + 1:]) %>\
%   if size == 1:
        const ${index_t} ${prefix}${k} = 0;
%   elif k == last:
        const ${index_t} ${prefix}${k} = zyx_x;
%   elif last >= 0 and k == 0 and inner == 1:
        const ${index_t} ${prefix}${k} = zyx_y;
%   elif last >= 0 and k == 0:
        const ${index_t} ${prefix}${k} = zyx_y / ${inner};
%   elif last >= 0 and inner == 1:
        const ${index_t} ${prefix}${k} = zyx_y % ${size};
%   elif last >= 0:
        const ${index_t} ${prefix}${k} = (zyx_y / ${inner}) % ${size};
%   elif k == 0 and inner == 1:
        const ${index_t} ${prefix}${k} = ${var};
%   elif k == 0:
        const ${index_t} ${prefix}${k} = ${var} / ${inner};
%   elif inner == 1:
        const ${index_t} ${prefix}${k} = ${var} % ${size};
%   else:
        const ${index_t} ${prefix}${k} = (${var} / ${inner}) % ${size};
%   endif
% endfor
</%def>

## Expression: sum of coordinate * stride over the axes with a non-zero stride.
<%def name="dot(prefix, strides)">\
<% terms = [f"{prefix}{k} * {s}" if s != 1 else f"{prefix}{k}" for k, s in enumerate(strides) if s != 0] %>\
${" + ".join(terms) if terms else "0"}\
</%def>

## Statement: copy `vw` consecutive elements src[si ..] -> dst[di ..] (streamed when
## `stream`, see `stream_preamble`).
<%def name="move(itemsize, vw, dst, di, src, si, stream=False)">\
% if vw == 1:
${dst}[${di}] = ${src}[${si}];\
% else:
${store(itemsize, vw, dst, di, vload(itemsize, vw, f"{src} + {si}"), stream)}\
% endif
</%def>

## Statement: store the `vw`-wide value `value` at dst[di ..]; with `stream` (and vw > 1)
## through zyx_stream_store (non-temporal when aligned, see `stream_preamble`).
<%def name="store(itemsize, vw, dst, di, value, stream=False)">\
% if vw == 1:
${dst}[${di}] = ${value};\
% elif stream:
zyx_stream_store(${value}, ${dst} + ${di});\
% else:
*(__global ${uvec(itemsize, vw)} *)(${dst} + ${di}) = ${value};\
% endif
</%def>

## The kernel preamble: element-aligned aliases ``zyx_<type><n>_u`` of every unsigned vector
## type (for ``vload``/``store``), and with `stream` the definitions for streamed stores of
## `vw`-wide vectors of `itemsize`-byte elements (common/stream.mako): zyx_stream_store(v, p),
## a plain vector store where p is not aligned to the vector (`aligned`: the caller
## guarantees every p is aligned; no test). Every work-item reaches `stream_fence` at the
## end of the kernel.
<%def name="preamble(itemsize, vw, stream, aligned=False)">\
#ifndef ZYX_UNALIGNED_VECTORS
#define ZYX_UNALIGNED_VECTORS
% for size, t in _UNSIGNED:
typedef ${t}2 zyx_${t}2_u __attribute__((aligned(${size})));
typedef ${t}4 zyx_${t}4_u __attribute__((aligned(${size})));
typedef ${t}8 zyx_${t}8_u __attribute__((aligned(${size})));
typedef ${t}16 zyx_${t}16_u __attribute__((aligned(${size})));
% endfor
#endif
% if stream and vw > 1:
${st.store_fn("zyx_stream_store", vtype(itemsize, vw), bits(itemsize), f"*(__global {uvec(itemsize, vw)} *)zyx_p = zyx_value;", aligned)}\
% endif
</%def>

## Statement: the end-of-kernel fence of streamed stores (nothing unless `stream`).
<%def name="stream_fence(vw, stream)">\
% if stream and vw > 1:
    ZYX_STREAM_FENCE(get_local_id(0) == get_local_size(0) - 1);
% endif
</%def>

## The loop head: work-item g handles `per_item` of the `nvec` vectors of `vw` elements:
## g, g + G, g + 2G, ... (grid-stride), or with `chunked` the consecutive g * per_item ..
## g * per_item + per_item - 1 (streamed stores then fill whole cache lines); the loop
## body sees the first element index as `zyx_i`. Past the end a work-item redoes the last
## vector (the same values to the same places) instead of leaving the loop: no work-item
## branches away, so PoCL keeps vectorizing across them (masked_fill: ~+15-40%). `nvec`
## must be at least 1 when the kernel runs; a literal 0 keeps a plain exit. With `exact`
## 1 each work-item does the one element get_global_id(0) (vw == 1; launched over exactly
## the elements, ``kernels._start_exact``) and the block opened here runs once; `exact` > 1
## is the row length of a 2-D exact grid (``kernels._start_rows``; pass it to `coords`).
<%def name="loop_head(index_t, per_item, nvec, vw, chunked=False, exact=False)">\
% if exact > 1:
    {
        /* one element per work-item over an exact 2-D grid: column x of row y of ${exact}
           elements (no loop, no bounds test, no division: the launcher covers the columns
           with whole work-groups, then the rest of each row as one work-group at a global
           offset), which PoCL's work-group vectorizer turns into wide loads and stores */
        const ${index_t} zyx_x = (${index_t})get_global_id(0);
        const ${index_t} zyx_y = (${index_t})get_global_id(1);
        const ${index_t} zyx_i = zyx_y * ${exact} + zyx_x;
% elif exact:
    {
        /* one element per work-item over an exact grid (no loop, no bounds test: the launcher
           covers the elements with whole work-groups, then the rest with a global offset),
           which PoCL's work-group vectorizer turns into wide loads and stores */
        const ${index_t} zyx_i = (${index_t})get_global_id(0);
% else:
    for (int zyx_k = 0; zyx_k < ${per_item}; ++zyx_k) {
% if chunked:
        ${index_t} zyx_v = (${index_t})get_global_id(0) * ${per_item} + zyx_k;
% else:
        ${index_t} zyx_v = (${index_t})get_global_id(0) + (${index_t})zyx_k * (${index_t})get_global_size(0);
% endif
% if nvec == 0:
        if (zyx_v >= 0) break;
% else:
        zyx_v = zyx_v < ${nvec} ? zyx_v : ${nvec} - 1;
% endif
        const ${index_t} zyx_i = zyx_v${f" * {vw}" if vw > 1 else ""};
% endif
</%def>
