"""backends.cpu.lstm_steps: one LSTM layer step's gate arithmetic as one compiled loop.

Room: compiler. ``ops.recurrent``'s layer kernels run the time loop on the host: per step
one BLAS product, then the step's elementwise work. As NumPy calls that work was about ten
calls a step each way (a few microseconds each at a batch's size); here it is one Numba
loop per step with ``llvm.vmath``'s vectorised ``sigmoid``/``tanh`` (Numba's own
``math.tanh`` is a scalar libm call: a Numba forward loop with it took 2.4x NumPy's time).
The compiler fills the ``ops.recurrent.step_kernels`` slot with ``kernels`` (ops cannot
import the compiler), so eager and ``@ng.jit`` calls both run these on the CPU.

Two details keep the loops vectorised: every array is indexed by constant gate slots
(``a[t, b, k, j]``, the 4H axis split into (4, H)), since Numba's index wrap-around for a
computed ``k * H + j`` makes the store addresses non-affine; and the arrays' data pointers
are marked noalias (``scalar.noalias_args``: the loops only write arrays that no other
argument overlaps where it is read).

The bench's shapes (hidden 128, batch 20, 35 steps, float32, one thread; CPU time of the
layer kernels alone): forward 2.7 -> 1.6 ms, backward through time without the weight
gradient's product 3.4 -> 1.8 ms,
then 1.4 ms with a step's product as four ``(B, H) @ (H, H)`` products summed in the loop.
"""
from __future__ import annotations

import numba
import numpy as np

from numgrad.compiler.backends.cpu.llvm import vmath_numba as vm
from numgrad.compiler.backends.cpu.scalar import noalias_args


@numba.njit(nogil=True)
def _forward(f_y, f_gi, t, f_cp):
    """Step ``t``: ``y[2:, t]`` holds ``h_prev @ w_hh.T`` per gate; add ``gi[t]``, activate
    the gates in place, write ``c`` and ``h`` to ``y[1, t]`` and ``y[0, t]``."""
    noalias_args()
    y, gi, cp = f_y, f_gi, f_cp
    batch, hidden = cp.shape
    for b in range(batch):
        for j in range(hidden):
            i = vm.sigmoid(y[2, t, b, j] + gi[t, b, 0, j])
            f = vm.sigmoid(y[3, t, b, j] + gi[t, b, 1, j])
            g = vm.tanh(y[4, t, b, j] + gi[t, b, 2, j])
            o = vm.sigmoid(y[5, t, b, j] + gi[t, b, 3, j])
            y[2, t, b, j] = i
            y[3, t, b, j] = f
            y[4, t, b, j] = g
            y[5, t, b, j] = o
            c = f * cp[b, j] + i * g
            y[1, t, b, j] = c
            y[0, t, b, j] = o * vm.tanh(c)


def _make_backward(one):
    # ``one`` is the dtype's 1, a constant of the loop: an int literal would promote a
    # float32 ``1 - x`` to float64 (Numba types scalars as NumPy does), which ran the loop
    # at half the vector width (0.43 against 0.36 ms for 35 steps) and rounded unlike torch.
    @numba.njit(nogil=True)
    def _backward(f_y, f_g, t, f_dh, f_cp, f_dc, f_dgi, c_grad):
        """Step ``t`` backwards: from the gradient reaching ``h`` (the sum of ``dh``'s four
        per-gate blocks plus the outside ``g[0, t]``) and ``c`` (``dc``, plus ``g[1, t]``
        where ``c_grad``), the gate pre-activations' gradient ``dgi[t]``; ``dc`` becomes
        the previous ``c``'s share."""
        noalias_args()
        y, g, dh, cp, dc, dgi = f_y, f_g, f_dh, f_cp, f_dc, f_dgi
        batch, hidden = dc.shape
        for b in range(batch):
            for j in range(hidden):
                dhv = dh[0, b, j] + dh[1, b, j] + dh[2, b, j] + dh[3, b, j] + g[0, t, b, j]
                dcv = dc[b, j]
                if c_grad:
                    dcv += g[1, t, b, j]
                tc = vm.tanh(y[1, t, b, j])
                i = y[2, t, b, j]
                f = y[3, t, b, j]
                gg = y[4, t, b, j]
                o = y[5, t, b, j]
                dcv += dhv * o * (one - tc * tc)
                dgi[t, b, 0, j] = dcv * gg * i * (one - i)
                dgi[t, b, 1, j] = dcv * cp[b, j] * f * (one - f)
                dgi[t, b, 2, j] = dcv * i * (one - gg * gg)
                dgi[t, b, 3, j] = dhv * tc * o * (one - o)
                dc[b, j] = dcv * f
    return _backward


_BUILT: dict = {}


def kernels(dtype):
    """``(forward, backward)`` step loops for arrays of ``dtype``, or None where there are
    none (dtypes other than float32 and float64: the caller keeps its NumPy steps).

    >>> kernels(np.dtype(np.float16)) is None
    True
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        return None
    steps = _BUILT.get(dtype)
    if steps is None:
        steps = _BUILT[dtype] = (_forward, _make_backward(dtype.type(1)))
    return steps
