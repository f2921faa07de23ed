"""ops.recurrent: fused LSTM and GRU cell primitives (the step after the two matmuls).

Room: ops. A recurrent step written in elementwise ops costs about 17 primitive applications
forward and 40 backward, four of them (``chunk``'s pieces) scattering their gradient into
zeros of the whole gate tensor; at LSTM sizes (20x512 gates) the per-op overhead is most of
the step. Here a step's gate arithmetic is one NumPy call forward and one per input
backward, over the whole gate tensor, so nothing is sliced and nothing scattered:

- ``lstm_cell_c(gates, c)``: ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``;
- ``lstm_cell_h(gates, c')``: ``h' = sigmoid(o) * tanh(c')``;
- ``gru_cell(gi, gh, h)``: ``h' = n + z * (h - n)``, ``r = sigmoid(i_r + h_r)``,
  ``z = sigmoid(i_z + h_z)``, ``n = tanh(i_n + r * h_n)``.

``gates`` is ``(..., 4H)`` in PyTorch's order i, f, g, o (the two projections and biases
summed); a GRU's ``gi``/``gh`` are ``(..., 3H)``, r, z, n. Two LSTM primitives rather than
one because a primitive has one output.

The first-order backward of each is a fused NumPy primitive too (``*_grad_*``, no vjp of
their own). Where the backward itself is differentiated (``create_graph=True``, grad mode on
while the rules run) the rules instead spell the same derivative in elementwise ops over
views of the gates, so every higher order follows from those ops' rules. Under ``@ng.jit``
the primitives run their NumPy impl as steps between the kernels, like ``im2col``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from numgrad.dtypes import SCALAR_NAMES
from numgrad.grad_mode import is_grad_enabled
from numgrad.ops import elementwise as E
from numgrad.ops import layout as L
from numgrad.ops.indexing import getitem
from numgrad.ops.registry import defop


def _sig(x):
    # 1 / (1 + e^-x): e^-x overflows to inf for x < -88 (float32) and the quotient is then
    # the 0 it should be; the caller runs with NumPy's FP warnings off.
    return 1 / (1 + np.exp(-x))


def _blocks(a, k):
    n = a.shape[-1] // k
    return [a[..., j * n:(j + 1) * n] for j in range(k)]


# ------------------------------------------------------------------ LSTM, NumPy kernels
def _np_lstm_c(gates, c):
    i, f, g, _ = _blocks(gates, 4)
    return _sig(f) * c + _sig(i) * np.tanh(g)


def _np_lstm_h(gates, c):
    return _sig(gates[..., 3 * c.shape[-1]:]) * np.tanh(c)


def _np_lstm_c_grad_gates(gc, gates, c):
    i, f, g, _ = _blocks(gates, 4)
    si, sf, tg = _sig(i), _sig(f), np.tanh(g)
    out = np.zeros(np.broadcast_shapes(gates.shape, gc.shape[:-1] + gates.shape[-1:]),
                   gates.dtype)
    di, df, dg, _ = _blocks(out, 4)
    np.multiply(gc * tg, si * (1 - si), out=di)
    np.multiply(gc * c, sf * (1 - sf), out=df)
    np.multiply(gc * si, 1 - tg * tg, out=dg)
    return out


def _np_lstm_c_grad_c(gc, gates):
    return gc * _sig(_blocks(gates, 4)[1])


def _np_lstm_h_grad_gates(gh, gates, c):
    h = c.shape[-1]
    so = _sig(gates[..., 3 * h:])
    out = np.zeros(np.broadcast_shapes(gates.shape, gh.shape[:-1] + gates.shape[-1:]),
                   gates.dtype)
    np.multiply(gh * np.tanh(c), so * (1 - so), out=out[..., 3 * h:])
    return out


def _np_lstm_h_grad_c(gh, gates, c):
    tc = np.tanh(c)
    return gh * _sig(gates[..., 3 * c.shape[-1]:]) * (1 - tc * tc)


def _state_shape(gates, c):
    return tuple(c.shape), gates.dtype


def _gates_shape(g, gates, *rest):
    return tuple(gates.shape), gates.dtype


# grad_fn names: what PyTorch's cells end in (c' a sum, h' a product, a GRU's h' a sum).
lstm_cell_c = defop("lstm_cell_c", inputs=("gates", "c"), impl=_np_lstm_c,
                    abstract=_state_shape, node="AddBackward0")
lstm_cell_h = defop("lstm_cell_h", inputs=("gates", "c"), impl=_np_lstm_h,
                    abstract=_state_shape, node="MulBackward0")
_lstm_c_grad_gates = defop("lstm_cell_c_grad_gates", inputs=("g", "gates", "c"),
                           impl=_np_lstm_c_grad_gates, abstract=_gates_shape)
_lstm_c_grad_c = defop("lstm_cell_c_grad_c", inputs=("g", "gates"), impl=_np_lstm_c_grad_c,
                       abstract=lambda g, gates: (tuple(g.shape), gates.dtype))
_lstm_h_grad_gates = defop("lstm_cell_h_grad_gates", inputs=("g", "gates", "c"),
                           impl=_np_lstm_h_grad_gates, abstract=_gates_shape)
_lstm_h_grad_c = defop("lstm_cell_h_grad_c", inputs=("g", "gates", "c"),
                       impl=_np_lstm_h_grad_c, abstract=lambda g, gates, c: (tuple(c.shape),
                                                                            gates.dtype))


# ------------------------------------------------------------------ LSTM, rules
def _views(x, k):
    """The ``k`` equal blocks of the last dim as views (their gradient: a higher order only)."""
    n = x.shape[-1] // k
    return [getitem(x, (Ellipsis, slice(j * n, (j + 1) * n))) for j in range(k)]


def _zeros_as(x):
    return E.mul(x, 0.0)  # keeps x's graph, device and dtype; only a higher order runs it


def _lstm_c_vjp_gates(g, gates, c):
    if not is_grad_enabled():
        return _lstm_c_grad_gates(g, gates, c)
    i, f, gg, _ = _views(gates, 4)
    si, sf, tg = E.sigmoid(i), E.sigmoid(f), E.tanh(gg)
    return L.cat([g * tg * si * (1 - si), g * c * sf * (1 - sf), g * si * (1 - tg * tg),
                  _zeros_as(g)], -1)


def _lstm_c_vjp_c(g, gates):
    if not is_grad_enabled():
        return _lstm_c_grad_c(g, gates)
    return g * E.sigmoid(_views(gates, 4)[1])


def _lstm_h_vjp_gates(g, gates, c):
    if not is_grad_enabled():
        return _lstm_h_grad_gates(g, gates, c)
    so = E.sigmoid(_views(gates, 4)[3])
    zero = _zeros_as(g)
    return L.cat([zero, zero, zero, g * E.tanh(c) * so * (1 - so)], -1)


def _lstm_h_vjp_c(g, gates, c):
    if not is_grad_enabled():
        return _lstm_h_grad_c(g, gates, c)
    tc = E.tanh(c)
    return g * E.sigmoid(_views(gates, 4)[3]) * (1 - tc * tc)


lstm_cell_c.defvjp(_lstm_c_vjp_gates, _lstm_c_vjp_c)
lstm_cell_h.defvjp(_lstm_h_vjp_gates, _lstm_h_vjp_c)


def lstm_cell(gates, c):
    """One LSTM step from the summed gate pre-activations ``gates`` ``(..., 4H)`` (i, f, g, o)
    and the cell state ``c`` ``(..., H)``: ``(h', c')``.

    >>> h, c = lstm_cell(ng.zeros(2, 8), ng.ones(2, 2))
    >>> c
    tensor([[0.5000, 0.5000],
            [0.5000, 0.5000]])
    """
    c = lstm_cell_c(gates, c)
    return lstm_cell_h(gates, c), c


# ------------------------------------------------------------------ GRU
def _gru_parts(gi, gh):
    ir, iz, i_n = _blocks(gi, 3)
    hr, hz, hn = _blocks(gh, 3)
    r, z = _sig(ir + hr), _sig(iz + hz)
    return r, z, np.tanh(i_n + r * hn), hn


def _np_gru(gi, gh, h):
    _, z, n, _ = _gru_parts(gi, gh)
    return n + z * (h - n)


def _np_gru_grads(g, gi, gh, h):
    """The gradients of the three gate blocks of ``gi`` (r, z, n pre-activations) and of
    ``gh``'s n block: ``(d_gi, d_hn)``."""
    r, z, n, hn = _gru_parts(gi, gh)
    d = np.empty(np.broadcast_shapes(gi.shape, g.shape[:-1] + gi.shape[-1:]), gi.dtype)
    dr, dz, dn = _blocks(d, 3)
    np.multiply(g * (1 - z), 1 - n * n, out=dn)      # through tanh
    np.multiply(g * (h - n), z * (1 - z), out=dz)
    np.multiply(dn * hn, r * (1 - r), out=dr)
    return d, dn * r


