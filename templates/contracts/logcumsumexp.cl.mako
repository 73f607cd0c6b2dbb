<%doc>
logcumsumexp: log(cumsum(exp(x))) along one axis without overflow (the scan of scan.mako
with log-add-exp), folded in `acc` (float for float32/float16/bfloat16, double for
float64) and rounded once to the dtype on store. Each work-item folds its own run of
elements as a running max m and a sum s of exp(x - m) (worth m + log(s)): one exp an element,
the dependency chain only a compare, a select and a multiply-add, and the log (through log2 for
float) off the chain, once per stored value; a scalar log-add-exp chain (exp, log, divide per
element, each waiting on the last) made a 1M-element row ~4x slower than PyTorch on PoCL.
</%doc>\
<%!
    indexed = False

    def identity(p):
        return f"({p['acc']})(-INFINITY)"

    def combine(p, a, b):
        return f"zyx_logaddexp({a}, {b})"

    def better(p, a, b):
        raise NotImplementedError("logcumsumexp carries no index")

    run_fold = True

    def fold_init(p, m, s, start):
        # the value start = m + log(1); -inf (nothing folded yet) and NaN carry through the fold
        return f"{m} = {start}; {s} = 1;"

    def fold_step(p, m, s, x):
        # a larger x rescales the sum to its own max (exp(-inf) = 0 from the empty start); an equal
        # one adds 1 (exp(inf - inf) would be NaN: PyTorch gives that infinity); a NaN x makes s NaN
        a = p["acc"]
        one = "1.0f" if a == "float" else "1.0"
        return (f"{{ const int zyx_up = {x} > {m}; "
                f"const {a} zyx_e = {x} == {m} ? {one} : exp(zyx_up ? {m} - {x} : {x} - {m}); "
                f"{s} = zyx_up ? {s} * zyx_e + {one} : {s} + zyx_e; {m} = zyx_up ? {x} : {m}; }}")

    def fold_run(p, xs, cnt, items, m, s, ws, keep):
        # three passes over the run: the running max before each element (a compare-select chain),
        # each element's exp(-|x - m|) 16 at a time, then the scaled-sum chain (multiply-adds);
        # the same values as fold_step, element by element
        a = p["acc"]
        one = "1.0f" if a == "float" else "1.0"
        store = f" {keep[0]}[zyx_k] = {m}; {keep[1]}[zyx_k] = {s};" if keep else ""
        return f"""{{
        {a} zyx_mm = {m};
        for (int zyx_k = 0; zyx_k < {cnt}; ++zyx_k) {{
            {ws}[zyx_k] = zyx_mm;
            zyx_mm = {xs}[zyx_k] > zyx_mm ? {xs}[zyx_k] : zyx_mm;
        }}
        for (int zyx_k0 = 0; zyx_k0 < {cnt}; zyx_k0 += 16) {{
            const {a}16 zyx_x16 = vload16(0, {xs} + zyx_k0), zyx_p16 = vload16(0, {ws} + zyx_k0);
            vstore16(select(exp(-fabs(zyx_x16 - zyx_p16)), ({a}16)({one}), zyx_x16 == zyx_p16), 0, {ws} + zyx_k0);
        }}
        for (int zyx_k = 0; zyx_k < {cnt}; ++zyx_k) {{
            const {a} zyx_e = {ws}[zyx_k];
            const int zyx_up = {xs}[zyx_k] > {m};
            {s} = zyx_up ? {s} * zyx_e + {one} : {s} + zyx_e;
            {m} = zyx_up ? {xs}[zyx_k] : {m};{store}
        }}
    }}"""

    def fold_value(p, m, s):
        # s >= 1 once an element is folded: log2 (PoCL's float log measured ~5x slower) times ln 2
        if p["acc"] == "float":
            return f"({m} + log2({s}) * 0.693147180559945309f)"
        return f"({m} + log({s}))"
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
