"""Reference model families built from ``zyx.nn`` (DESIGN.md): ``zyx.models.llama`` (Llama, Qwen2, Mistral) and
``zyx.models.llama_gguf`` (their llama.cpp GGUF checkpoints as Hugging Face configs and state dicts)."""