def _np_gru_grad_gi(g, gi, gh, h):
    return _np_gru_grads(g, gi, gh, h)[0]


def _np_gru_grad_gh(g, gi, gh, h):
    d, dhn = _np_gru_grads(g, gi, gh, h)
    d[..., 2 * h.shape[-1]:] = dhn
    return d


def _np_gru_grad_h(g, gi, gh, h):
    return g * _gru_parts(gi, gh)[1]


gru_cell = defop("gru_cell", inputs=("gi", "gh", "h"), impl=_np_gru,
                 abstract=lambda gi, gh, h: (tuple(h.shape), gi.dtype), node="AddBackward0")
_gru_grad_gi = defop("gru_cell_grad_gi", inputs=("g", "gi", "gh", "h"), impl=_np_gru_grad_gi,
                     abstract=lambda g, gi, gh, h: (tuple(gi.shape), gi.dtype))
_gru_grad_gh = defop("gru_cell_grad_gh", inputs=("g", "gi", "gh", "h"), impl=_np_gru_grad_gh,
                     abstract=lambda g, gi, gh, h: (tuple(gh.shape), gi.dtype))
_gru_grad_h = defop("gru_cell_grad_h", inputs=("g", "gi", "gh", "h"), impl=_np_gru_grad_h,
                    abstract=lambda g, gi, gh, h: (tuple(h.shape), gi.dtype))


