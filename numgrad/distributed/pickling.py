"""distributed.pickling: a compiled function travels as its Python function, and is rebuilt
once per process.

Room: distributed (beside the compiler, above it). A ``CompiledFunction`` holds Numba
dispatchers, locks and plans, none of which can (or should) cross a process boundary.
What travels is what ``ng.jit`` was given: the Python function, pickled with cloudpickle
(by reference when it can be imported by name, by value when it is defined in
``__main__``, a notebook or a module registered with
``cloudpickle.register_pickle_by_value``), and the jit options. The receiving process
keeps one rebuilt ``CompiledFunction`` per *token* (a hash of that payload), so the tasks
of every step find the same object, with its plans already traced: a worker traces once,
and loads its kernels from the shared disk cache instead of compiling them.

A rebuild may also name a *variant* (``data_parallel`` uses the argument shapes): each
variant is a function of its own, which only ever sees one signature. That keeps the
bits a worker computes independent of what it computed before: a ``CompiledFunction``
that meets a second shape of the same ranks builds a shape-generic plan, whose kernels
may round differently from the first shape's static ones.

The reducer is registered with ``copyreg`` (which both ``pickle`` and cloudpickle
consult) when ``numgrad.distributed`` is imported, so the compiler itself knows nothing of
pickling.
"""
from __future__ import annotations

import copyreg
import hashlib
import threading
from collections import OrderedDict

from numgrad.compiler.jit_function import CompiledFunction

# How many rebuilt functions a process keeps (least recently used dropped): a worker
# serves a few models, with a few shard shapes each, at a time.
MAX_FUNCTIONS = 256

_FUNCTIONS: OrderedDict = OrderedDict()   # (token, variant) -> CompiledFunction
_LOCK = threading.Lock()


def jit_options(cf: CompiledFunction) -> dict:
    """The ``ng.jit`` keyword arguments that made ``cf`` (what a rebuild must repeat)."""
    o = cf.options
    return dict(device=cf.device, parallel=o.parallel, fastmath=o.fastmath, cache=o.cache,
                backend=cf.backend, verbose=o.verbose, vector_math=o.vector_math,
                max_plans=cf._plans.max_plans)


def dumps(obj, fn) -> bytes:
    """cloudpickle of ``obj``; ``TypeError`` naming the function ``fn`` when it cannot be
    pickled (it captures a lock, an open file, a socket...)."""
    import cloudpickle

    try:
        return cloudpickle.dumps(obj)
    except Exception as exc:
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        raise TypeError(
            f"cannot pickle the function {name!r} to send it to other processes: "
            f"{type(exc).__name__}: {exc}. Define it at module level, and keep what it "
            "captures (globals, closure cells, default arguments) picklable: arrays, "
            "tensors and numbers are; locks, open files, sockets and generators are not."
        ) from exc


def payload(cf: CompiledFunction) -> tuple[str, bytes]:
    """``(token, bytes)``: cloudpickle of ``cf``'s function and options, and its hash.
    Raises ``TypeError`` as :func:`dumps` does."""
    data = dumps((cf.fn, jit_options(cf)), getattr(cf.fn, "loss", cf.fn))
    return hashlib.sha256(data).hexdigest(), data


def remember(token: str, cf: CompiledFunction, variant=None) -> CompiledFunction:
    """Keep ``cf`` as this process's function for ``token`` (the first one wins)."""
    with _LOCK:
        kept = _FUNCTIONS.setdefault((token, variant), cf)
        _FUNCTIONS.move_to_end((token, variant))
        while len(_FUNCTIONS) > MAX_FUNCTIONS:
            _FUNCTIONS.popitem(last=False)
        return kept


def lookup(token: str) -> dict:
    """``{variant: function}``: this process's functions for ``token``."""
    with _LOCK:
        return {v: cf for (t, v), cf in _FUNCTIONS.items() if t == token}


def rebuild(token: str, data: bytes, variant=None) -> CompiledFunction:
    """The unpickling side: this process's function for ``token`` (and ``variant``),
    built the first time."""
    with _LOCK:
        cf = _FUNCTIONS.get((token, variant))
    if cf is not None:
        return cf
    import cloudpickle

    from numgrad.compiler import jit

    fn, options = cloudpickle.loads(data)
    return remember(token, jit(fn, **options), variant)


def _reduce(cf: CompiledFunction):
    token, data = payload(cf)
    # The sending process has a function for this token already: this one.
    remember(token, cf)
    return rebuild, (token, data)


copyreg.pickle(CompiledFunction, _reduce)
