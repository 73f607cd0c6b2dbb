"""Hand-written kernel families, one module each owning its template, parameters and launcher:
``contracts/`` (one module per FKC contract kernel, with its calibration workload), ``scatter``,
``sorting``, ``svd``, ``pad``, ``random`` (Philox bits), ``conv`` (the direct 2-D convolution, tuned by
``conv_tuning``), ``attention`` (scaled dot-product attention without the T x T matrix, forward and
backward), ``resample`` (the uint8 separable pass) and ``optimizer_step``.

Launchers take device buffers and plain ints and enqueue asynchronously; making tensors of the results
(``EXTERN`` graph nodes, gradients) is the job of the layers above (``frontend``, ``nn``, ``optim``).
"""
