"""Parsing FKC documents: the shipped OpenCL shape-op document, and malformed documents."""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest
import yaml

import zyx.contracts as zc
from zyx import dtype as zd
from zyx.contracts.spec import parse as zparse
from zyx.errors import ContractError

DOC_NAME = "opencl_shape_ops.md"
DOC_TEXT = resources.files("zyx.contracts").joinpath("docs", DOC_NAME).read_text(encoding="utf-8")

ALL15 = {d.fkc for d in zd.ALL_DTYPES}
SIX = {"F32", "F64", "BF16", "F16", "U32", "U8"}
ELEVEN = {"U8", "I8", "U32", "I16", "I32", "I64", "BF16", "F16", "F32", "F64", "F8E4M3"}
# The dtypes the CPU reference provider registers for each kernel (fkc-shape-ops.md).
REFERENCE_DTYPES = {
    "contiguize": ELEVEN, "flip": SIX, "roll": SIX, "concat": SIX | {"I16", "I32", "I64"},
    "write_slice": SIX, "write_slice_rotating": SIX, "write_slice_doff": SIX, "triangular": ELEVEN,
    "masked_fill": SIX, "cumsum_f32": {"F32"}, "cumsum_f64": {"F64"}, "cumsum_bf16": {"BF16"},
    "cumsum_f16": {"F16"},
}
#: zyx's own scans (not in the reference), after it in the document, with their dtypes and op kinds.
INTS = {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64"}
EXTREMA = {"F32", "F64", "F16", "BF16", "BOOL", "U8", "I8", "I16", "I32", "I64"}
SCANS = {"cumsum_int": ({*INTS}, "CumSum"), "cumprod_f32": ({"F32", "F16", "BF16"}, "CumProd"),
         "cumprod_f64": ({"F64"}, "CumProd"), "cumprod_int": ({*INTS}, "CumProd"), "cummax": (EXTREMA, "CumMax"),
         "cummin": (EXTREMA, "CumMin"), "logcumsumexp_f32": ({"F32", "F16", "BF16"}, "LogCumSumExp"),
         "logcumsumexp_f64": ({"F64"}, "LogCumSumExp")}
ALL_KERNELS = [*REFERENCE_DTYPES, *SCANS]
BYTE_KERNELS = ["contiguize", "flip", "roll", "concat", "write_slice", "write_slice_rotating",
                "write_slice_doff", "triangular", "masked_fill"]
CUMSUMS = {"cumsum_f32": "F32", "cumsum_f64": "F64", "cumsum_bf16": "BF16", "cumsum_f16": "F16"}
# The op params the kernel engineer implements against (names and order).
OP_PARAMS = {
    "contiguize": [], "flip": ["dims"], "roll": ["shift", "outer", "dim_size", "inner"], "concat": ["dim"],
    "write_slice": ["dest_shape", "ranges", "dest_dtype"],
    "write_slice_rotating": ["dest_shape", "axis", "modulus", "position", "dest_dtype"],
    "write_slice_doff": ["dest_shape", "axis", "offset", "ranges", "dest_dtype"],
    "triangular": ["upper", "diagonal"], "masked_fill": ["fill"],
    **{k: ["dim"] for k in CUMSUMS}, **{k: ["dim"] for k in SCANS},
}


@pytest.fixture(scope="module")
def doc() -> zc.Document:
    return zc.parse_document(DOC_TEXT, DOC_NAME)


def fkc_set(dtypes) -> set[str]:
    return {d.fkc for d in dtypes}


# ---------------------------------------------------------------- the shipped document


def test_front_matter(doc):
    assert doc.fkc_version == 1
    assert doc.provider == zc.Provider("zyx-opencl", "OpenCL", "zyx-opencl-mako", "templates/contracts/", "zyx:0.1.0")
    assert doc.tool == "zyx-contracts 1"
    assert {"outer", "dim_size", "inner", "dtype_size", "n", "batch_count", "rows", "cols", "outer_count",
            "input_dim_sizes", "inner_count"} <= set(doc.cost_symbols)


def test_all_thirteen_kernels_present_in_order(doc):
    assert [c.name for c in doc.contracts] == ALL_KERNELS
    assert [c.name for c in zc.all_contracts()] == ALL_KERNELS


@pytest.mark.parametrize("name", list(SCANS))
def test_scan_contracts(name):
    """Each scan beyond cumsum: its dtypes, op kind, the axis op param, int64 results of the
    integer scans and a second int64 output (the indices) of cummax/cummin, its claims."""
    c = zc.get(name)
    tokens, kind = SCANS[name]
    assert fkc_set(c.dtypes) == tokens and c.op_kind == kind and list(c.params) == ["dim"]
    assert c.cost_spec.cost_class == "reduction" and c.cost_spec.provenance == "judge_measured"
    assert c.caps.awkward_layout_strategy == "requires_contiguous"
    assert c.precision.bit_stable_on_same_hardware
    exact = name.endswith("_int") or name in ("cummax", "cummin")
    assert c.determinism == ("bitwise" if exact else "same_hardware_bitwise")
    if name.endswith("_int"):
        assert c.precision.accumulate is zd.int64 and [o.dtype_rule for o in c.outputs] == ["int64"]
    elif exact:
        assert [(o.name, o.dtype_rule) for o in c.outputs] == [("values", "passthrough(input)"), ("indices", "int64")]
        assert c.precision.max_ulp == 0
    else:
        assert c.precision.accumulate is (zd.float64 if name.endswith("f64") else zd.float32)
    assert c.entry_point == {"cumsum": "cumsum.cl.mako", "cumprod": "cumprod.cl.mako", "cummax": "cummax.cl.mako",
                             "cummin": "cummax.cl.mako", "logcumsumexp": "logcumsumexp.cl.mako"}[name.split("_")[0]]


@pytest.mark.parametrize("name", list(REFERENCE_DTYPES))
def test_dtypes_include_every_reference_dtype(doc, name):
    contract = next(c for c in doc.contracts if c.name == name)
    assert REFERENCE_DTYPES[name] <= fkc_set(contract.dtypes)


@pytest.mark.parametrize("name", BYTE_KERNELS)
def test_byte_kernels_accept_all_15_dtypes(name):
    c = zc.get(name)
    assert fkc_set(c.dtypes) == ALL15 and len(c.dtypes) == 15


@pytest.mark.parametrize("name,token", sorted(CUMSUMS.items()))
def test_cumsum_dtype_and_accumulator(name, token):
    c = zc.get(name)
    assert fkc_set(c.dtypes) == {token}
    assert c.op_kind == "CumSum"
    assert c.determinism == "same_hardware_bitwise"
    assert c.precision.accumulate == (zd.float64 if token == "F64" else zd.float32)
    assert c.cost_spec.cost_class == "reduction"


@pytest.mark.parametrize("name", list(OP_PARAMS))
def test_op_param_names(name):
    assert list(zc.get(name).params) == OP_PARAMS[name]


def test_param_details():
    rot = zc.get("write_slice_rotating").params
    assert rot["modulus"].optional and rot["modulus"].default == "dest_shape[axis]"
    assert rot["modulus"].constraint == "0 < modulus <= dest_shape[axis]"
    assert fkc_set(rot["position"].dtypes) == {"U32", "I32"}
    doff = zc.get("write_slice_doff").params
    assert fkc_set(doff["offset"].dtypes) == {"I64"} and doff["ranges"].optional
    ws = zc.get("write_slice").params
    assert ws["ranges"].constraint == "len == rank; 0 <= start <= end <= dest_shape[i]"
    assert not ws["ranges"].optional and ws["dest_dtype"].optional
    assert zc.get("triangular").params["diagonal"].default == 0


def test_caps_layout_and_determinism():
    for c in zc.all_contracts():
        assert c.cost_spec.provenance == "judge_measured", c.name
        assert c.backend == "OpenCL" and c.kernel_source == "zyx-opencl-mako"
        assert c.notes, f"{c.name} should say how it differs from the reference"
        if c.name == "contiguize":
            assert c.caps.awkward_layout_strategy == "handles_strided"
            assert c.inputs[0].layout == zc.LayoutSpec("accepted", "accepted", "accepted", "accepted", "accepted")
        else:
            assert c.caps.awkward_layout_strategy == "requires_contiguous", c.name
            assert c.inputs[0].layout == zc.LayoutSpec(), c.name
        if c.name in BYTE_KERNELS:
            assert c.determinism == "bitwise" and c.precision.bit_stable_on_same_hardware


def test_in_place_kernels_alias_dest():
    for c in zc.all_contracts():
        in_place = c.name.startswith("write_slice")
        assert c.caps.in_place is in_place
        assert c.outputs[0].aliasing == ("in_place(dest)" if in_place else "none")
        device = c.cost_spec.expressions()["memory.device_bytes"]
        assert (device == "0") is in_place, (c.name, device)  # out-of-place kernels allocate their output


def test_ranks_and_variadic():
    assert zc.get("triangular").inputs[0].rank == (2, 8)
    assert zc.get("write_slice").inputs[0].rank == (1, 8)
    assert zc.get("flip").inputs[0].rank is None
    concat = zc.get("concat").inputs[0]
    assert concat.variadic and concat.min_count == 1
    mask = zc.get("masked_fill").inputs[1]
    assert mask.name == "mask" and mask.dtypes == (zd.bool_,)


def test_registry_lookup():
    assert zc.lookup("CumSum", zd.bfloat16).name == "cumsum_bf16"
    assert zc.lookup("CumSum", "float16").name == "cumsum_f16"
    assert zc.lookup("CumSum", "float64").name == "cumsum_f64"
    assert zc.lookup("Triu", zd.int8).name == "triangular"
    assert zc.lookup("Tril", zd.bool_).name == "triangular"
    assert zc.get("triangular").arms["Tril"] == {"upper": False}
    assert zc.lookup("Contiguize", zd.float8_e5m2).name == "contiguize"
    assert zc.lookup("WriteSliceDoff", zd.uint64).name == "write_slice_doff"


def test_registry_lookup_errors():
    with pytest.raises(ContractError, match=r"^LogCumSumExp: no contract accepts dtype int32; accepted: bfloat16 "
                                            r"\(logcumsumexp_f32\), float16 \(logcumsumexp_f32\), float32 "
                                            r"\(logcumsumexp_f32\), float64 \(logcumsumexp_f64\)$"):
        zc.lookup("LogCumSumExp", zd.int32)
    with pytest.raises(ContractError, match=r"^CumMax: no contract accepts dtype uint16; accepted: bfloat16 "):
        zc.lookup("CumMax", zd.uint16)
    assert zc.lookup("CumSum", zd.int32).name == "cumsum_int" and zc.lookup("CumProd", zd.bool_).name == "cumprod_int"
    with pytest.raises(ContractError, match=r"no contract serves op kind 'Cumsum'; known: .*CumSum"):
        zc.lookup("Cumsum", zd.float32)
    with pytest.raises(ContractError, match=r"no contract named 'rol'; known: concat, contiguize"):
        zc.get("rol")


def test_registry_loads_once_and_reset():
    first = zc.default_registry()
    assert zc.default_registry() is first
    zc.reset()
    again = zc.default_registry()
    assert again is not first and [c.name for c in again.all()] == [c.name for c in first.all()]


def test_registry_rejects_overlapping_keys(doc):
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: block 'contiguize': kernel: "
                                            r"already declared in opencl_shape_ops.md$"):
        zc.Registry([doc, doc])
    dup = DOC_TEXT.replace("kernel: cumsum_f16\nop_kind: CumSum", "kernel: cumsum_f16\nop_kind: CumSum", 1)
    dup = dup.replace("      dtypes: [F16]\n", "      dtypes: [F16, F32]\n", 1)
    with pytest.raises(ContractError, match=r"block 'cumsum_f16': accept.inputs\[0\].dtypes: \(CumSum, F32\) "
                                            r"is already served by 'cumsum_f32'"):
        zc.Registry([zc.parse_document(dup, DOC_NAME)])


