<%doc>
An IR kernel (zyx.codegen.ir_source): one statement per line, values in compute types.
Parameters: name, header (comment lines), bufs ((name, dtype, is_output) ...), params ((name, C type) ...:
scalar arguments after the buffers), dtypes
(every dtype used, for the conversion preamble), index_t, items (work items needed),
split (work items per output tile, sharing its reduce through local memory; otherwise the launch
has exactly ``items`` work items and the kernel no bounds test), stmts (statement records,
each with a ``kind`` and named fields: zyx.codegen.ir_source.Statement), uses_ipow, uses_floordiv
(float // as PyTorch and Python compute it, for float and double scalars and vectors), err_flag (the error-flag parameter's name
or None: an int the kernel atomic_or's error bits into), vec_types
((vector type, element alignment) pairs: each gets a typedef ``zyx_<type>_u`` with that alignment,
for unaligned whole-vector loads and stores), helpers ((fn, types) for each float32 function
of common/math.mako: the scalar/vector types whose ``zyx_<fn>_<type>`` the statements call;
erf calls exp), stream_types (output vector types stored through
``zyx_stream_store_<type>``, common/stream.mako).
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%namespace name="fm" file="/common/math.mako"/>\
<%namespace name="st" file="/common/stream.mako"/>\
/*
% for line in header:
 * ${line}
% endfor
 */
${dt.preamble(dtypes)}
inline long zyx_floordiv(long a, long b) { long q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
inline long zyx_floormod(long a, long b) { long r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
inline float zyx_fmod_py(float a, float b) { float r = fmod(a, b); return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r; }
% if any(d.name == "float64" for d in dtypes):
inline double zyx_fmod_py_d(double a, double b) { double r = fmod(a, b); return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r; }
% endif
% if uses_floordiv:
/* a // b for floats as PyTorch and Python: from fmod, so 1 // 0.1 is 9 (floor(1 / 0.1) is 10),
   inf // b is nan, -3 // inf is -1 */
#define ZYX_FLOORDIV(T) inline T __attribute__((overloadable)) zyx_floordiv_py(T a, T b) { \
    const T m = fmod(a, b); \
    T d = (a - m) / b; \
    d = (m != (T)0 && ((b < (T)0) != (m < (T)0))) ? d - (T)1 : d; \
    T f = floor(d); \
    f = (d - f > (T)0.5) ? f + (T)1 : f; \
    f = d != (T)0 ? f : copysign((T)0, a / b); \
    return b == (T)0 ? a / b : f; }
ZYX_FLOORDIV(float) ZYX_FLOORDIV(float2) ZYX_FLOORDIV(float4) ZYX_FLOORDIV(float8) ZYX_FLOORDIV(float16)
%   if any(d.name == "float64" for d in dtypes):
ZYX_FLOORDIV(double) ZYX_FLOORDIV(double2) ZYX_FLOORDIV(double4) ZYX_FLOORDIV(double8) ZYX_FLOORDIV(double16)
%   endif
% endif
% if uses_ipow:
inline long zyx_ipow(long a, long b) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    long r = 1;
    while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
    return r;
}
% endif
<% math_types = dict(helpers) %>\
% for t in sorted(set(math_types["exp"]) | set(math_types["erf"])):
${fm.exp_fn(t)}
% endfor
% for t in math_types["erf"]:
${fm.erf_fn(t)}
% endfor
% for t in math_types["log"]:
${fm.log_fn(t)}
% endfor
% for t in math_types["log2"]:
${fm.log_fn(t, base2=True)}
% endfor
% for which in ("sin", "cos"):
%   for t in math_types[which]:
${fm.trig_fn(t, which)}
%   endfor
% endfor
% for t in math_types["tan"]:
${fm.guarded_fn(t, "tan")}
% endfor
% for vt, align in vec_types:
typedef ${vt} zyx_${vt}_u __attribute__((aligned(${align})));
% endfor
% for vt in stream_types:
${st.store_fn(f"zyx_stream_store_{vt}", vt, vt.rstrip("0123456789"), f"*(__global zyx_{vt}_u *)zyx_p = zyx_value;")}
% endfor

__kernel void ${name}(
% for i, (bname, bd, is_out) in enumerate(bufs):
    __global ${'' if is_out else 'const '}${bd.cl_storage} *restrict ${bname}${',' if i + 1 < len(bufs) or params or err_flag else ''}
% endfor
% for i, (pname, pt) in enumerate(params):
    const ${pt} ${pname}${',' if i + 1 < len(params) or err_flag else ''}
% endfor
% if err_flag:
    __global int *${err_flag}
% endif
)
{
% if split > 1:
    const ${index_t} zyx_tile = get_global_id(0) / ${split};  // ${split} items share a tile's reduce
    const int zyx_lid = get_local_id(0);
    const int zyx_sid = zyx_lid % ${split};
    const ${index_t} gid = zyx_tile < ${items} ? zyx_tile : ${items - 1};  // past the end: reach the barriers
% else:
    const ${index_t} gid = get_global_id(0);
% endif
<% depth = 1 %>\
% for s in stmts:
<% pad = "    " * depth %>\
% if s.kind == "define":
${pad}const ${index_t} ${s.name} = ${s.expr};
% elif s.kind == "let":
${pad}const ${s.ctype} ${s.name} = ${s.expr};
% elif s.kind == "round":
${pad}const ${s.dtype.cl_storage} ${s.name}_bits = ${dt.to_bits(s.dtype, s.expr)};
${pad}const ${s.ctype} ${s.name} = ${dt.from_bits(s.dtype, s.name + "_bits")};
% elif s.kind == "read":
%   if s.valid is None:
${pad}const ${s.ctype} ${s.name} = ${dt.load(s.dtype, s.buf, s.index)};
%   else:
${pad}const ${s.ctype} ${s.name} = (${s.valid}) ? ${dt.load(s.dtype, s.buf, s.index)} : ${s.other};
%   endif
% elif s.kind == "convert" and s.bits:
${pad}const ${s.dtype.cl_storage} ${s.name}_bits = ${dt.to_bits(s.dtype, ('(float)(%s)' if s.src.name == 'bool' else 'convert_float(%s)') % s.value)};
${pad}const ${s.ctype} ${s.name} = ${dt.from_bits(s.dtype, s.name + "_bits")};
% elif s.kind == "convert":
${pad}const ${s.ctype} ${s.name} = ${dt.convert(s.src, s.dtype, s.value)};
% elif s.kind == "acc":
${pad}${s.ctype} ${s.name} = ${s.init};
% elif s.kind == "line":
${pad}${s.text}
% elif s.kind == "local":
${pad}__local ${s.ctype} ${s.name}[${s.size}];
% elif s.kind == "open":
${pad}${s.head} {
<% depth += 1 %>\
% elif s.kind == "close":
<% depth -= 1 %>\
${"    " * depth}}
% elif s.kind == "loop":
${pad}for (${index_t} ${s.var} = 0; ${s.var} < ${s.count}; ${s.var}++) {
<% depth += 1 %>\
% elif s.kind == "endloop":
<% depth -= 1 %>\
${"    " * depth}}
% elif s.kind == "write":
%   if s.bits:
${pad}${s.buf}[${s.index}] = ${s.value}_bits;
%   elif s.src is s.dtype:
${pad}${dt.store(s.dtype, s.buf, s.index, s.value)}
%   else:
${pad}${dt.store_converted(s.src, s.dtype, s.buf, s.index, s.value)}
%   endif
% endif
% endfor
}
