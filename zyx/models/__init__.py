"""Reference model families built from ``zyx.nn`` (DESIGN.md): ``zyx.models.llama`` (Llama, Qwen2, Mistral)."""