def _gru_composite(g, gi, gh, h):
    """``(d_gi, d_gh, d_h)`` in elementwise ops (differentiable again)."""
    ir, iz, i_n = _views(gi, 3)
    hr, hz, hn = _views(gh, 3)
    r, z = E.sigmoid(ir + hr), E.sigmoid(iz + hz)
    n = E.tanh(i_n + r * hn)
    dn = g * (1 - z) * (1 - n * n)
    dz = g * (h - n) * z * (1 - z)
    dr = dn * hn * r * (1 - r)
    return L.cat([dr, dz, dn], -1), L.cat([dr, dz, dn * r], -1), g * z


def _gru_rule(k, fused):
    def rule(g, gi, gh, h):
        if not is_grad_enabled():
            return fused(g, gi, gh, h)
        return _gru_composite(g, gi, gh, h)[k]
    return rule


gru_cell.defvjp(_gru_rule(0, _gru_grad_gi), _gru_rule(1, _gru_grad_gh),
                _gru_rule(2, _gru_grad_h))


# ------------------------------------------------------------------ a whole LSTM layer
# One primitive for the recurrence over a whole sequence: the input projection of every step
# is one matmul before it (``gi``), the loop over time runs inside the NumPy kernel, and its
# backward (backpropagation through time) is one kernel too, whose weight gradient is one
# matmul over all steps. Eager mode then records a handful of ops per layer instead of a dozen
# per step, and ``@ng.jit`` compiles no kernel per step (the unrolled plan had about 280).
# The output stacks, per step, h, c and the four activated gates i, f, g, o: ``(6, T, B, H)``;
# the backward reads the gates from it instead of recomputing them. The gate slots are saved
# values, not results: no rule reads them as a differentiable tensor (the create_graph form
# recomputes the gates in ops), so the gradient reaching them is zero and the kernel skips it.
#
# A step's cost is one small BLAS product plus its gate arithmetic: one compiled loop where
# the compiler supplies one (``step_kernels``), else NumPy calls of the batch's size (a
# microsecond or two each, more where a view is strided), kept few and contiguous.
_HALF = (0.5, 0.5, 1.0, 0.5)  # per gate: sigmoid(x) = (1 + tanh(x / 2)) / 2 for i, f, o

