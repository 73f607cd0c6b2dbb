"""README's list of the ATen ops the torch.compile backend maps is the mapping table's."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from zyx.torch_backend import supported_ops


def test_readme_lists_the_mapped_aten_ops() -> None:
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"<!-- aten-ops:[^>]*-->\n(.*?)\n<!-- /aten-ops -->", text, re.S)
    assert block, "README.md lost its aten-ops block"
    listed = [op.strip() for op in block.group(1).replace("\n", " ").split(",")]
    assert listed == supported_ops(), "regenerate the list: ', '.join(zyx.torch_backend.supported_ops())"
