"""Reverse-mode autograd: the engine (grad modes, the backward graph, ``record``, ``backward``) in
``engine``, the gradient rules of the primitive ops in ``rules``, and the rules of views written in
place in ``views``. The rules are written against tensor methods, so this package imports no op module."""
