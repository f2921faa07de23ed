"""The LLVM attributes numgrad adds to its kernels (backends/cpu/llvm/attrs.py): noalias on
the data pointers of a loop function's f_* arrays, and a 512-bit vector preference on
functions that call the vector math. Checked in the IR Numba hands to LLVM."""
from __future__ import annotations

import re

import numpy as np
from numba import njit

from numgrad.compiler.backends.cpu.scalar_vec import exp, noalias_args


def _ir(dispatcher):
    return "\n".join(dispatcher.inspect_llvm().values())


def _define_line(ir_text, pyname):
    return next(line for line in ir_text.splitlines()
                if line.startswith("define") and pyname in line)


def test_noalias_args_marks_only_the_data_pointers_of_f_arrays():
    @njit(cache=False)
    def loop_fn(lo, m, f_x, f_out, other):
        noalias_args()
        for j in range(m):
            f_out[lo + j] = f_x[lo + j] * 2.0 + other[lo + j]

    x, out, other = np.arange(8.0), np.zeros(8), np.ones(8)
    loop_fn(0, 8, x, out, other)
    np.testing.assert_array_equal(out, x * 2 + 1)
    head = _define_line(_ir(loop_fn), "loop_fn")
    marked = re.findall(r"noalias[^,]*%arg\.([\w.]+)", head)
    assert "f_x.4" in marked and "f_out.4" in marked
    assert not any(m.startswith("other") for m in marked)
    assert not any(m.startswith("f_") and not m.endswith(".4") for m in marked)


def test_functions_calling_vector_math_prefer_512_bit_vectors():
    @njit(cache=False)
    def uses_exp(a, out):
        for i in range(a.size):
            out[i] = exp(a[i])

    @njit(cache=False)
    def plain(a, out):
        for i in range(a.size):
            out[i] = a[i] + 1.0

    a, out = np.linspace(-3, 3, 64), np.empty(64)
    uses_exp(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-15)
    plain(a, out)
    tagged = _ir(uses_exp)
    attr_ids = re.findall(r"#(\d+)", _define_line(tagged, "uses_exp").split(")")[-1])
    groups = [re.search(r"^attributes #%s = .*$" % i, tagged, re.M).group(0) for i in attr_ids]
    assert any('"prefer-vector-width"="512"' in g for g in groups)
    assert '"prefer-vector-width"' not in _ir(plain)
