## Index and element-move helpers shared by the contract kernel templates.
##
## Byte kernels move elements as unsigned integers of the element's width (uchar,
## ushort, uint, ulong), so one kernel serves every dtype of that size and copies
## NaN payloads bit for bit. Shapes are render-time constants; every helper emits
## plain statements with zyx_-prefixed names.
##
## A template includes this file with <%namespace name="ix" file="/contracts/index.mako"/>.
<%!
    import math

    _BITS = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}
    _SWIZZLE = "0123456789ABCDEF"

    def bits(itemsize):
        """The unsigned OpenCL type holding one element of ``itemsize`` bytes."""
        return _BITS[itemsize]

    def vtype(itemsize, vw):
        """The OpenCL vector (or scalar) type of ``vw`` elements of ``itemsize`` bytes."""
        return _BITS[itemsize] if vw == 1 else f"{_BITS[itemsize]}{vw}"

    def lane(l):
        """The component selector of lane ``l`` (``.s0`` .. ``.sF``)."""
        return f".s{_SWIZZLE[l]}"

    def reversed_lanes(vw):
        """A swizzle that reverses a ``vw``-wide vector (``.s3210`` for 4)."""
        return ".s" + "".join(_SWIZZLE[l] for l in reversed(range(vw)))

    def prod(xs):
        return math.prod(xs) if xs else 1
%>

## Statements: decompose linear element index `var` of a dense array of `shape` into
## coordinates `prefix0 .. prefixN-1` (size-1 axes get the constant 0); indented for the
## body of `loop_head`.
<%def name="coords(index_t, var, shape, prefix)">\
% for k, size in enumerate(shape):
<%  inner = prod(shape[k + 1:]) %>\
%   if size == 1:
        const ${index_t} ${prefix}${k} = 0;
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

## Statement: copy `vw` consecutive elements src[si ..] -> dst[di ..].
<%def name="move(vw, dst, di, src, si)">\
% if vw == 1:
${dst}[${di}] = ${src}[${si}];\
% else:
vstore${vw}(vload${vw}(0, ${src} + ${si}), 0, ${dst} + ${di});\
% endif
</%def>

## The grid-stride loop head: work-item g handles vectors g, g + G, g + 2G, ...
## (`per_item` of them at most) of the `nvec` vectors of `vw` elements; the loop body
## sees the first element index as `zyx_i`.
<%def name="loop_head(index_t, per_item, nvec, vw)">\
    for (int zyx_k = 0; zyx_k < ${per_item}; ++zyx_k) {
        const ${index_t} zyx_v = (${index_t})get_global_id(0) + (${index_t})zyx_k * (${index_t})get_global_size(0);
        if (zyx_v >= ${nvec}) return;
        const ${index_t} zyx_i = zyx_v${f" * {vw}" if vw > 1 else ""};
</%def>
