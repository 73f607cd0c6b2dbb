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
/* log(exp(a) + exp(b)) as PyTorch computes it: a NaN b propagates; two equal infinities
   give that infinity (their difference would be NaN); else the larger plus log1p(exp(-gap)). */
inline ${acc} zyx_logaddexp(const ${acc} a, const ${acc} b) {
    const ${acc} lo = isnan(b) ? b : (b < a ? b : a);
    const ${acc} hi = isnan(b) ? b : (a < b ? b : a);
    if (lo != hi || isfinite(lo)) return hi + log1p(exp(lo - hi));
    return a;
}
</%def>
