"""The lazy graph: nodes (``node``, built by ``build``), fusion into kernels (``fusion``), the schedule cache
(``schedule``) and realization (``realize``). The frontend builds nodes with the functions
re-exported here; nothing in this package knows about ``Tensor``."""
from zyx.graph.build import (
    alu,
    cast,
    choose_device,
    const,
    copy,
    extern,
    from_buffer,
    gather,
    on_device,
    pad,
    reduce,
)
from zyx.graph.node import Extern, GatherSpec, LazyNode, Src
from zyx.graph.realization import flush_readers, realize, set_buffer
from zyx.graph.schedule import schedule_stats

__all__ = ["Extern", "GatherSpec", "LazyNode", "Src", "alu", "cast", "choose_device", "const", "copy", "extern",
           "flush_readers", "from_buffer", "gather", "on_device", "pad", "realize", "reduce", "schedule_stats",
           "set_buffer"]
