"""The Oclgrind sanitizer tier (a package, so its conftest never shadows tests/conftest.py as ``conftest``)."""