# A slot the compiler fills (``compiler.backends.cpu.lstm_steps.kernels``; ops cannot import
# the compiler): ``dtype -> (forward, backward)`` compiled step loops, or None. Where it
# gives loops, a step's gate arithmetic is one compiled call instead of about ten NumPy
# calls; a layer on another dtype, or with the slot empty, runs the NumPy steps below.
step_kernels = None


def _compiled_steps(*arrays):
    if step_kernels is None or any(type(a) is not np.ndarray for a in arrays):
        return None
    return step_kernels(arrays[0].dtype)


def _batch_state(c, batch, hidden):
    # The compiled loops read a C-contiguous (B, H) state; a broadcast one (an expanded
    # zero state) is copied, not passed as a read-only view (another Numba specialization).
    if c.shape == (batch, hidden) and c.flags.c_contiguous:
        return c
    return np.array(np.broadcast_to(c, (batch, hidden)), order="C")


def _lstm_layer_compiled(steps, gi, h0, c0, w4, reverse):
    t_len, batch, hidden = gi.shape[0], gi.shape[1], h0.shape[-1]
    dt = gi.dtype
    y = np.empty((6, t_len, batch, hidden), dt)
    gi4 = np.ascontiguousarray(gi).reshape(t_len, batch, 4, hidden)
    h, c = h0, _batch_state(c0, batch, hidden)
    for t in (range(t_len - 1, -1, -1) if reverse else range(t_len)):
        np.matmul(h, w4, out=y[2:, t])  # h @ w_hh.T, one (B, H) block per gate slot
        steps[0](y, gi4, t, c)
        h, c = y[0, t], y[1, t]
    return y


def _np_lstm_layer(gi, h0, c0, w_hh, reverse):
    t_len, batch, hidden = gi.shape[0], gi.shape[1], h0.shape[-1]
    w4 = w_hh.reshape(4, hidden, hidden).transpose(0, 2, 1).copy()  # w_hh.T per gate
    steps = _compiled_steps(gi, h0, c0, w_hh)
    if steps is not None:
        return _lstm_layer_compiled(steps, gi, h0, c0, w4, reverse)
    dt = gi.dtype
    y = np.empty((6,) + gi.shape[:-1] + (hidden,), dt)
    # A step's product goes straight into y's four gate slots, one (B, H) block per gate
    # (``h @ w4[k]``, four BLAS calls in one NumPy call that take as long as one (B, 4H)
    # product), so the activations run over contiguous blocks in place. One tanh activates
    # all four gates: i, f and o through sigmoid(x) = (1 + tanh(x / 2)) / 2, where exp, +1,
    # a reciprocal and a tanh of g over strided views took four calls more per step.
    gi_g = np.moveaxis(gi.reshape(t_len, batch, 4, hidden), 2, 0)  # (4, T, B, H) view
    half = np.array(_HALF, dt)[:, None, None]
    shift = (half != 1) * half
    ig = np.empty((batch, hidden), dt)
    h, c = h0, c0
    for t in (range(t_len - 1, -1, -1) if reverse else range(t_len)):
        a = y[2:, t]
        np.matmul(h, w4, out=a)
        a += gi_g[:, t]
        a *= half
        np.tanh(a, out=a)
        a *= half                        # i, f, o: (1 + tanh) / 2; g: tanh
        a += shift
        i, f, g, o = a
        c_new, h = y[1, t], y[0, t]
        np.multiply(f, c, out=c_new)
        np.multiply(i, g, out=ig)
        c_new += ig
        c = c_new
        np.tanh(c, out=h)
        h *= o
    return y


