## Shared float math helpers for IR kernels.
##
## exp_fn(t) defines ``zyx_exp_<t>`` for a float32 scalar or vector type ``t`` (float,
## float2 ... float16). Why not the built-in exp(): on PoCL a scalar exp() is a library
## call per element that stops the work-group loop from vectorizing (16M elements:
## 136 ms against 15 ms for this function), and the vector forms are slower too.
## Accuracy, checked against float64 over [-110, 95] and special values: at most
## 1.001 ulp (PoCL's built-in: 0.94 ulp), denormal results included; NaN in, NaN out;
## exp(-inf) = 0, exp(+inf) = inf.
##
## Method: k = round(x * log2(e)) by the 1.5 * 2^23 magic-number trick, r = x - k*ln(2)
## in two parts (Cody-Waite; k * 0.693359375 is exact), e^r = 1 + r + r^2 * Q(r) with Q of
## degree 5 (zyx's own relative-error least-squares fit on [-ln2/2, ln2/2], 1.3e-10), and
## 2^k applied as two power-of-two factors so that k down to -150 (denormal results) and
## up to 129 (overflow to inf) scale correctly.
##
## All polynomial coefficients in this file are zyx's own float64 least-squares fits
## (weighted for relative error), rounded to float32.
<%def name="exp_fn(t)">\
<% it = t.replace("float", "int") %>\
inline ${t} zyx_exp_${t}(${t} x)
{
    const ${t} xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    const ${t} kb = xc * 1.44269504088896341f + 12582912.0f;  /* 1.5 * 2^23 + k: k in the low mantissa bits */
    const ${t} k = kb - 12582912.0f;
    const ${t} r = (xc - k * 0.693359375f) + k * 2.12194440e-4f;
    ${t} p = 1.981821988010779e-04f * r + 1.3942172518000007e-03f;
    p = p * r + 8.33343155682087e-03f;
    p = p * r + 4.166632518172264e-02f;
    p = p * r + 1.666666567325592e-01f;
    p = p * r + 0.5f;
    p = p * (r * r) + r + 1.0f;
    const ${it} ki = as_${it}(kb) - 0x4B400000;  /* no float-to-int convert: LLVM 14 cannot select a 16-wide one on AVX-512 */
    const ${it} k1 = ki >> 1;
    const ${t} y = p * as_${t}((k1 + 127) << 23) * as_${t}((ki - k1 + 127) << 23);
    return x != x ? x : y;
}
</%def>

## erf_fn(t) defines ``zyx_erf_<t>`` (it calls ``zyx_exp_<t>``: define that first). On PoCL
## the built-in erf() is a library call per element, 15-40x slower than this vectorized
## form. Accuracy, against float64 over [-6, 6] and special values: at most 1.17 ulp
## (built-in: 0.85 ulp); odd; NaN in, NaN out; +-1 beyond |x| = 4 (erf(3.92) already
## rounds to 1).
## |x| < 1: erf(x) = x + x * P(x^2), with P = erf(x)/x - 1 as a degree-6 polynomial.
## 1 <= |x| < 4: erf(x) = 1 - exp(-x^2) * Q(t), t = (|x| - 2.5) / 1.5 in [-1, 1], Q a degree-12
## polynomial for erfc(x) * exp(x^2) (fits with relative error 2.9e-9 and 1.9e-8).
<%def name="erf_fn(t)">\
inline ${t} zyx_erf_${t}(${t} x)
{
    const ${t} a = x < 0.0f ? -x : x;
    const ${t} s = a * a;
    ${t} p = 7.843389903428033e-05f * s - 8.003770490176976e-04f;
    p = p * s + 5.187139846384525e-03f;
    p = p * s - 2.6852866634726524e-02f;
    p = p * s + 1.1283551156520844e-01f;
    p = p * s - 3.761261999607086e-01f;
    p = p * s + 1.2837916612625122e-01f;
    const ${t} near = a + a * p;
    const ${t} b = a < 1.0f ? 1.0f : (a > 4.0f ? 4.0f : a);
    const ${t} u = (b - 2.5f) * 0.6666666666666667f;
    ${t} q = 1.2229435014887713e-05f * u - 3.5996341466670856e-05f;
    q = q * u + 5.944714939687401e-05f;
    q = q * u - 1.4634021499659866e-04f;
    q = q * u + 4.0976383024826646e-04f;
    q = q * u - 1.014905283227563e-03f;
    q = q * u + 2.4039873387664557e-03f;
    q = q * u - 5.568219348788261e-03f;
    q = q * u + 1.248921174556017e-02f;
    q = q * u - 2.700558304786682e-02f;
    q = q * u + 5.611051246523857e-02f;
    q = q * u - 1.1152101308107376e-01f;
    q = q * u + 2.1080636978149414e-01f;
    const ${t} far = 1.0f - zyx_exp_${t}(-(b * b)) * q;
    const ${t} m = a < 1.0f ? near : (a < 4.0f ? far : 1.0f);
    return x < 0.0f ? -m : (x != x ? x : m);
}
</%def>

