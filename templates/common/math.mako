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
## in two parts (Cody-Waite; k * 0.693359375 is exact), a degree-6 polynomial for e^r
## (Cephes' expf coefficients), and 2^k applied as two power-of-two factors so that
## k down to -150 (denormal results) and up to 129 (overflow to inf) scale correctly.
<%def name="exp_fn(t)">\
<% it = t.replace("float", "int") %>\
inline ${t} zyx_exp_${t}(${t} x)
{
    const ${t} xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    const ${t} k = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const ${t} r = (xc - k * 0.693359375f) + k * 2.12194440e-4f;
    ${t} p = 1.9875691500e-4f * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const ${it} ki = convert_${it}(k);
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
## polynomial for erfc(x) * exp(x^2). Both are zyx's own relative-error least-squares fits
## in float64 (relative error 2.9e-9 and 1.9e-8), rounded to float32 coefficients.
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