def test_every_declared_constraint_has_a_check():
    for c in zc.all_contracts():
        assert zc.missing_checks(c) == [], c.name


def test_parse_without_tool_line():
    text = DOC_TEXT.split("\n", 2)[2]
    assert text.startswith("---")
    doc = zc.parse_document(text, "x.md")
    assert doc.tool == "" and len(doc.contracts) == 21


# ---------------------------------------------------------------- malformed documents


def mutate(block: str, old: str, new: str, count: int = 1) -> str:
    """The shipped document with ``old`` replaced by ``new`` inside kernel ``block``'s fkc block only."""
    start = DOC_TEXT.index(f"```fkc\nkernel: {block}\n")
    end = DOC_TEXT.index("\n```\n", start)
    body = DOC_TEXT[start:end]
    assert old in body, f"{old!r} not in block {block}"
    return DOC_TEXT[:start] + body.replace(old, new, count) + DOC_TEXT[end:]


def parse_tmp(tmp_path: Path, text: str) -> zc.Document:
    path = tmp_path / DOC_NAME
    path.write_text(text, encoding="utf-8")
    return zc.parse_file(path)


def expect(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ContractError) as info:
        parse_tmp(tmp_path, text)
    assert str(info.value) == message


def test_unknown_dtype_token(tmp_path):
    text = mutate("roll", "dtypes: [BOOL, U8", "dtypes: [BOOL, F33, U8")
    expect(tmp_path, text, "opencl_shape_ops.md: block 'roll': accept.inputs[0].dtypes: unknown dtype token 'F33'")


