## Shared dtype helpers for every zyx kernel template.
##
## Values are computed in a "compute type" (dtype.compute_ctype): bool -> uchar (0/1),
## integers natively, float32 -> float, float64 -> double, and float16/bfloat16/float8
## in float32 holding a value exactly representable in the dtype. Storage keeps each
## dtype's own width; conversions below are round-to-nearest-even with NaN preserved.
##
## A template includes this file with <%namespace name="dt" file="/common/dtypes.mako"/>
## and calls ${dt.preamble(dtypes)} once at the top of the source. Its public module-level
## functions (``dt.attr.uint_type``, ``dt.attr.bits_type``, ``dt.attr.ctype``) serve other templates.

<%def name="_minifloat(fmt, E, M, ieee)">\
<%
    bias = (1 << (E - 1)) - 1
    expmask = (1 << E) - 1
    mmask = (1 << M) - 1
    shift = 23 - M
    magmask = (expmask << M) + mmask
    maxbits = ((expmask << M) - 1) if ieee else ((expmask << M) | (mmask - 1))
    nanbits = ((expmask << M) | (1 << (M - 1))) if ieee else ((expmask << M) | mmask)
%>\
/* ${fmt}: ${E} exponent bits, ${M} mantissa bits, bias ${bias}${'' if ieee else ', no infinities'}.
   Branch-free: every path is computed and picked with selects; all intermediate
   float values are normal or zero (no reliance on denormal arithmetic). */
inline uint zyx_f32_to_${fmt}(float f) {
    uint x = as_uint(f);
    uint sign = (x >> 31) << ${E + M};
    uint ax = x & 0x7fffffffu;
% if E < 8:
    /* normal range: round-to-nearest-even on the bit pattern, then rebias */
    uint r = ((ax + ${(1 << (shift - 1)) - 1}u + ((ax >> ${shift}) & 1u)) >> ${shift}) - ${(127 - bias) << M}u;
    /* below the smallest normal: adding 2^${1 - bias - M + 23} puts the subnormal ulp at the
       float32 ulp, so the FPU's round-to-nearest-even does the rounding */
    uint rs = as_uint(as_float(ax) + ${float(2.0 ** (1 - bias - M + 23))}f) - ${(127 + 1 - bias - M + 23) << 23}u;
    r = (ax < ${(127 - bias + 1) << 23}u) ? rs : r;
% else:
    uint r = (ax + ${(1 << (shift - 1)) - 1}u + ((ax >> ${shift}) & 1u)) >> ${shift};
% endif
    r = (r > ${maxbits}u) ? ${(expmask << M) if ieee else nanbits}u : r;  /* overflow (and inf) -> ${'infinity' if ieee else 'NaN (no infinity)'} */
% if ieee:
    r = (ax > 0x7f800000u) ? (${nanbits}u | ((ax >> ${shift}) & ${mmask}u)) : r;  /* NaN: keep top payload bits */
% else:
    r = (ax > 0x7f800000u) ? ${nanbits}u : r;  /* NaN */
% endif
    return sign | r;
}

inline float zyx_${fmt}_to_f32(uint h) {
% if E == 8:
    return as_float(h << 16);
% else:
    uint e = (h >> ${M}) & ${expmask}u;
    uint m = h & ${mmask}u;
    /* normal: shift exponent/mantissa into place and rebias in the integer domain */
    uint bits = (((h & ${magmask}u) << ${shift}) + ${(127 - bias) << 23}u);
    /* subnormal (e == 0): 2^${1 - bias} * 1.m - 2^${1 - bias} = m * 2^${1 - bias - M}, exact */
    uint sub = as_uint(as_float(bits + 0x00800000u) - ${float(2.0 ** (1 - bias))}f);
    bits = (e == 0u) ? sub : bits;
% if ieee:
    bits = (e == ${expmask}u) ? (0x7f800000u | (m << ${shift}) | (m ? 0x00400000u : 0u)) : bits;
% else:
    bits = ((h & ${magmask}u) == ${magmask}u) ? 0x7fc00000u : bits;
% endif
    return as_float(bits | ((h >> ${E + M}) << 31));
% endif
}
</%def>

<%def name="preamble(dtypes)">\
<%
    names = {d.name for d in dtypes}