def _np_lstm_layer_grad(g, y, h0, c0, w_hh, reverse):
    """Backpropagation through time: the gradients of ``gi``, ``h0``, ``c0`` and ``w_hh``,
    flattened into one array (the rule takes them apart as views). ``g[2:]`` (the gate
    slots) is not read: see the block comment above.

    A step is one matmul and the gate arithmetic, as one compiled call (``step_kernels``) or,
    without one, a few NumPy calls at the batch's size after everything that does not depend
    on the running ``(dh, dc)`` was computed for all steps at once (``_bptt_numpy``)."""
    t_len, batch, hidden = y.shape[1:]
    dt = y.dtype
    sizes = (t_len * batch * 4 * hidden, batch * hidden, batch * hidden, w_hh.size)
    flat = np.empty(sum(sizes), dt)
    ends = np.cumsum(sizes).tolist()
    parts = [flat[a:b] for a, b in zip([0] + ends[:-1], ends)]
    d_gi = parts[0].reshape(t_len, batch, 4, hidden)
    # The states each step started from, without copying them: step ``run`` of y took y's
    # state at ``prev``, the first step (``first``) the initial one.
    first, run, prev = (-1, slice(0, -1), slice(1, None)) if reverse else \
        (0, slice(1, None), slice(0, -1))
    # The steps whose c is used outside the layer (c_n, as a rule: one step of all).
    c_grad = g[1].reshape(t_len, -1).any(1).tolist()
    steps = _compiled_steps(g, y, h0, c0, w_hh)
    if steps is not None:
        dh, dc = _bptt_compiled(steps[1], g, y, c0, w_hh, d_gi, c_grad, reverse)
    else:
        dh, dc = _bptt_numpy(g, y, c0, w_hh, d_gi, c_grad, first, run, prev, reverse)
    parts[1][:] = dh.reshape(-1)
    parts[2][:] = dc.reshape(-1)
    # d w_hh = sum over steps of d_gates_t^T @ h_{t-1}: one matmul over all steps but the
    # first, whose h is the initial state.
    d2 = parts[0].reshape(t_len, batch, 4 * hidden)
    d_w = parts[3].reshape(w_hh.shape)
    np.matmul(d2[run].reshape(-1, 4 * hidden).T, y[0, prev].reshape(-1, hidden), out=d_w)
    d_w += d2[first].T @ h0
    return flat


def _bptt_compiled(backward, g, y, c0, w_hh, d_gi, c_grad, reverse):
    """The time loop of ``_np_lstm_layer_grad`` with each step's gate arithmetic one
    compiled call (``step_kernels``): ``(dh, dc)`` of the initial state; fills ``d_gi``.

    A step's product ``d @ w_hh`` runs as four ``(B, H) @ (H, H)`` products, one per gate
    (over strided views of ``d``), whose sum the next step's loop takes: 35 of them take
    1.05 ms where 35 ``(B, 4H) @ (4H, H)`` products take 1.4 at the bench's shapes."""
    t_len, batch, hidden = y.shape[1:]
    dt = y.dtype
    g = np.ascontiguousarray(g, dt)
    y = np.ascontiguousarray(y)
    c0 = _batch_state(c0, batch, hidden)
    dh4, dc = np.zeros((4, batch, hidden), dt), np.zeros((batch, hidden), dt)
    w4 = np.ascontiguousarray(w_hh).reshape(4, hidden, hidden)
    d4 = d_gi.transpose(0, 2, 1, 3)  # (T, 4, B, H) view
    first, step = (t_len - 1, 1) if reverse else (0, -1)
    for t in (range(t_len) if reverse else range(t_len - 1, -1, -1)):
        backward(y, g, t, dh4, c0 if t == first else y[1, t + step], dc, d_gi, c_grad[t])
        np.matmul(d4[t], w4, out=dh4)
    return dh4.sum(0), dc