def test_duplicate_dtype_token(tmp_path):
    text = mutate("cumsum_f32", "dtypes: [F32]", "dtypes: [F32, F32]")
    expect(tmp_path, text, "opencl_shape_ops.md: block 'cumsum_f32': accept.inputs[0].dtypes: "
                           "dtype token 'F32' listed twice")


def test_bad_yaml(tmp_path):
    text = mutate("flip", "op_kind: Flip\n", "op_kind: [Flip\n")
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: block 'flip': yaml: .* \(line \d+\)$"):
        parse_tmp(tmp_path, text)


def test_bad_yaml_in_front_matter(tmp_path):
    text = DOC_TEXT.replace("  name: zyx-opencl\n", "  name: [zyx-opencl\n", 1)
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: front matter: yaml: "):
        parse_tmp(tmp_path, text)


@pytest.mark.parametrize("block,old,field", [
    ("concat", 'blurb: "Join one or more same-dtype tensors along axis dim; byte copy."\n', "blurb"),
    ("flip", "determinism: bitwise", "determinism"),
    ("roll", "  provenance: judge_measured\n", "cost.provenance"),
    ("triangular", '  bytes_moved: "2 * batch_count * rows * cols * dtype_size"\n', "cost.bytes_moved"),
    ("masked_fill", "  awkward_layout_strategy: requires_contiguous\n", "caps.awkward_layout_strategy"),
    ("write_slice", "    - name: source\n      dtypes:", "accept.inputs[0].name"),
    ("cumsum_f16", "  bit_stable_on_same_hardware: true\n", "precision.bit_stable_on_same_hardware"),
    ("write_slice_doff", "      dtype_rule: passthrough(source)\n", "return.outputs[0].dtype_rule"),
])
def test_missing_required_field(tmp_path, block, old, field):
    new = "    - dtypes:" if old.endswith("dtypes:") else ""
    expect(tmp_path, mutate(block, old, new), f"opencl_shape_ops.md: block '{block}': {field}: missing required field")


