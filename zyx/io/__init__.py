"""Files: safetensors reading and writing (``zyx.save_file``, ``zyx.load_file``, ``zyx.save``, ``zyx.load``) and
GGUF reading (``zyx.io.load_gguf``)."""
from zyx.io.gguf import GGUFError, load_gguf
from zyx.io.safetensors import SafetensorsError, load, load_file, load_file_metadata, save, save_file

__all__ = ["GGUFError", "SafetensorsError", "load", "load_file", "load_file_metadata", "load_gguf", "save",
           "save_file"]
