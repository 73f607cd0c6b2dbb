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