def _bptt_numpy(g, y, c0, w_hh, d_gi, c_grad, first, run, prev, reverse):
    """The time loop in NumPy calls (no compiled steps for this dtype or device)."""
    t_len, batch, hidden = y.shape[1:]
    dt = y.dtype
    h_seq, c_seq, i, f, gg, o = y
    # p[k]: d(pre-activation of gate k) per unit of the gradient reaching c (i, f, g) or h
    # (o), all steps at once, each gate contiguous (in place: no temporaries of this size);
    # q: dc += dh * q.
    p = np.empty((4, t_len, batch, hidden), dt)
    tc = np.tanh(c_seq)
    np.subtract(1, i, out=p[0])
    p[0] *= i
    p[0] *= gg                           # g i (1 - i)
    np.subtract(1, f, out=p[1])
    p[1] *= f
    p[1, run] *= c_seq[prev]             # c_prev f (1 - f)
    p[1, first] *= c0
    np.multiply(gg, gg, out=p[2])
    np.subtract(1, p[2], out=p[2])
    p[2] *= i                            # i (1 - g^2)
    np.subtract(1, o, out=p[3])
    p[3] *= o
    q = np.multiply(tc, tc)
    np.subtract(1, q, out=q)
    q *= o                               # o (1 - tanh(c)^2)
    p[3] *= tc                           # tanh(c) o (1 - o)
    dh, dc = np.zeros_like(c0, dtype=dt), np.zeros_like(c0, dtype=dt)
    tmp = np.empty_like(dh)
    w = np.ascontiguousarray(w_hh)
    for t in (range(t_len) if reverse else range(t_len - 1, -1, -1)):
        dh += g[0, t]
        if c_grad[t]:
            dc += g[1, t]
        np.multiply(dh, q[t], out=tmp)
        dc += tmp
        d = d_gi[t]
        for k in range(3):
            np.multiply(dc, p[k, t], out=d[:, k])
        np.multiply(dh, p[3, t], out=d[:, 3])
        np.matmul(d.reshape(batch, 4 * hidden), w, out=dh)
        dc *= f[t]
    return dh, dc


def _layer_shape(gi, h0, c0, w_hh, reverse):
    return (6,) + tuple(gi.shape[:-1]) + (h0.shape[-1],), gi.dtype


lstm_layer = defop("lstm_layer", inputs=("*xs",), params=("reverse",), impl=_np_lstm_layer,
                   abstract=_layer_shape, node="LstmLayerBackward0")
_lstm_layer_grad = defop(
    "lstm_layer_grad", inputs=("g", "out", "h0", "c0", "w_hh"), params=("reverse",),
    impl=_np_lstm_layer_grad,
    abstract=lambda g, out, h0, c0, w_hh, reverse: (
        (int(np.prod(g.shape[1:])) * 4 + 2 * int(np.prod(h0.shape)) + int(np.prod(w_hh.shape)),),
        g.dtype))


def _lstm_layer_vjp(g, xs, out, reverse):
    gi, h0, c0, w_hh = xs
    if is_grad_enabled():
        return _lstm_layer_bptt_ops(g, xs, out, reverse)
    flat = _lstm_layer_grad(g, out, h0, c0, w_hh, reverse=reverse)
    return _FlatParts(flat, (gi.shape, h0.shape, c0.shape, w_hh.shape))


