"""FKC contract documents, the device-free layer: parse (YAML), the cost expression
language, accept-clause validation, the registry of the shipped documents and the model
(``Contract`` values). Nothing here imports OpenCL or ``zyx.backend``; the kernels that
implement the contracts live in ``zyx.kernels.contracts``, device calibration in
``zyx.contracts.calibrate``.
"""