## log_fn(t, base2) defines ``zyx_log_<t>`` (``zyx_log2_<t>`` with base2): the natural
## (base-2) log of float32 values, vectorizable (PoCL's scalar log() is an out-of-line call). x = m * 2^e with m in [sqrt(1/2), sqrt(2)) found on
## the bit pattern (denormals scaled by 2^23 first); with f = m - 1,
## log(1 + f) = f - f^2/2 + f^3 * L(f), L of degree 8 (fit 2.3e-9), plus e * ln(2) in two
## parts (log2: e + log(1 + f) / ln(2), exact at powers of two, at most 1 ulp). log(0) = -inf,
## log(x < 0) = NaN, log(inf) = inf, NaN in, NaN out.
<%def name="log_fn(t, base2=False)">\
<% it = t.replace("float", "int") %>\
inline ${t} zyx_log${"2" if base2 else ""}_${t}(${t} x)
{
    const ${t} tiny = x < 1.17549435e-38f ? 8388608.0f : 1.0f;
    const ${it} ix = as_${it}(x * tiny) - 0x3f3504f3;
    const ${t} e = convert_${t}(ix >> 23) - (x < 1.17549435e-38f ? 23.0f : 0.0f);
    const ${t} f = as_${t}((ix & 0x007fffff) + 0x3f3504f3) - 1.0f;
    ${t} l = 6.60741850733757e-02f * f - 1.1506577581167221e-01f;
    l = l * f + 1.1857413500547409e-01f;
    l = l * f - 1.2429618090391159e-01f;
    l = l * f + 1.42264723777771e-01f;
    l = l * f - 1.66670024394989e-01f;
    l = l * f + 2.000177949666977e-01f;
    l = l * f - 2.500002086162567e-01f;
    l = l * f + 3.3333316445350647e-01f;
    const ${t} f2 = f * f;
% if base2:
    /* f / ln(2) with its rounding error kept (fma), so that the result rounds once */
    const ${t} hi = f * 1.4426950216293335f;
    const ${t} lo = fma(f, 1.4426950216293335f, -hi) + f * 1.925963033500935e-08f;
    const ${t} y = e + (hi + (lo + (f2 * f * l - 0.5f * f2) * 1.4426950408889634f));
% else:
    const ${t} y = (e * -2.12194440e-4f + (f2 * f * l - 0.5f * f2)) + f + e * 0.693359375f;
% endif
    return x > 0.0f ? (x < INFINITY ? y : x) : (x == 0.0f ? -INFINITY : (x != x ? x : NAN));
}
</%def>

## Sine and cosine share one core: with theta in [-pi/4, pi/4] and q the quarter turns
## removed, sin = theta + theta^3 * S(theta^2) and cos = 1 - theta^2/2 + theta^4 * C(theta^2)
## (S, C of degree 3, fits 1.4e-11 and 3.4e-13); q mod 4 then rotates the pair. The
## statements leave ``zyx_sn``, ``zyx_cs`` (theta's) and ``zyx_q`` (q mod 4, an int type).
<%def name="_quarter_sincos(t, th, k)">\
<% it = t.replace("float", "int") %>\
    const ${t} zyx_s2 = ${th} * ${th};
    ${t} zyx_sp = 2.719969643294462e-06f * zyx_s2 - 1.983950933208689e-04f;
    zyx_sp = zyx_sp * zyx_s2 + 8.333330042660236e-03f;
    zyx_sp = zyx_sp * zyx_s2 - 1.666666716337204e-01f;
    const ${t} zyx_sn = ${th} + ${th} * (zyx_s2 * zyx_sp);
    ${t} zyx_cp = -2.721869805100141e-07f * zyx_s2 + 2.4799619495752268e-05f;
    zyx_cp = zyx_cp * zyx_s2 - 1.3888884568586946e-03f;
    zyx_cp = zyx_cp * zyx_s2 + 4.16666679084301e-02f;
    const ${t} zyx_hz = 0.5f * zyx_s2, zyx_w = 1.0f - zyx_hz;  /* 1 - hz's rounding error put back */
    const ${t} zyx_cs = zyx_w + (((1.0f - zyx_w) - zyx_hz) + zyx_s2 * zyx_s2 * zyx_cp);
    const ${it} zyx_q = convert_${it}(${k}) & 3;
</%def>

