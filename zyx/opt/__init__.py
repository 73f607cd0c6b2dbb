"""Optimization: device heuristics for IR kernels' opt actions (``heuristics``), and the autotuner:
beam search (``search``), the per-device database (``db``), the choice between them (``tuner``) and
IR kernels' search spaces (``ir_tuning``); ``zyx tune``'s built-in workloads live in ``cli/tune``."""
