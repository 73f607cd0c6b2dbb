<%doc>
cummax / cummin (`op`): the running maximum or minimum along one axis and the index where
it was taken (the indexed scan of scan.mako). As PyTorch: a value equal to the running one
replaces it (ties give the last index), and NaN beats everything, a later NaN replacing an
earlier one. Values are compared in `acc` (float for 16-bit floats: exact) and stored unchanged.
</%doc>\
<%!
    indexed = True

    def identity(p):
        """The lowest (max) or highest (min) value of acc: any element replaces it."""
        acc, hi = p["acc"], p["op"] == "min"
        if p["float_acc"]:
            return f"({acc})({'' if hi else '-'}INFINITY)"
        limits = {"uchar": ("0", "UCHAR_MAX"), "char": ("CHAR_MIN", "CHAR_MAX"), "short": ("SHRT_MIN", "SHRT_MAX"),
                  "int": ("INT_MIN", "INT_MAX"), "long": ("LONG_MIN", "LONG_MAX")}
        return f"({acc}){limits[acc][hi]}"

    def combine(p, a, b):
        raise NotImplementedError("cummax and cummin carry an index")

    def better(p, a, b):
        cmp = ">=" if p["op"] == "max" else "<="
        if p["float_acc"]:
            return f"isnan({b}) || (!isnan({a}) && {b} {cmp} {a})"
        return f"{b} {cmp} {a}"
%>\
<%inherit file="/contracts/scan.mako"/>\
<%def name="helpers()"></%def>
