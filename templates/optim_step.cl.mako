<%doc>
One optimizer step for one parameter, in place: the parameter and every state tensor of the
step are read once and written once by one work-item per element (zyx.kernels.optimizer_step).
Hyperparameters that change between steps (learning rate, bias corrections) are run-time
arguments, so a schedule never recompiles; the options that pick the formula are render-time.
Every operation's result is rounded to the parameter's dtype as if stored (R below), so a
16-bit parameter steps exactly as the op-by-op formula would.
Parameters: algo ("sgd" | "adam" | "rmsprop" | "adagrad"), dtype, flags (a set of option names:
maximize, weight_decay, decoupled, momentum, first_step, nesterov, amsgrad, centered,
lerp_from_end: a running average's lerp weight is 0.5 or more, so it is taken from the new end),
state (the state buffer names, in argument order), scalars (the scalar argument names, in order),
grad_index (the gradient's buffer index of element zyx_i: it is read through its own strides).
The last argument is the device's error word (backend/errorflags.py, slot 0): set by a kernel upstream
(an out-of-range gathered index in the loss), the step writes nothing, and the error is raised at the next read.
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%
    ct = dt.attr.ctype(dtype)
    T = dtype.cl_storage
    fmt = {"float16": "f16", "bfloat16": "bf16", "float8_e4m3": "f8e4m3", "float8_e5m2": "f8e5m2"}.get(dtype.name)
    def R(v):
        return f"zyx_{fmt}_to_f32(zyx_f32_to_{fmt}({v}))" if fmt else f"({v})"
    def load(name):
        return capture(dt.load, dtype, "zyx_" + name, "zyx_i")
    def store(name, v):
        return capture(dt.store, dtype, "zyx_" + name, "zyx_i", v)
%>\
/* zyx optimizer step: ${algo} on ${dtype.name} (${", ".join(sorted(flags)) or "plain"}) */
${dt.preamble([dtype])}
__kernel void zyx_optim_${algo}(__global ${T} *restrict zyx_param, __global const ${T} *restrict zyx_grad\
% for name in state:
, __global ${T} *restrict zyx_${name}\
% endfor
% for name in scalars:
, const ${ct} zyx_${name}\
% endfor
, __global const int *restrict zyx_err)
{
    if (zyx_err[0])  /* an error flagged upstream and not read yet (a failed gather): leave everything as it was */
        return;
    const long zyx_i = get_global_id(0);
    ${ct} p = ${load("param")};
    ${ct} g = ${capture(dt.load, dtype, "zyx_grad", grad_index)};
% if "maximize" in flags:
    g = -g;
% endif
% if "weight_decay" in flags and "decoupled" in flags:
    p = ${R("p * zyx_decay")};
% elif "weight_decay" in flags:
    g = ${R("g + " + R("zyx_weight_decay * p"))};
% endif
% if algo == "sgd":
%   if "momentum" in flags:
%     if "first_step" in flags:
    ${ct} buf = g;
%     else:
    ${ct} buf = ${R(R(load("momentum_buffer") + " * zyx_momentum") + " + " + R("zyx_one_minus_dampening * g"))};
%     endif
    ${store("momentum_buffer", "buf")}
%     if "nesterov" in flags:
    g = ${R("g + " + R("zyx_momentum * buf"))};
%     else:
    g = buf;
%     endif
%   endif
    p = ${R("p - " + R("zyx_lr * g"))};
% elif algo == "adam":
    ${ct} m = ${load("exp_avg")};
    ${ct} d = ${R("g - m")};
    m = ${R("g - " + R("d * zyx_avg_keep")) if "lerp_from_end" in flags else R("m + " + R("zyx_avg_weight * d"))};
    ${store("exp_avg", "m")}
    ${ct} v = ${R(R(load("exp_avg_sq") + " * zyx_beta2") + " + " + R(R("zyx_one_minus_beta2 * g") + " * g"))};
    ${store("exp_avg_sq", "v")}
%   if "amsgrad" in flags:
    const ${ct} old_max = ${load("max_exp_avg_sq")};
    v = (isnan(old_max) || old_max > v) ? old_max : v;  /* torch.maximum: NaN wins */
    ${store("max_exp_avg_sq", "v")}
%   endif
    const ${ct} denom = ${R(R(R("sqrt(v)") + " / zyx_bias_correction2_sqrt") + " + zyx_eps")};
    p = ${R("p - " + R("zyx_step_size * " + R("m / denom")))};
% elif algo == "rmsprop":
    const ${ct} s = ${R(R(load("square_avg") + " * zyx_alpha") + " + " + R(R("zyx_one_minus_alpha * g") + " * g"))};
    ${store("square_avg", "s")}
%   if "centered" in flags:
    ${ct} a = ${load("grad_avg")};
    const ${ct} d = ${R("g - a")};
    a = ${R("g - " + R("d * zyx_avg_keep")) if "lerp_from_end" in flags else R("a + " + R("zyx_avg_weight * d"))};
    ${store("grad_avg", "a")}
    const ${ct} avg = ${R(R("sqrt(" + R("s - " + R("a * a")) + ")") + " + zyx_eps")};
%   else:
    const ${ct} avg = ${R(R("sqrt(s)") + " + zyx_eps")};
%   endif
%   if "momentum" in flags:
    const ${ct} buf = ${R(R(load("momentum_buffer") + " * zyx_momentum") + " + " + R("g / avg"))};
    ${store("momentum_buffer", "buf")}
    p = ${R("p - " + R("zyx_lr * buf"))};
%   else:
    p = ${R("p - " + R("zyx_lr * " + R("g / avg")))};
%   endif
% elif algo == "adagrad":
    const ${ct} s = ${R(load("sum") + " + " + R("g * g"))};
    ${store("sum", "s")}
    p = ${R("p - " + R("zyx_lr * " + R("g / " + R(R("sqrt(s)") + " + zyx_eps"))))};
% endif
    ${store("param", "p")}
}
