"""Finding and rendering the Mako templates under ``templates/``.

The templates live at the repository's top level; a wheel carries them inside the
package as ``zyx/templates`` (see pyproject.toml). Both places are looked up, the
packaged copy first, so installed and editable installs behave the same.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from mako.lookup import TemplateLookup


def templates_dir() -> Path:
    """The directory holding zyx's Mako templates."""
    package_dir = Path(__file__).resolve().parent.parent
    for candidate in (package_dir / "templates", package_dir.parent / "templates"):
        if (candidate / "common" / "dtypes.mako").is_file():
            return candidate
    raise FileNotFoundError(
        f"zyx templates not found next to {package_dir}; the installation is incomplete "
        "(reinstall zyx)"
    )


@functools.lru_cache(maxsize=1)
def _lookup() -> TemplateLookup:
    return TemplateLookup(directories=[str(templates_dir())], strict_undefined=True,
                          input_encoding="utf-8")


@functools.lru_cache(maxsize=4096)
def _render_cached(name: str, frozen: tuple[tuple[str, Any], ...]) -> str:
    return _lookup().get_template(name).render(**dict(frozen))


def render(template: str, **params: Any) -> str:
    """Render ``template`` (path under templates/) with an explicit parameter set.

    Renders are memoized on the (hashable) parameters: the source of a kernel is
    produced once per process.
    """
    try:
        return _render_cached(template, tuple(sorted(params.items())))
    except TypeError:  # an unhashable parameter: render without the memo
        return _lookup().get_template(template).render(**params)
