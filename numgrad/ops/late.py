"""ops.late: ops that low modules of the ops room call but higher ones define.

Room: ops (the lowest module: imports nothing). The dispatcher casts and unbroadcasts with
ops that ``ops.elementwise`` and ``ops.layout`` define, view write-back
(``ops.views``) rebuilds views with ``ops.layout``'s and ``ops.indexing``'s primitives,
matmul's rules (``ops.linalg``) use ``ops.linear``'s products; those modules import the
lower ones, so the lower ones cannot import them. Each one enters its op
here when it defines it (the modules are imported with ``numgrad.ops``, before any op
runs), and the callers read the attribute at run time: one attribute read, never an
import per call, and every import in the room points one way.
"""
from __future__ import annotations

to_dtype = None     # ops.elementwise: the cast type promotion inserts
expand_p = None     # ops.layout: broadcasting a gradient back (reductions)
reshape_p = None    # ops.layout
index_put_p = None  # ops.indexing: writing through a getitem view
is_advanced = None  # ops.indexing: whether an index is advanced (a copy, not a view)
mm_nt = None        # ops.linear: x @ w.T and a.T @ b, for matmul's vjp rules (ops.linalg)
mm_tn = None