@pytest.mark.parametrize("rank,shown", [("\"8..=2\"", "'8..=2'"), ("-1", "-1"), ("\"2..8\"", "'2..8'"),
                                        ("many", "'many'"), ("true", "True")])
def test_bad_rank(tmp_path, rank, shown):
    text = mutate("triangular", 'rank: "2..=8"', f"rank: {rank}")
    expect(tmp_path, text, f"opencl_shape_ops.md: block 'triangular': accept.inputs[0].rank: bad rank {shown}; "
                           "expected any, an int >= 0 or \"lo..=hi\" with lo <= hi")


def test_good_ranks():
    assert zparse._rank(zparse._Where("x", "b"), 3, "r") == (3, 3)
    assert zparse._rank(zparse._Where("x", "b"), "any", "r") is None
    assert zparse._rank(zparse._Where("x", "b"), "0..=8", "r") == (0, 8)


@pytest.mark.parametrize("expr,why", [
    ("2 ** n", "operator Pow is not allowed"),
    ("n % 2", "operator Mod is not allowed"),
    ("__import__('os')", "only min(...) and max(...)"),
    ("n.bit_length", "attribute 'n.bit_length' is not allowed"),
    ("sum(n, n)", "sum(...) takes exactly one list-valued symbol"),
    ("2 * (n", "cannot parse cost expression"),
    ("n if n else 0", "IfExp is not allowed"),
])
def test_bad_cost_expression(tmp_path, expr, why):
    text = mutate("concat", 'bytes_moved: "2 * outer_count * sum(input_dim_sizes) * inner_count * dtype_size"',
                  f'bytes_moved: "{expr}"')
    with pytest.raises(ContractError) as info:
        parse_tmp(tmp_path, text)
    assert str(info.value).startswith("opencl_shape_ops.md: block 'concat': cost.bytes_moved: ")
    assert why in str(info.value)


def test_unknown_cost_symbol(tmp_path):
    text = mutate("flip", 'flops: "0"', 'flops: "n * widgets"')
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: block 'flip': cost.flops: unknown cost symbol "
                                            r"'widgets' in 'n \* widgets'; declared: "):
        parse_tmp(tmp_path, text)


