"""Compiles a plan makes after it was built are shown and counted as its function's.

With ``parallel="auto"`` and a cold cache a plan's first call runs serial kernels and its
second compiles the multi-threaded tier (``backends.cpu.build.prange_tier``); the habit
``loss = f(x); loss.backward()`` compiles the one-pass forward and backward
(``compiler.speculate``) when it comes a second time. Both must show the progress line
(naming the function and what is compiled) and land in the owner's ``stats``.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import numgrad as ng

N = 1 << 17   # enough work for a parallel loop (schedule.PARALLEL_MIN_WORK)


@pytest.fixture
def progress_now(monkeypatch):
    monkeypatch.setenv("NUMGRAD_PROGRESS", "1")
    monkeypatch.setenv("NUMGRAD_PROGRESS_DELAY", "0")


def _prange_sum(x, y):
    return (x * y + ng.sin(x)).sum()


def test_numba_multithreaded_tier_is_shown_and_counted(monkeypatch, progress_now, capsys):
    monkeypatch.setenv("NUMGRAD_LLVM_KERNEL", "0")   # Numba's prange tier, compiled
    f = ng.jit(_prange_sum, cache=False)
    x = ng.randn(N, dtype=ng.float64)
    y = ng.randn(N, dtype=ng.float64)
    first = f(x, y).numpy().copy()
    prog = next(iter(f._plans.values())).programs[0]
    assert prog.tier == "serial"
    err = capsys.readouterr().err
    assert "multi-threaded tier" not in err          # nothing compiled for it yet
    compiles, seconds = f.stats.compiles, f.stats.compile_seconds
    second = f(x, y).numpy()
    assert prog.tier == "final"
    err = capsys.readouterr().err
    assert "numgrad: compiling _prange_sum (multi-threaded tier" in err
    assert f.stats.compiles == compiles + 1
    assert f.stats.compile_seconds > seconds
    assert f.stats.traces == 1
    # The tiers compute the same chunks in the same order: the same bits.
    assert first.tobytes() == second.tobytes()
    want = (x.numpy() * y.numpy() + np.sin(x.numpy())).sum()
    np.testing.assert_allclose(second, want, rtol=1e-12)
    # A third call compiles nothing and shows nothing.
    f(x, y)
    assert capsys.readouterr().err == ""
    assert f.stats.compiles == compiles + 1


def _chain(x):
    for _ in range(6):   # long and heavy: a parallel llvm_body loop at 4096 elements
        x = ng.tanh(ng.sin(x) * 1.01 + 0.1 * x)
    return x.sum()


def test_llvmlite_threads_tier_is_timed_but_compiles_nothing(monkeypatch, progress_now):
    monkeypatch.setenv("NUMGRAD_LLVM_KERNEL", "1")
    f = ng.jit(_chain, cache=False)
    x = ng.randn(4096, dtype=ng.float64)
    first = f(x).numpy().copy()
    prog = next(iter(f._plans.values())).programs[0]
    assert prog.module is None and prog.tier == "serial"   # llvmlite kernels, serial
    compiles, seconds = f.stats.compiles, f.stats.compile_seconds
    assert f(x).numpy().tobytes() == first.tobytes()
    assert prog.tier == "final"
    # Switching llvmlite kernels to threads starts the pool and compiles no code.
    assert f.stats.compiles == compiles
    assert f.stats.compile_seconds >= seconds


def test_one_pass_forward_and_backward_is_shown_and_counted(progress_now, capsys):
    f = ng.jit(lambda x: (ng.tanh(x) * x).sum())
    x = ng.randn(64, dtype=ng.float64, requires_grad=True)
    f(x).backward()
    g1 = x.grad.numpy().copy()
    capsys.readouterr()
    compiles, seconds = f.stats.compiles, f.stats.compile_seconds
    x.grad = None
    f(x).backward()                   # runs the joint program, compiled now
    err = capsys.readouterr().err
    assert "numgrad: compiling <lambda> (forward and backward in one pass" in err
    assert f.stats.compiles == compiles + 1
    assert f.stats.compile_seconds > seconds
    assert f.stats.traces == 1
    assert x.grad.numpy().tobytes() == g1.tobytes()
    # Eager is the reference.
    xe = x.detach().requires_grad_(True)
    (ng.tanh(xe) * xe).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-12)


def test_eight_threads_wanting_the_one_pass_program_compile_it_once():
    # Eight threads call one plan with f(x).backward() at once: the joint program is compiled
    # by one of them while the others wait for it, and stats count that compile once (each
    # waiting thread used to add its wait, and each compiled its own copy).
    f = ng.jit(lambda x: (ng.sin(x) * x).sum(), cache=False)
    x0 = np.linspace(-1.0, 1.0, 9)
    f(ng.tensor(x0, requires_grad=True)).backward()    # the plan, and its backward seen
    spec = next(iter(f._plans.values())).spec
    assert spec is not None and spec.joint is None
    built, build = [], spec._build
    spec._build = lambda: built.append(1) or build()
    compiles, seconds = f.stats.compiles, f.stats.compile_seconds
    start, grads, errors = threading.Barrier(8), [], []

    def work():
        try:
            start.wait()
            for _ in range(2):
                x = ng.tensor(x0, requires_grad=True)
                f(x).backward()
                grads.append(x.grad.numpy())
        except Exception as exc:  # noqa: BLE001  (reported by the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    assert not errors, errors
    assert len(built) == 1 and spec.joint is not None
    assert f.stats.compiles == compiles + 1
    assert 0 < f.stats.compile_seconds - seconds <= wall
    want = np.sin(x0) + x0 * np.cos(x0)
    for g in grads:
        assert g.tobytes() == grads[0].tobytes()
        np.testing.assert_allclose(g, want, rtol=1e-12)