%>\
% if "float64" in names:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
% if "float16" in names:
${_minifloat("f16", 5, 10, True)}
% endif
% if "bfloat16" in names:
${_minifloat("bf16", 8, 7, True)}
% endif
% if "float8_e4m3" in names:
${_minifloat("f8e4m3", 4, 3, False)}
% endif
% if "float8_e5m2" in names:
${_minifloat("f8e5m2", 5, 2, True)}
% endif
</%def>

<%!
    # Python-side tables shared by the defs below (module-level, computed once).
    from zyx.dtype import UINT_OF_SIZE

    _FMT = {"float16": "f16", "bfloat16": "bf16", "float8_e4m3": "f8e4m3", "float8_e5m2": "f8e5m2"}

    def ctype(d):
        """The OpenCL type zyx computes values of dtype ``d`` in."""
        if d.name in _FMT or d.name == "float32":
            return "float"
        if d.name == "float64":
            return "double"
        if d.name == "bool":
            return "uchar"
        return d.cl_storage

    def uint_type(itemsize):
        """The unsigned OpenCL type of ``itemsize`` bytes (zyx.dtype.UINT_OF_SIZE, the one table)."""
        return UINT_OF_SIZE[itemsize].cl_storage

    def bits_type(d):
        """An unsigned OpenCL type of the dtype's width, for raw (bit-exact) copies."""
        return uint_type(d.itemsize)
%>

## Expression: the element ptr[idx] of dtype d as a compute-type value.
## float16 uses the bit conversions above rather than vload_half / vstore_half_rte: on
## PoCL 3.0 (pthread) the built-ins measured 5x slower (16M float32 -> float16: 204 ms vs
## 38 ms; float16 -> float32: 37 ms vs 15 ms) with identical bits (tests cover all 65536).
<%def name="load(d, ptr, idx)">\
% if d.name in _FMT:
zyx_${_FMT[d.name]}_to_f32(${ptr}[${idx}])\
% elif d.name == "bool":
(uchar)(${ptr}[${idx}] != 0)\
% else:
${ptr}[${idx}]\
% endif
</%def>

## Expression: the storage bits (of d's width) of float compute value v rounded to 16-/8-bit float d.
<%def name="to_bits(d, v)">\
(${d.cl_storage})zyx_f32_to_${_FMT[d.name]}(${v})\
</%def>

## Expression: the float value of 16-/8-bit float d's storage bits.
<%def name="from_bits(d, bits)">\
zyx_${_FMT[d.name]}_to_f32(${bits})\
</%def>

## Statement: store compute-type value v into ptr[idx] as dtype d.
<%def name="store(d, ptr, idx, v)">\
% if d.name in _FMT:
${ptr}[${idx}] = (${d.cl_storage})zyx_f32_to_${_FMT[d.name]}(${v});\
% else:
${ptr}[${idx}] = ${v};\
% endif
</%def>

## Expression: compute-type value v of dtype s converted to dtype d (PyTorch semantics:
## float -> int truncates toward zero, saturating, NaN -> 0; -> bool is != 0;
## 16/8-bit floats round through float32 with round-to-nearest-even).
<%def name="convert(s, d, v)">\
% if s.name == d.name:
${v}\
% elif d.name == "bool":
(uchar)((${v}) != 0)\
% elif d.is_int and s.is_float:
## NaN -> 0 explicitly: PoCL's convert_*_sat_rtz returns INT_MIN (or garbage) for NaN
(isnan(${v}) ? (${d.cl_storage})0 : convert_${d.cl_storage}_sat_rtz(${v}))\
% elif d.is_int:
(${d.cl_storage})(${v})\
% elif d.name in _FMT:
zyx_${_FMT[d.name]}_to_f32(zyx_f32_to_${_FMT[d.name]}(${'(float)' if s.name == 'bool' else 'convert_float'}(${v})))\
% elif s.name == "bool":
(${ctype(d)})(${v})\
% else:
convert_${ctype(d)}(${v})\
% endif
</%def>

## Statement: store compute-type value v of dtype s into ptr[idx] as dtype d (one rounding).
<%def name="store_converted(s, d, ptr, idx, v)">\
% if d.name in _FMT and s.name != d.name:
${store(d, ptr, idx, ("(float)(%s)" if s.name == "bool" else "convert_float(%s)") % v)}\
% else:
${store(d, ptr, idx, capture(convert, s, d, v))}\
% endif
</%def>
