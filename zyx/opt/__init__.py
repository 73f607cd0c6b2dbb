"""Optimization: device heuristics for IR kernels' opt actions (``heuristics``), and the autotuner:
beam search (``search``), the per-device database (``db``), the choice between them (``tuner``),
IR kernels' search spaces (``ir_tuning``) and ``zyx tune``'s built-in workloads (``workloads``)."""
