## Order-preserving unsigned keys for sorting and searching (templates/sorting/*.cl.mako).
##
## A key is an unsigned integer of the dtype's width whose unsigned order is PyTorch's order
## of the values: unsigned ints and bool as they are, signed ints with the sign bit flipped,
## floats (sign-magnitude) with negatives inverted and positives offset by the sign bit, -0.0
## taken as +0.0 and every NaN as the all-ones key (NaN sorts largest). Descending order is
## the complement of the key (``flip``), so NaN then comes first, as in PyTorch. Values themselves are
## only ever copied as raw bits: no float arithmetic, so 16-bit and 8-bit floats need no
## emulation here.
##
## A template includes this file with <%namespace name="sk" file="/common/sortkey.mako"/>
## and calls ${sk.key_fn(dtype, "zyx_key")} once. Descending keys are ``zyx_key(b) ^ flip`` with
## ``flip`` the all-ones run-time argument (one build serves both directions).

<%!
    from zyx.dtype import UINT_OF_SIZE

    # float formats: (exponent bits, mantissa bits, has infinities and IEEE NaNs)
    _FLOATS = {"float16": (5, 10, True), "bfloat16": (8, 7, True), "float32": (8, 23, True),
               "float64": (11, 52, True), "float8_e5m2": (5, 2, True), "float8_e4m3": (4, 3, False)}

    def key_type(d):
        """The OpenCL unsigned type of the keys of dtype ``d`` (its storage width)."""
        return UINT_OF_SIZE[d.itemsize].cl_storage

    def _lit(v, d):
        return f"(({key_type(d)}){v:#x}{'UL' if d.itemsize == 8 else 'U'})"
%>

## Function: ``K name(K bits)``, the key of one element's raw storage bits.
<%def name="key_fn(d, name)">\
<%
    K = key_type(d)
    bits = 8 * d.itemsize
    sign = _lit(1 << (bits - 1), d)
    ones = _lit((1 << bits) - 1, d)
%>\
inline ${K} ${name}(${K} zyx_b) {
% if d.kind in ("bool", "uint"):
    ${K} zyx_k = zyx_b;
% elif d.kind == "int":
    ${K} zyx_k = zyx_b ^ ${sign};
% else:
<%
    E, M, ieee = _FLOATS[d.name]
    mag = (1 << (bits - 1)) - 1
    nan_above = ((1 << E) - 1) << M if ieee else mag - 1  # the largest magnitude that is not NaN
%>\
    const ${K} zyx_mag = zyx_b & ${_lit(mag, d)};
    ${K} zyx_k = (zyx_b & ${sign}) ? (${K})~zyx_b : (${K})(zyx_b | ${sign});
    zyx_k = zyx_mag == 0 ? ${sign} : zyx_k;  /* -0.0 == +0.0 */
    zyx_k = zyx_mag > ${_lit(nan_above, d)} ? ${ones} : zyx_k;  /* every NaN: the largest key */
% endif
    return zyx_k;
}
</%def>

## Function: ``Kn name(Kn bits)``, the keys of ``n`` elements' raw storage bits as one vector
## (the same keys as key_fn, computed with selects: vector relational results and the sign
## bit of the bits themselves pick through their most significant bit).
<%def name="key_vec_fn(d, n, name)">\
<%
    K = key_type(d)
    V = f"{K}{n}"
    bits = 8 * d.itemsize
    sign = _lit(1 << (bits - 1), d)
    ones = _lit((1 << bits) - 1, d)
%>\
inline ${V} ${name}(${V} zyx_b) {
% if d.kind in ("bool", "uint"):
    return zyx_b;
% elif d.kind == "int":
    return zyx_b ^ (${V})${sign};
% else:
<%
    E, M, ieee = _FLOATS[d.name]
    mag = (1 << (bits - 1)) - 1
    nan_above = ((1 << E) - 1) << M if ieee else mag - 1
    S = {1: "char", 2: "short", 4: "int", 8: "long"}[d.itemsize] + str(n)
%>\
    const ${V} zyx_mag = zyx_b & (${V})${_lit(mag, d)};
    ${V} zyx_k = select(zyx_b | (${V})${sign}, ~zyx_b, as_${S}(zyx_b));
    zyx_k = select(zyx_k, (${V})${sign}, zyx_mag == (${V})0);
    return select(zyx_k, (${V})${ones}, zyx_mag > (${V})${_lit(nan_above, d)});
% endif
}
</%def>

## Expression: whether key ``k`` (ascending) is a NaN's (only floats have NaN keys).
<%def name="is_nan_key(d, k)">\
% if d.kind == "float":
(${k} == ${_lit((1 << (8 * d.itemsize)) - 1, d)})\
% else:
0\
% endif
</%def>