def test_cost_may_use_op_params_and_block_symbols(tmp_path):
    text = mutate("roll", 'flops: "0"', 'flops: "0 * shift + lanes"\n  symbols: [lanes]')
    roll = next(c for c in parse_tmp(tmp_path, text).contracts if c.name == "roll")
    assert roll.cost_spec.symbols == ("outer", "dim_size", "inner", "dtype_size", "shift", "lanes")
    assert roll.cost(shift=3, lanes=7, outer=1, dim_size=2, inner=1, dtype_size=4).flops == 7


def test_block_symbols_no_expression_uses_are_optional(tmp_path):
    text = mutate("roll", 'flops: "0"', 'flops: "0"\n  symbols: [lanes]')
    roll = next(c for c in parse_tmp(tmp_path, text).contracts if c.name == "roll")
    assert roll.cost_spec.optional == ("lanes",)
    p = {"outer": 1, "dim_size": 2, "inner": 1, "dtype_size": 4}
    assert roll.cost(**p) == roll.cost(lanes=9, **p)


@pytest.mark.parametrize("expr,ok", [("2 * source.n * dtype_size", True), ("2 * dest.n * dtype_size", False),
                                     ("2 * source_n * dtype_size", True)])
def test_count_of_an_input(tmp_path, expr, ok):
    """``<input>.n`` names an input of the block (``source_n`` is the same symbol)."""
    text = mutate("write_slice", 'bytes_moved: "2 * source.n * dtype_size"', f'bytes_moved: "{expr}"')
    if ok:
        ws = next(c for c in parse_tmp(tmp_path, text).contracts if c.name == "write_slice")
        assert ws.cost(source_n=5, dtype_size=2).bytes_moved == 20
    else:
        with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: block 'write_slice': cost.bytes_moved: "
                                                r"unknown cost symbol 'dest_n'"):
            parse_tmp(tmp_path, text)


def test_reserved_block_symbol(tmp_path):
    text = mutate("roll", 'flops: "0"', 'flops: "0"\n  symbols: [sum]')
    expect(tmp_path, text, "opencl_shape_ops.md: block 'roll': cost.symbols: symbols must be identifiers other "
                           "than calibration, max, min, sum")


def test_bad_memory_tier(tmp_path):
    text = mutate("flip", "host_bytes: 0,", "cache_bytes: 0,")
    expect(tmp_path, text, "opencl_shape_ops.md: block 'flip': cost.memory.cache_bytes: unknown memory tier; "
                           "known: device_bytes, host_bytes, disk_bytes")


@pytest.mark.parametrize("old,new,message", [
    ("strided: rejected", "strided: maybe",
     "accept.inputs[0].layout.strided: 'maybe' is not one of accepted, rejected"),
    ("contiguous: required", "contiguous: rejected",
     "accept.inputs[0].layout.contiguous: 'rejected' is not one of required, accepted, n/a"),
    ("reverse_strides: rejected }", "reverse_strides: rejected, transposed: accepted }",
     "accept.inputs[0].layout.transposed: unknown layout fact; known: contiguous, strided, broadcast_stride0, "
     "start_offset, reverse_strides, awkward_layout_strategy"),
    (", start_offset: rejected", "",
     "accept.inputs[0].layout: missing layout facts: start_offset"),
])
def test_bad_layout(tmp_path, old, new, message):
    expect(tmp_path, mutate("cumsum_f64", old, new), f"opencl_shape_ops.md: block 'cumsum_f64': {message}")


@pytest.mark.parametrize("old,new,message", [
    ("provenance: judge_measured", "provenance: guessed",
     "cost.provenance: 'guessed' is not one of declared, judge_measured"),
    ("determinism: bitwise", "determinism: mostly",
     "determinism: 'mostly' is not one of bitwise, same_hardware_bitwise, nondeterministic"),
    ("determinism: bitwise", "determinism: nondeterministic",
     "determinism: 'nondeterministic' contradicts precision.bit_stable_on_same_hardware = True"),
    ("awkward_layout_strategy: requires_contiguous", "awkward_layout_strategy: whatever",
     "caps.awkward_layout_strategy: 'whatever' is not one of requires_contiguous, handles_strided, "
     "contiguize_internally"),
    ("in_place: true", "in_place: false", "caps.in_place: is False but outputs do alias an input"),
    ("      dest_shape: {", "      3d: {", "accept.op_params.fields.3d: param names must be identifiers"),
    ("kernel: write_slice\n", "kernel: write-slice\n", "kernel: kernel name 'write-slice' is not an identifier"),
])
def test_bad_enumerations(tmp_path, old, new, message):
    text = mutate("write_slice", old, new)
    label = "write-slice" if "write-slice" in new else "write_slice"  # blocks are named as written
    expect(tmp_path, text, f"opencl_shape_ops.md: block '{label}': {message}")


