<%doc>
Indexed writes: dest[t(s)] = v[s] (reduce "assign") or dest[t(s)] = reduce(dest[t(s)], v[s]) for
every point s of the iteration shape `shape` (scatter, scatter_add, scatter_reduce, index_put,
x[idx] = v, and the gradients of the gathers). The dest coordinate on dest axis a is s[k] when
axes[a] = k >= 0, else the value of index source j = ~axes[a] read at s (negative values count
from the end when its `wrap` is set). Every index is bounds-checked; an index out of range writes
nothing for its point.

Modes:
- "atomic": one work item per point s; "add"/"mul"/"max"/"min" update dest with atomics
  (integer add natively, everything else by a compare-and-swap loop on the 32-/64-bit word).
- "partition": work item p owns the dest elements of row-major positions [p*span, (p+1)*span) and
  walks every point in order, combining those that land in its part with plain loads and stores
  (no atomics, deterministic, PyTorch's CPU order: one rounding per step). Few work items (one
  per compute unit), each reading every index; a point outside the item's part updates the
  item's scratch element `copies[gid]` instead of branching.
- "owner": one work item per dest element, looping over the points that may land on it in
  order (no atomics, deterministic, the same order): for small loops on devices with many lanes.
- "private" (CPUs): work item p of `nparts` (one per compute unit, one per work-group) walks its
  own contiguous `chunk` of the points in order, combining with plain loads and stores: item 0
  into dest itself, item p > 0 into its own full-size copy of dest (`copies` + (p-1) * numel,
  row-major, first filled with the reduce's identity `ident`). No atomics, and deterministic for
  a given `nparts` (fixed points per copy, fixed order), but not PyTorch's bits: a copy's partial
  result is rounded before it meets dest.
- "private_sum": each work item takes `span` consecutive dest elements (row-major):
  dest = combine(dest, copy 0, copy 1, ...) in copy order (the second launch of "private").
- "sort_keys" (first launch of the sort + segmented reduce, for devices without the atomics or where
  partition's every-item-reads-every-index walk would be long): work item g writes point g's
  row-major dest position to `zyx_keys` (`key_type`), or `numel(dest)` for a bad index (sorted
  last, skipped); the keys are then sorted stably with their positions (zyx.kernels.sorting).
- "segments": `span` sorted positions per work item; it owns the runs of equal keys that start in
  its span and combines dest's element with each run's values in point order (the sort is
  stable: PyTorch's CPU order, its bits, deterministic), storing it once. No atomics, each dest
  element written once.
- "check": bounds checks only (`span` points per work item), recording (bad, index) into the launch's slot of the error-flag
  buffer; a "guarded" write launched after it writes nothing when the slot says bad, so an
  in-place write with a bad index leaves dest unchanged.
Without "guarded", a bad index sets the INDEX_OOB bit of the device's error word instead.
Parameters: name, dtype (dest and value), reduce, mode, guarded, shape (iteration), dest_shape,
dest_strides, axes, indices ((dtype, strides over shape, wrap) each), value_strides (None: a
scalar argument), n (work items), span (partition: dest elements a work item owns; private: the
points of a work item; private_sum: its dest elements; segments: its sorted positions), key_type
(sort_keys/segments: "int" or "long"), nparts (private: work items, so nparts - 1 copies), plain_read
(the compare-and-swap loop starts from a plain read, 2-3x faster than a guess of 0 into non-zero
values; off on simulators, whose race detector flags that read).
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%!
    import math

    def dot(coords, strides):
        terms = [f"{c} * {s}L" for c, s in zip(coords, strides) if s]
        return " + ".join(terms) if terms else "0L"
%>\
<%
    ct = dt.attr.ctype(dtype)
    st = dtype.cl_storage
    emulated = dtype.is_float and dtype.itemsize < 4  # computed in float32 (templates/common/dtypes.mako)
    S = list(shape)
    s_names = [f"zyx_s{k}" for k in range(len(S))]
    direct = {k: a for a, k in enumerate(axes) if k >= 0}   # iteration axis -> dest axis
    loop_axes = [k for k in range(len(S)) if k not in direct]  # owner mode: the points per dest element
    word = "ulong" if dtype.itemsize == 8 else "uint"
    wide_atomics = dtype.itemsize == 8 and mode == "atomic" and reduce != "assign"
    is_float = dtype.is_float
%>\
<%def name="unravel(var, names, sizes)">\
## var < prod(sizes) in every use: the outermost coordinate needs no remainder (a 64-bit remainder
## also keeps PoCL from vectorizing across work items: 7x slower on a 1-D pass)
% if sizes:
    long zyx_r = ${var};
% for nm, size in reversed(list(zip(names[1:], sizes[1:]))):
    const long ${nm} = zyx_r % ${size}L;
    zyx_r /= ${size}L;
% endfor
    const long ${names[0]} = zyx_r;
% endif
</%def>\
<%def name="combine(a, b)">\
% if dtype.is_bool:
${"(uchar)(%s | %s)" % (a, b) if reduce in ("add", "max") else "(uchar)(%s & %s)" % (a, b)}\
% elif reduce == "add":
(${a} + ${b})\
% elif reduce == "mul":
(${a} * ${b})\
% elif reduce == "max":
${("((isnan(%s) || %s > %s) ? %s : %s)" if is_float else "((%s > %s) ? %s : %s)") % ((a, a, b, a, b) if is_float else (a, b, a, b))}\
% elif reduce == "min":
${("((isnan(%s) || %s < %s) ? %s : %s)" if is_float else "((%s < %s) ? %s : %s)") % ((a, a, b, a, b) if is_float else (a, b, a, b))}\
% endif
</%def>\
<%def name="round_to_dtype(v)">\
% if emulated:
${dt.from_bits(dtype, capture(dt.to_bits, dtype, v))}\
% else:
${v}\
% endif
</%def>\
<%def name="read_indices(bad)">\
% for j, (idt, strides, wrap) in enumerate(indices):
    long zyx_x${j} = (long)zyx_i${j}[zyx_ib${j} + ${dot(s_names, strides)}];
<% size = dest_shape[axes.index(~j)] %>\
% if wrap:
    zyx_x${j} = zyx_x${j} < 0 ? zyx_x${j} + ${size}L : zyx_x${j};
% endif
    if (zyx_x${j} < 0 || zyx_x${j} >= ${size}L) {
% if mode == "check":
        zyx_flags[2 * zyx_slot] = 1;  /* every bad point stores the same 1; any one index is reported */
        zyx_flags[2 * zyx_slot + 1] = zyx_x${j};
% else:
        atomic_or(zyx_err, 4);
% endif
        ${bad}
    }
% endfor
</%def>\
<%def name="value()">\
% if value_strides is None:
zyx_value\
% else:
${dt.load(dtype, "zyx_val", "zyx_vb + " + dot(s_names, value_strides))}\
% endif
</%def>\
/* zyx ${name}: ${mode} ${reduce} of ${dtype.name} over ${S} into dest ${list(dest_shape)} (axes ${list(axes)}) */
${dt.preamble([dtype])}
% if wide_atomics:
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
% endif
% if mode == "atomic" and reduce != "assign" and not (dtype.is_int and reduce == "add"):
inline void zyx_update(__global ${st} *zyx_p, ${ct} zyx_v)
{
    volatile __global ${word} *zyx_w = (volatile __global ${word} *)zyx_p;
% if plain_read:
    ${word} zyx_old = *zyx_w, zyx_seen;  /* a benign race: the compare-and-swap checks it */
% else:
    ${word} zyx_old = 0, zyx_seen;  /* a guess, no read racing the atomics (sanitizers flag it) */
% endif
    do {
        zyx_seen = zyx_old;
% if dtype.name == "float32":
        const float zyx_cur = as_float(zyx_seen);
        const ${word} zyx_new = as_uint(${combine("zyx_cur", "zyx_v")});
% elif dtype.name == "float64":
        const double zyx_cur = as_double(zyx_seen);
        const ${word} zyx_new = as_ulong(${combine("zyx_cur", "zyx_v")});
% else:
        const ${ct} zyx_cur = (${ct})zyx_seen;
        const ${word} zyx_new = (${word})(${ct})${combine("zyx_cur", "zyx_v")};
% endif
        zyx_old = ${"atom_cmpxchg" if dtype.itemsize == 8 else "atomic_cmpxchg"}(zyx_w, zyx_seen, zyx_new);
    } while (zyx_old != zyx_seen);
}
% endif

__kernel void ${name}(__global ${st} *zyx_dest, const long zyx_dbase,
% for j, (idt, strides, wrap) in enumerate(indices):
                      __global const ${idt.cl_storage} *zyx_i${j}, const long zyx_ib${j},
% endfor
% if value_strides is None:
                      const ${ct} zyx_value,
% else:
                      __global const ${st} *zyx_val, const long zyx_vb,
% endif
% if mode in ("private", "private_sum", "partition"):
                      __global ${st} *zyx_copies, const ${ct} zyx_ident,
% elif mode == "sort_keys":
                      __global ${key_type} *zyx_keys,
% elif mode == "segments":
                      __global const ${key_type} *zyx_keys, __global const long *zyx_pos,
% endif
                      __global int *zyx_err, __global long *zyx_flags, const int zyx_slot)
{
    const long zyx_gid = get_global_id(0);
    if (zyx_gid >= ${n}L) return;
% if guarded and mode == "sort_keys":
    if (zyx_flags[2 * zyx_slot]) {  /* the check kernel found a bad index: keys that write nothing */
        zyx_keys[zyx_gid] = ${math.prod(dest_shape)};
        return;
    }
% elif guarded:
    if (zyx_flags[2 * zyx_slot]) return;  /* the check kernel found a bad index: write nothing */
% endif
% if mode == "check":
    /* span points per work item: the flag stores are rare branches, the index loads stream */
    const long zyx_lo = zyx_gid * ${span}L, zyx_hi = min(zyx_lo + ${span}L, ${math.prod(S)}L);
    for (long zyx_g = zyx_lo; zyx_g < zyx_hi; ++zyx_g) {
${unravel("zyx_g", s_names, S)}\
${read_indices("continue;")}\
    }
% elif mode == "atomic":
${unravel("zyx_gid", s_names, S)}\
${read_indices("return;")}\
<%
    parts = []
    for a, k in enumerate(axes):
        parts.append((s_names[k] if k >= 0 else f"zyx_x{~k}", dest_strides[a]))
    d = " + ".join(f"{c} * {s}L" for c, s in parts if s) or "0L"
%>\
    const long zyx_d = zyx_dbase + ${d};
    const ${ct} zyx_v = ${value()};
% if reduce == "assign":
    ${dt.store(dtype, "zyx_dest", "zyx_d", "zyx_v")}
% elif dtype.is_int and reduce == "add":
    ${"atom_add" if dtype.itemsize == 8 else "atomic_add"}((volatile __global ${st} *)(zyx_dest + zyx_d), zyx_v);
% else:
    zyx_update(zyx_dest + zyx_d, zyx_v);
% endif
% elif mode == "partition":
<%
    numel = math.prod(dest_shape)
    cstrides = [math.prod(dest_shape[a + 1:]) for a in range(len(dest_shape))]
    coord = [s_names[k] if k >= 0 else f"zyx_x{~k}" for k in axes]
%>\
    const long zyx_lo = zyx_gid * ${span}L, zyx_hi = min(zyx_lo + ${span}L, ${numel}L);
    ${dt.store(dtype, "zyx_copies", "zyx_gid", "zyx_ident")}  /* the scratch element: defined before it is read */
    for (long zyx_g = 0; zyx_g < ${math.prod(S)}L; ++zyx_g) {
${unravel("zyx_g", s_names, S)}\
${read_indices("continue;")}\
        const long zyx_l = ${dot(coord, cstrides)};
        /* branchless: a point outside this item's part updates the item's scratch element instead
           (a branch on it is taken at random, mispredicted about every other point) */
        __global ${st} *zyx_p = (zyx_l >= zyx_lo && zyx_l < zyx_hi)
            ? zyx_dest + (zyx_dbase + ${dot(coord, dest_strides)}) : zyx_copies + zyx_gid;
        const ${ct} zyx_v = ${value()};
% if reduce == "assign":
        ${dt.store(dtype, "zyx_p", "0", "zyx_v")}
% else:
        const ${ct} zyx_cur = ${dt.load(dtype, "zyx_p", "0")};
        ${dt.store(dtype, "zyx_p", "0", capture(combine, "zyx_cur", "zyx_v"))}
% endif
    }
% elif mode == "private":
<%
    numel = math.prod(dest_shape)
    cstrides = [math.prod(dest_shape[a + 1:]) for a in range(len(dest_shape))]
    coord = [s_names[k] if k >= 0 else f"zyx_x{~k}" for k in axes]
%>\
    const long zyx_lo = zyx_gid * ${span}L, zyx_hi = min(zyx_lo + ${span}L, ${math.prod(S)}L);
    if (zyx_gid == 0) {  /* into dest itself: the only writer of dest in this launch */
        for (long zyx_g = zyx_lo; zyx_g < zyx_hi; ++zyx_g) {
${unravel("zyx_g", s_names, S)}\
${read_indices("continue;")}\
            const long zyx_d = zyx_dbase + ${dot(coord, dest_strides)};
            const ${ct} zyx_v = ${value()};
            const ${ct} zyx_cur = ${dt.load(dtype, "zyx_dest", "zyx_d")};
            ${dt.store(dtype, "zyx_dest", "zyx_d", capture(combine, "zyx_cur", "zyx_v"))}
        }
        return;
    }
    __global ${st} *zyx_c = zyx_copies + (zyx_gid - 1) * ${numel}L;  /* this work item's own copy */
    for (long zyx_l = 0; zyx_l < ${numel}L; ++zyx_l) {
        ${dt.store(dtype, "zyx_c", "zyx_l", "zyx_ident")}
    }
    for (long zyx_g = zyx_lo; zyx_g < zyx_hi; ++zyx_g) {
${unravel("zyx_g", s_names, S)}\
${read_indices("continue;")}\
        const long zyx_l = ${dot(coord, cstrides)};
        const ${ct} zyx_v = ${value()};
        const ${ct} zyx_cur = ${dt.load(dtype, "zyx_c", "zyx_l")};
        ${dt.store(dtype, "zyx_c", "zyx_l", capture(combine, "zyx_cur", "zyx_v"))}
    }
% elif mode == "private_sum":
<%
    numel = math.prod(dest_shape)
    t_names = [f"zyx_t{a}" for a in range(len(dest_shape))]
%>\
    /* span elements per work item: the guard's flag is read once per item, the loop vectorizes */
    const long zyx_lo = zyx_gid * ${span}L, zyx_hi = min(zyx_lo + ${span}L, ${numel}L);
    for (long zyx_l = zyx_lo; zyx_l < zyx_hi; ++zyx_l) {
% if list(dest_strides) == [math.prod(dest_shape[a + 1:]) for a in range(len(dest_shape))]:
        const long zyx_d = zyx_dbase + zyx_l;  /* a contiguous dest */
% else:
${unravel("zyx_l", t_names, list(dest_shape))}\
        const long zyx_d = zyx_dbase + ${dot(t_names, dest_strides)};
% endif
        ${ct} zyx_acc = ${dt.load(dtype, "zyx_dest", "zyx_d")};
% for q in range(nparts - 1):
        {
            const ${ct} zyx_v = ${dt.load(dtype, "zyx_copies", f"{q * numel}L + zyx_l")};
            zyx_acc = ${round_to_dtype(capture(combine, "zyx_acc", "zyx_v"))};
        }
% endfor
        ${dt.store(dtype, "zyx_dest", "zyx_d", "zyx_acc")}
    }
% elif mode == "sort_keys":
<%
    cstrides = [math.prod(dest_shape[a + 1:]) for a in range(len(dest_shape))]
    coord = [s_names[k] if k >= 0 else f"zyx_x{~k}" for k in axes]
%>\
${unravel("zyx_gid", s_names, S)}\
${read_indices("zyx_keys[zyx_gid] = %d; return;" % math.prod(dest_shape))}\
    zyx_keys[zyx_gid] = (${key_type})(${dot(coord, cstrides)});
% elif mode == "segments":
<% t_names = [f"zyx_t{a}" for a in range(len(dest_shape))] %>\
    /* span sorted positions per work item: it owns the runs whose first position lies in its span
       (skipping the tail of a run begun before it, finishing its last run past its end), walking
       them in order: no divergent per-run loops across work items, sequential key reads */
    const long zyx_lo = zyx_gid * ${span}L, zyx_hi = min(zyx_lo + ${span}L, ${math.prod(S)}L);
    long zyx_j = zyx_lo;
    if (zyx_j > 0) {
        const ${key_type} zyx_prev = zyx_keys[zyx_j - 1];
        while (zyx_j < zyx_hi && zyx_keys[zyx_j] == zyx_prev) ++zyx_j;
    }
    while (zyx_j < zyx_hi) {
        const ${key_type} zyx_k = zyx_keys[zyx_j];
        if (zyx_k >= ${math.prod(dest_shape)}) break;  /* bad indices' keys, sorted last */
${unravel("(long)zyx_k", t_names, list(dest_shape))}\
        const long zyx_d = zyx_dbase + ${dot(t_names, dest_strides)};
% if reduce == "assign":
        ${ct} zyx_acc;  /* every run has a value */
% else:
        ${ct} zyx_acc = ${dt.load(dtype, "zyx_dest", "zyx_d")};
% endif
        do {
            const long zyx_g = zyx_pos[zyx_j];
${unravel("zyx_g", s_names, S)}\
            const ${ct} zyx_v = ${value()};
% if reduce == "assign":
            zyx_acc = zyx_v;  /* the last of the run wins, as PyTorch's serial CPU loop */
% else:
            zyx_acc = ${round_to_dtype(capture(combine, "zyx_acc", "zyx_v"))};
% endif
            ++zyx_j;
        } while (zyx_j < ${math.prod(S)}L && zyx_keys[zyx_j] == zyx_k);
        ${dt.store(dtype, "zyx_dest", "zyx_d", "zyx_acc")}
    }
% else:
<% t_names = [f"zyx_t{a}" for a in range(len(dest_shape))] %>\
${unravel("zyx_gid", t_names, list(dest_shape))}\
% for k, a in sorted(direct.items()):
% if S[k] < dest_shape[a]:
    if (zyx_t${a} >= ${S[k]}L) return;
% endif
    const long ${s_names[k]} = zyx_t${a};
% endfor
    const long zyx_d = zyx_dbase + ${dot(t_names, dest_strides)};
    ${ct} zyx_acc = ${dt.load(dtype, "zyx_dest", "zyx_d")};
    int zyx_hit = 0;
    for (long zyx_g = 0; zyx_g < ${math.prod(S[k] for k in loop_axes)}L; ++zyx_g) {
<% loop_names = [s_names[k] for k in loop_axes] %>\
${unravel("zyx_g", loop_names, [S[k] for k in loop_axes])}\
${read_indices("return;")}\
<% conds = [f"zyx_x{~k} == zyx_t{a}" for a, k in enumerate(axes) if k < 0] %>\
        if (${" && ".join(conds) if conds else "1"}) {
            const ${ct} zyx_v = ${value()};
% if reduce == "assign":
            zyx_acc = zyx_v;
% else:
            zyx_acc = ${round_to_dtype(capture(combine, "zyx_acc", "zyx_v"))};
% endif
            zyx_hit = 1;
        }
    }
    if (zyx_hit) {
        ${dt.store(dtype, "zyx_dest", "zyx_d", "zyx_acc")}
    }
% endif
}
