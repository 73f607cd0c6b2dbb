<%doc>
logcumsumexp: log(cumsum(exp(x))) along one axis without overflow (the scan of scan.mako
with log-add-exp), folded in `acc` (float for float32/float16/bfloat16, double for
float64) and rounded once to the dtype on store.
</%doc>\
<%!
    indexed = False

    def identity(p):
        return f"({p['acc']})(-INFINITY)"

    def combine(p, a, b):
        return f"zyx_logaddexp({a}, {b})"

    def better(p, a, b):
        raise NotImplementedError("logcumsumexp carries no index")
%>\
<%inherit file="/contracts/scan.mako"/>\
<%def name="helpers()">\
% if acc == "float":
/* log1p(t) for t in [0, 1] through log2 (PoCL's float log and log1p measured ~5x slower than
   log2 here): log(1 + t) * t / ((1 + t) - 1) cancels the rounding of 1 + t (Goldberg). */
inline float zyx_log1p(const float t) {
    const float u = 1.0f + t;
    return u == 1.0f ? t : log2(u) * (0.693147180559945309f * t / (u - 1.0f));
}
% endif
/* log(exp(a) + exp(b)) as PyTorch computes it: a NaN b propagates; two equal infinities
   give that infinity (their difference would be NaN); else the larger plus log1p(exp(-gap)). */
inline ${acc} zyx_logaddexp(const ${acc} a, const ${acc} b) {
    const ${acc} lo = isnan(b) ? b : (b < a ? b : a);
    const ${acc} hi = isnan(b) ? b : (a < b ? b : a);
    if (lo != hi || isfinite(lo)) return hi + ${"zyx_log1p" if acc == "float" else "log1p"}(exp(lo - hi));
    return a;
}
</%def>
