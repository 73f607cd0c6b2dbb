"""Files: safetensors reading and writing (``zyx.save_file``, ``zyx.load_file``, ``zyx.save``, ``zyx.load``)."""
from zyx.io.safetensors import SafetensorsError, load, load_file, load_file_metadata, save, save_file

__all__ = ["SafetensorsError", "load", "load_file", "load_file_metadata", "save", "save_file"]