<%def name="_rotated(which)">\
% if which == "sin":
zyx_q == 0 ? zyx_sn : (zyx_q == 1 ? zyx_cs : (zyx_q == 2 ? -zyx_sn : -zyx_cs))\
% else:
zyx_q == 0 ? zyx_cs : (zyx_q == 1 ? -zyx_sn : (zyx_q == 2 ? -zyx_cs : zyx_sn))\
% endif
</%def>

## sincos_turn_fn(t) defines ``zyx_sincos_turn_<t>(u, *c)``: sin(2 pi u), and cos(2 pi u)
## into *c, for u in [0, 1) only (the Box-Muller angle of the random kernels): the quarter
## turn k = round(4u) leaves theta = 2 pi (u - k/4).
<%def name="sincos_turn_fn(t)">\
inline ${t} zyx_sincos_turn_${t}(${t} u, ${t} *cos_out)
{
    const ${t} k = (u * 4.0f + 12582912.0f) - 12582912.0f;
    const ${t} th = (u - k * 0.25f) * 6.283185307179586f;
${_quarter_sincos(t, "th", "k")}\
    *cos_out = ${_rotated("cos")};
    return ${_rotated("sin")};
}
</%def>

## trig_fn(t, which) defines ``zyx_sin_<t>`` or ``zyx_cos_<t>`` (which = "sin" / "cos") for
## float32: k = round(x * 2/pi) quarter turns removed with pi/2 split in three float32
## parts through fma (exact enough for |x| < 65536); lanes beyond that take the scalar
## built-in one by one (a branch not taken in ordinary use; see ``_big_lanes``), inf/NaN give
## NaN. At most 1.45 ulp against float64 (PoCL's built-ins: 1.6 ulp), 10-15x faster than
## the scalar built-ins on PoCL.
<%def name="trig_fn(t, which)">\
${_big_fn(which)}\
inline ${t} zyx_${which}_${t}(${t} x0)
{
    const ${t} x = fabs(x0) < 65536.0f ? x0 : 0.0f;  /* the lanes the polynomial serves */
    const ${t} k = (x * 0.6366197723675814f + 12582912.0f) - 12582912.0f;
    ${t} th = fma(-k, 1.5707963705062866f, x);
    th = fma(-k, -4.371138828673793e-08f, th);
    th = fma(-k, -1.7151245100058819e-15f, th);
${_quarter_sincos(t, "th", "k")}\
% if which == "sin":
    ${t} zyx_r = x == 0.0f ? x : (${_rotated(which)});  /* sin(-0) = -0 */
% else:
    ${t} zyx_r = ${_rotated(which)};
% endif
${_big_lanes(t, which, "x0", "zyx_r")}\
    return zyx_r;
}
</%def>

## guarded_fn(t, fn) defines ``zyx_<fn>_<t>``: the built-in ``fn``, except that a vector
## holding a lane of magnitude 65536 or more (or inf/NaN) goes lane by lane through the
## scalar built-in (inf/NaN answered NaN): PoCL's vector tan (like its sin/cos) returns
## wrong values in every lane of such a vector (tan(1e-3) = 0.008 next to 1e10, tan(1e-30)
## = 0.0099 next to an inf).
<%def name="guarded_fn(t, fn)">\
${_big_fn(fn)}\
inline ${t} zyx_${fn}_${t}(${t} x)
{
    ${t} zyx_r = ${fn}(fabs(x) < 65536.0f ? x : 0.0f);
${_big_lanes(t, fn, "x", "zyx_r")}\
    return zyx_r;
}
</%def>

## _big_fn(fn): the scalar ``zyx_<fn>_big(x)``: the built-in on a finite float, NaN for inf/NaN
## (defined once per source).
<%def name="_big_fn(fn)">\
#ifndef ZYX_${fn.upper()}_BIG
#define ZYX_${fn.upper()}_BIG
inline float zyx_${fn}_big(float x) { return fabs(x) < INFINITY ? ${fn}(x) : x - x; }
#endif
</%def>

## _big_lanes(t, fn, x, r): statements replacing each lane of ``r`` whose ``x`` lane has magnitude
## 65536 or more (or is inf/NaN) with the scalar zyx_<fn>_big of it.
<%def name="_big_lanes(t, fn, x, r)">\
<% lanes = int(t[len("float"):] or 1) %>\
% if lanes == 1:
    if (!(fabs(${x}) < 65536.0f)) ${r} = zyx_${fn}_big(${x});
% else:
    if (any(!(fabs(${x}) < 65536.0f))) {
%   for l in range(lanes):
<% c = "0123456789abcdef"[l] %>\
        if (!(fabs(${x}.s${c}) < 65536.0f)) ${r}.s${c} = zyx_${fn}_big(${x}.s${c});
%   endfor
    }
% endif
</%def>
