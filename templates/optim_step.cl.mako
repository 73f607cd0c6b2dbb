<%doc>
One optimizer step for the parameters of one launch (a parameter group's tensors of one dtype and
formula), in place: each parameter and every state tensor of the step are read once and written once
(zyx.kernels.optimizer_step). Each work-item updates a run of up to per_item consecutive elements of
one tensor. Tensor k takes the next items[k] work-items (a multiple of the work-group size; those past
its end do nothing), so a work-group lies in one tensor: a branch all its work-items take alike picks
the tensor's buffers, size and gradient read, and the run's loop is that read's function (zyx_run<r>,
one per distinct gradient read: every dense gradient shares one). A CPU takes per_item > 1: PoCL
vectorizes the loop over a run, where one element a work-item under the chain of branches ran scalar
(and a copy of the formula per tensor compiled 3x slower than one per read).
Sizes are render-time constants; hyperparameters that change between steps (learning rate, bias
corrections) are run-time arguments, so neither a schedule nor a step count recompiles; the options
that pick the formula are render-time.
Every operation's result is rounded to the parameter's dtype as if stored (R below), so a
16-bit parameter steps exactly as the op-by-op formula would.
Parameters: algo ("sgd" | "adam" | "rmsprop" | "adagrad"), dtype, flags (a set of option names:
maximize, weight_decay, decoupled, momentum, first_step, nesterov, amsgrad, centered,
lerp_from_end: a running average's lerp weight is 0.5 or more, so it is taken from the new end),
state (the state buffer names, in argument order), scalars (the scalar argument names, in order),
sizes (each tensor's element count, none 0), items and per_item (see above), grad_index (the gradient reads:
the OpenCL expression of a gradient's buffer index of its element zyx_i, read through its own strides),
reads (each tensor's gradient read, an index into grad_index).
Arguments: each tensor's param, grad and state buffers (tensor by tensor), the scalars, and last the
device's error word (backend/errorflags.py, slot 0): set by a kernel upstream (an out-of-range gathered
index in the loss), the step writes nothing, and the error is raised at the next read.
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
    buffers = ("param", "grad", *state)
    def params(suffix=""):
        return ", ".join(f"__global {'const ' if name == 'grad' else ''}{T} *restrict zyx_{name}{suffix}" for name in buffers)
    scalar_params = "".join(f", const {ct} zyx_{name}" for name in scalars)
    pointers = ", ".join("zyx_" + name for name in buffers)
    numbers = "".join(", zyx_" + name for name in scalars)
    starts = [sum(items[:k]) for k in range(len(sizes))]
    P = per_item
%>\
/* zyx optimizer step: ${algo} on ${dtype.name} (${", ".join(sorted(flags)) or "plain"}), ${len(sizes)} tensors of ${", ".join(map(str, sizes))}, ${per_item} elements a work-item */
${dt.preamble([dtype])}
/* element zyx_i of one tensor, its gradient element zyx_gi */
inline void zyx_update(${params()}, const long zyx_i, const long zyx_gi${scalar_params})
{
    ${ct} p = ${load("param")};
    ${ct} g = ${capture(dt.load, dtype, "zyx_grad", "zyx_gi")};
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

% for r, gidx in enumerate(grad_index):
/* elements [zyx_i0, zyx_i1) of a tensor whose gradient is read as ${gidx}: a function of its own, so the
   loop's pointers are restrict parameters (in the kernel, on pointers chosen at run time, only the loop
   over a dense gradient vectorized) */
inline void zyx_run${r}(${params()}, const long zyx_i0, const long zyx_i1${scalar_params})
{
    for (long zyx_i = zyx_i0; zyx_i < zyx_i1; ++zyx_i)
        zyx_update(${pointers}, zyx_i, ${gidx}${numbers});
}
% endfor

__kernel void zyx_optim_${algo}(${", ".join(params(k) for k in range(len(sizes)))}${scalar_params}, __global const int *restrict zyx_err)
{
    if (zyx_err[0])  /* an error flagged upstream and not read yet (a failed gather): leave everything as it was */
        return;
    const long zyx_base = (long)get_group_id(0) * (long)get_local_size(0);  /* the same for the whole work-group */
% for name in buffers:
    __global ${"const " if name == "grad" else ""}${T} *zyx_${name};
% endfor
    long zyx_w = zyx_base + (long)get_local_id(0), zyx_n${", zyx_read" if len(grad_index) > 1 else ""};
% for k, (start, count, n, read) in enumerate(zip(starts, items, sizes, reads)):
    ${"else " if k else ""}${"if (zyx_base < %d) " % (start + count) if k < len(sizes) - 1 else ""}{
        ${" ".join(f"zyx_{name} = zyx_{name}{k};" for name in buffers)}
        zyx_w -= ${start}; zyx_n = ${n};${f" zyx_read = {read};" if len(grad_index) > 1 else ""}
    }
% endfor
    const long zyx_end = min(zyx_w * ${P} + ${P}, zyx_n);
% for r, gidx in enumerate(grad_index):
    ${"else " if r else ""}${"if (zyx_read == %d) " % r if r < len(grad_index) - 1 else ""}zyx_run${r}(${pointers}, zyx_w * ${P}, zyx_end${numbers});
% endfor
}
