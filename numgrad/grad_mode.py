"""grad_mode: whether operations record a graph, per thread.

Room: leaf. ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and
``inference_mode`` work as context managers and as decorators, with or without
parentheses, as in PyTorch.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading

class _State(threading.local):
    # Class-level defaults: a thread that never set a mode reads these at once (a getattr
    # default on a bare threading.local raises and catches AttributeError, ~0.3 us per op).
    enabled = True
    inference = False


_state = _State()


def is_grad_enabled() -> bool:
    """Whether operations record a graph on this thread (``torch.is_grad_enabled``)."""
    return getattr(_state, "enabled", True)


def _set_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active on this thread
    (``torch.is_inference_mode_enabled``).
    """
    return getattr(_state, "inference", False)


class _GradModeContext:
    """Base for the grad-mode managers: a context manager and a decorator."""

    def __new__(cls, *args, **kwargs):
        # `@ng.no_grad` without parentheses hands us the function itself.
        if len(args) == 1 and not kwargs and callable(args[0]) and cls._bare_decorator_ok:
            return cls()(args[0])
        return super().__new__(cls)

    _bare_decorator_ok = True

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self._clone, fn)
        if inspect.iscoroutinefunction(fn):
            return _wrap_coroutine(self._clone, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._clone():
                return fn(*args, **kwargs)
        return wrapper

    def _clone(self):
        return type(self)()

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(self._mode())

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False


def _drive(ctx_factory, gen, first):
    """Step ``gen`` (a generator or a coroutine) with the mode set while it runs.

    The mode holds from each resume to the next suspension and the caller's mode is
    back in force between them, as PyTorch's generator wrapper does.
    """
    try:
        with ctx_factory():
            response = gen.send(first)
        while True:
            try:
                request = yield response
            except GeneratorExit:
                with ctx_factory():
                    gen.close()
                raise
            except BaseException:
                with ctx_factory():
                    response = gen.throw(*sys.exc_info()[1:2])
            else:
                with ctx_factory():
                    response = gen.send(request)
    except StopIteration as e:
        return e.value


def _wrap_generator(ctx_factory, fn):
    @functools.wraps(fn)
    def generator(*args, **kwargs):
        return (yield from _drive(ctx_factory, fn(*args, **kwargs), None))
    return generator


class _Awaitable:
    """Lets an ``async def`` wrapper ``await`` a plain generator that drives the coroutine."""

    __slots__ = ("gen",)

    def __init__(self, gen):
        self.gen = gen

    def __await__(self):
        return self.gen


def _wrap_coroutine(ctx_factory, fn):
    # PyTorch 2.13 sets the mode only while the coroutine object is created, so
    # `@torch.no_grad() async def` has no effect inside; numgrad applies it on every
    # resume, as it does for generators.
    @functools.wraps(fn)
    async def coroutine(*args, **kwargs):
        return await _Awaitable(_drive(ctx_factory, fn(*args, **kwargs), None))
    return coroutine


class no_grad(_GradModeContext):
    """Disable graph recording: ``with ng.no_grad(): y = x * 2`` gives
    ``y.requires_grad == False``."""

    def _mode(self):
        return False


class enable_grad(_GradModeContext):
    """Enable graph recording inside a ``no_grad`` region."""

    def _mode(self):
        return True


class set_grad_enabled(_GradModeContext):
    """``ng.set_grad_enabled(False)`` takes effect at once, and also works as a context manager."""

    _bare_decorator_ok = False

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    def _mode(self):
        return self.mode

    def __call__(self, fn):
        _set_enabled(self._prev)  # as a decorator it applies per call, not at definition
        return super().__call__(fn)

    def _clone(self):
        return _Restoring(self.mode)

    def __enter__(self):
        pass  # already applied in __init__, as PyTorch does

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False


class _Restoring(_GradModeContext):
    _bare_decorator_ok = False

    def __init__(self, mode):
        self.mode = mode

    def _mode(self):
        return self.mode


class inference_mode(_GradModeContext):
    """Like ``no_grad`` (numgrad keeps no separate inference tensors)."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _mode(self):
        return not self.mode and is_grad_enabled()

    def _clone(self):
        return inference_mode(self.mode)

    def __enter__(self):
        self._prev_inf = is_inference_mode_enabled()
        _state.inference = self.mode
        super().__enter__()

    def __exit__(self, *exc):
        _state.inference = self._prev_inf
        return super().__exit__(*exc)
