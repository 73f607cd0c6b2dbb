<%doc>
cumprod: running product along one axis (the scan of scan.mako with `*`), accumulated in
`acc` (float for float32/float16/bfloat16, double for float64, long for bool and every
integer dtype, which wrap as in PyTorch) and rounded once to `out_dtype` on store.
</%doc>\
<%!
    indexed = False

    def identity(p):
        return f"({p['acc']})1"

    def combine(p, a, b):
        return f"({a}) * ({b})"

    def better(p, a, b):
        raise NotImplementedError("cumprod carries no index")
%>\
<%inherit file="/contracts/scan.mako"/>\
<%def name="helpers()"></%def>