def test_bad_arm(tmp_path):
    text = mutate("triangular", "Triu: { upper: true }", "Triu: { lower: true }")
    expect(tmp_path, text, "opencl_shape_ops.md: block 'triangular': arms.Triu.lower: not an op param of this kernel")


def test_duplicate_kernel(tmp_path):
    text = mutate("roll", "kernel: roll\n", "kernel: flip\n")
    expect(tmp_path, text, "opencl_shape_ops.md: block 'flip': kernel: kernel 'flip' is declared twice in this "
                           "document")


def test_block_without_kernel_is_named_by_index(tmp_path):
    text = mutate("concat", "kernel: concat\n", "")
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: block #3 \(line \d+\): kernel: "
                                            r"missing required field$"):
        parse_tmp(tmp_path, text)


@pytest.mark.parametrize("text,message", [
    ("# no front matter\n", "opencl_shape_ops.md: front matter: missing; expected a '---' line before the "
                            "document body"),
    ("---\nfkc_version: 1\n", "opencl_shape_ops.md: front matter: not closed by a '---' line"),
    ("---\nfkc_version: 2\nprovider: {name: a, backend: b, kernel_source: c}\n---\n",
     "opencl_shape_ops.md: front matter: fkc_version: unsupported version 2; this reader knows 1"),
    ("---\nfkc_version: 1\nprovider: {name: a, kernel_source: c}\n---\n",
     "opencl_shape_ops.md: front matter: provider.backend: missing required field"),
    ("---\nfkc_version: 1\nprovider: {name: a, backend: b, kernel_source: c}\n---\nprose only\n",
     "opencl_shape_ops.md: document: no ```fkc blocks found"),
])
def test_bad_document_structure(tmp_path, text, message):
    expect(tmp_path, text, message)


def test_unclosed_fence(tmp_path):
    text = DOC_TEXT[: DOC_TEXT.rindex("\n```")] + "\n"
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: block #20 \(line \d+\): fence: ```fkc block "
                                            r"is not closed$"):
        parse_tmp(tmp_path, text)


def test_python_tag_is_refused_and_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    payload = f'!!python/object/apply:os.system ["touch {marker}"]'
    text = mutate("flip", 'blurb: "Reverse element order along the given axes; byte copy."', f"blurb: {payload}")
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: block 'flip': yaml: could not determine a "
                                            r"constructor for the tag 'tag:yaml.org,2002:python/object/apply:"
                                            r"os.system' \(line \d+\)$"):
        parse_tmp(tmp_path, text)
    assert not marker.exists()


def test_python_object_tag_in_front_matter_is_refused(tmp_path):
    text = DOC_TEXT.replace("  name: zyx-opencl\n", "  name: !!python/object:collections.OrderedDict {}\n", 1)
    with pytest.raises(ContractError, match=r"^opencl_shape_ops.md: front matter: yaml: could not determine a "
                                            r"constructor for the tag 'tag:yaml.org,2002:python/object:"):
        parse_tmp(tmp_path, text)


def test_only_yaml_safe_load_is_used(monkeypatch):
    calls = []
    real = yaml.safe_load

    def counting(text):
        calls.append(text)
        return real(text)

    def forbidden(*args, **kwargs):
        raise AssertionError("a non-safe YAML loader was used")

    monkeypatch.setattr(yaml, "safe_load", counting)
    for name in ("unsafe_load", "full_load", "unsafe_load_all", "full_load_all"):
        monkeypatch.setattr(yaml, name, forbidden)
    doc = zc.parse_document(DOC_TEXT, DOC_NAME)
    assert len(calls) == 1 + len(doc.contracts) == 22
    source = Path(zparse.__file__).read_text(encoding="utf-8")
    assert re.findall(r"yaml\.(\w+)\(", source) == ["safe_load"]


def test_unreadable_file(tmp_path):
    with pytest.raises(ContractError, match=r"^missing.md: cannot read contract document"):
        zc.parse_file(tmp_path / "missing.md")