class _FlatParts(Sequence):
    """The gradients in ``flat``, each cut out and reshaped when it is asked for: a node
    takes only those of inputs that require grad (an initial state of zeros does not), and
    each cut is two ops."""

    def __init__(self, flat, shapes):
        self._flat, self._shapes = flat, [tuple(s) for s in shapes]
        self._ends = np.cumsum([int(np.prod(s)) for s in self._shapes]).tolist()

    def __len__(self):
        return len(self._shapes)

    def __getitem__(self, k):
        start = self._ends[k - 1] if k else 0
        return L.reshape(getitem(self._flat, (slice(start, self._ends[k]),)), self._shapes[k])


def _lstm_layer_bptt_ops(g, xs, out, reverse):
    """``_np_lstm_layer_grad`` in numgrad ops, for a backward that is differentiated again.
    The gates are recomputed from ``gi``, the previous ``h`` and ``w_hh`` rather than read
    from ``out``'s gate slots, so no gradient ever reaches those slots."""
    from numgrad.ops.linalg import matmul
    gi, h0, c0, w_hh = xs
    t_len = gi.shape[0]
    w_t = L.t(w_hh)
    dh = dc = None
    d_gi, d_w = [None] * t_len, None
    first, step = (t_len - 1, 1) if reverse else (0, -1)
    for t in (range(t_len) if reverse else range(t_len - 1, -1, -1)):
        c_prev = c0 if t == first else out[1, t + step]
        h_prev = h0 if t == first else out[0, t + step]
        pi, pf, pg, po = _views(gi[t] + matmul(h_prev, w_t), 4)
        i, f, gg, o = E.sigmoid(pi), E.sigmoid(pf), E.tanh(pg), E.sigmoid(po)
        dh = g[0, t] if dh is None else dh + g[0, t]
        tc = E.tanh(out[1, t])
        dc = g[1, t] + dh * o * (1 - tc * tc) + (0 if dc is None else dc)
        d = L.cat([dc * gg * i * (1 - i), dc * c_prev * f * (1 - f),
                   dc * i * (1 - gg * gg), dh * tc * o * (1 - o)], -1)
        d_gi[t] = d
        dh = matmul(d, w_hh)
        dc = dc * f
        dw = matmul(L.t(d) if d.ndim == 2 else L.transpose(d, -1, -2), h_prev)
        d_w = dw if d_w is None else d_w + dw
    return [L.stack(d_gi, 0), dh, dc, d_w]


lstm_layer.defvjp(_lstm_layer_vjp)


def lstm_sequence(gi, h0, c0, w_hh, reverse=False):
    """One LSTM layer over a sequence: ``gi`` ``(T, B, 4H)`` is every step's input projection
    with both biases (gates i, f, g, o), ``h0``/``c0`` ``(B, H)`` the initial state,
    ``w_hh`` ``(4H, H)``; steps run backwards in time if ``reverse``. Returns ``(output,
    h_n, c_n)``, ``output`` ``(T, B, H)``.

    >>> out, h, c = lstm_sequence(ng.zeros(3, 1, 8), ng.zeros(1, 2), ng.ones(1, 2),
    ...                           ng.zeros(8, 2))
    >>> tuple(out.shape), c
    ((3, 1, 2), tensor([[0.1250, 0.1250]]))
    """
    for t in (h0, c0, w_hh):  # the kernel would compute in gi's dtype silently
        if t.dtype is not gi.dtype:
            raise RuntimeError(f"expected scalar type {SCALAR_NAMES[gi.dtype.name]} but found "
                               f"{SCALAR_NAMES[t.dtype.name]}")
    y = lstm_layer([gi, h0, c0, w_hh], reverse=reverse)
    last = 0 if reverse else gi.shape[0] - 1
    return getitem(y, (0,)), getitem(y, (0, last)), getitem(y, (1, last))
