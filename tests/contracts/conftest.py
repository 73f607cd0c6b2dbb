"""Puts this folder on ``sys.path`` (pytest's prepend import mode does so for a conftest's
folder), so tests in ``spec/`` and ``kernels/`` import the shared ``contract_data`` helper."""
