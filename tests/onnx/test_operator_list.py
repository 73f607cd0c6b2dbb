"""README's list of the ONNX operators zyx runs is the mapping table's."""
from __future__ import annotations

import re
from pathlib import Path

from zyx.onnx import supported_operators


def test_readme_lists_the_supported_operators() -> None:
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"<!-- onnx-ops:[^>]*-->\n(.*?)\n<!-- /onnx-ops -->", text, re.S)
    assert block, "README.md lost its onnx-ops block"
    listed = [op.strip() for op in block.group(1).replace("\n", " ").split(",")]
    assert listed == list(supported_operators()), "regenerate: ', '.join(zyx.onnx.supported_operators())"
