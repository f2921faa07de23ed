"""nn.rnn: ``RNN``, ``LSTM``, ``GRU`` and their cells (``torch.nn``).

Room: nn. Every step is numgrad ops (matmul, add, the fused cells of ``ops.recurrent``), so
gradients, double backward and the ``@ng.jit`` form (CPU and CUDA; unrolled over the sequence)
come from the primitives' rules. Parameter names, shapes, order and the U(-1/sqrt(H), 1/sqrt(H))
initialisation are PyTorch's, so a torch ``state_dict`` loads unchanged.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numgrad.creation as creation
import numgrad.ops as ops
from numgrad.ops import recurrent
from numgrad.ops.linear import linear as linear_node
import numgrad.nn.functional as F
import numgrad.nn.init as init
from numgrad.nn.layers import _param
from numgrad.nn.module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _nonlinearity_mode(nonlinearity):
    if nonlinearity == "tanh":
        return "RNN_TANH"
    if nonlinearity == "relu":
        return "RNN_RELU"
    raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")


def _zeros_like_state(ref, shape):
    z = creation.zeros(*shape, dtype=ref.dtype)
    return z if ref.device.type == "cpu" else z.to(ref.device)


def _step(mode, gi, h, c, w_hh_t, b_hh):
    """One recurrence step from the precomputed input projection ``gi`` (B, G*H) and the
    transposed hidden weight; returns ``(h', c')`` (``c`` is None except for LSTM). Gate order
    is PyTorch's: LSTM i, f, g, o; GRU r, z, n."""
    gh = ops.matmul(h, w_hh_t)
    if b_hh is not None:
        gh = gh + b_hh
    # The gate arithmetic is one fused primitive (ops.recurrent): as elementwise ops it was
    # 17 applications forward and 40 backward per step, four of them scatters into zeros.
    if mode == "LSTM":
        return recurrent.lstm_cell(gi + gh, c)
    if mode == "GRU":
        return recurrent.gru_cell(gi, gh, h), None
    pre = gi + gh
    return (ops.tanh(pre) if mode == "RNN_TANH" else ops.relu(pre)), None


def _sequence(mode, xs, w_ih, w_hh, b_ih, b_hh, h, c=None, reverse=False):
    """One direction of one layer over the per-step inputs ``xs`` (a list of (B, H_in)) from
    state ``(h, c)``; returns the list of hidden states in time order and the final ``(h, c)``.

    Each step projects its own input: one matmul over the whole sequence would be sliced back
    into steps, and each slice's gradient is a scatter into zeros of the whole sequence's size
    (measured: 18% of an eager LSTM step at hidden 128, sequence 35). Except in a GRU (whose
    ``b_hn`` sits inside ``r * (...)``) the two biases are summed once, not added per step.
    """
    w_ih_t, w_hh_t = ops.t(w_ih), ops.t(w_hh)
    b_in = b_ih
    if b_hh is not None and mode != "GRU":
        b_in, b_hh = b_ih + b_hh, None
    seq = [None] * len(xs)
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        gi = ops.matmul(xs[t], w_ih_t)
        h, c = _step(mode, gi if b_in is None else gi + b_in, h, c, w_hh_t, b_hh)
        seq[t] = h
    return seq, h, c


def _lstm_layer(x, w_ih, w_hh, b_ih, b_hh, h, c, reverse=False):
    """One direction of one LSTM layer over ``x`` (T, B, H_in) from state ``(h, c)``:
    ``(output, h_n, c_n)``. The input projection of every step is one matmul, the recurrence
    one primitive (``ops.recurrent.lstm_sequence``)."""
    bias = b_ih if b_hh is None else b_hh if b_ih is None else b_ih + b_hh
    # One addmm node eagerly (no transpose or bias-add nodes, forward or backward).
    gi = linear_node(x, w_ih, bias)
    if gi is None:  # traced, on a device, or a layout the node does not take
        t_len, batch = x.shape[0], x.shape[1]
        gi = ops.matmul(ops.reshape(x, (t_len * batch, x.shape[2])), ops.t(w_ih))
        if bias is not None:
            gi = gi + bias
        gi = ops.reshape(gi, (t_len, batch, gi.shape[-1]))
    return recurrent.lstm_sequence(gi, h, c, w_hh, reverse=reverse)


class RNNBase(Module):
    """The shared machinery of ``RNN``, ``LSTM`` and ``GRU`` (``torch.nn.RNNBase``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                          stacklevel=3)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size:
            raise NotImplementedError("numgrad's recurrent layers do not support proj_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                in_size = input_size if layer == 0 else hidden_size * num_directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, in_size)),
                          ("weight_hh", (gate_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                for name, shape in shapes:
                    setattr(self, name + suffix, _param(*shape, device=device, dtype=dtype))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Nothing to do: PyTorch packs the weights into one buffer for cuDNN; numgrad keeps
        no such buffer, so calling this (as PyTorch programs do) changes nothing."""

    @property
    def all_weights(self) -> list:
        """The parameters of each layer and direction, ``[[w_ih, w_hh, b_ih, b_hh], ...]``."""
        per = 4 if self.bias else 2
        flat = [getattr(self, n) for n in self._flat_weights_names]
        return [flat[k:k + per] for k in range(0, len(flat), per)]

    def _layer_params(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        get = lambda n: getattr(self, n + suffix) if self.bias or "weight" in n else None  # noqa
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _check_input(self, input):
        name = type(self).__name__
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def _check_hidden(self, hx, expected, what):
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(hx.shape)}")

    def forward(self, input, hx=None):
        """Run the layers over ``input`` (L, N, H_in), (N, L, H_in) with ``batch_first``, or
        unbatched (L, H_in); returns ``(output, h_n)``, for LSTM ``(output, (h_n, c_n))``."""
        self._check_input(input)
        lstm = self.mode == "LSTM"
        batched = input.ndim == 3
        if not batched:
            if hx is not None:
                dims = [h.ndim for h in hx] if lstm else [hx.ndim]
                if any(d != 2 for d in dims):
                    if lstm:
                        raise RuntimeError("For unbatched 2-D input, hx and cx should also be "
                                           f"2-D but got ({dims[0]}-D, {dims[1]}-D) tensors")
                    raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but got "
                                       f"{dims[0]}-D tensor")
                hx = tuple(ops.unsqueeze(h, 1) for h in hx) if lstm else ops.unsqueeze(hx, 1)
            input = ops.unsqueeze(input, 1)
        elif self.batch_first:
            input = ops.transpose(input, 0, 1)
        if input.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        batch = input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        state_shape = (self.num_layers * num_directions, batch, self.hidden_size)
        if hx is None:  # one zero state (B, H) for every layer and direction: no unbind ops
            h0 = _zeros_like_state(input, state_shape[1:])
            c0 = h0 if lstm else None
        elif lstm:
            if batched and (hx[0].ndim != 3 or hx[1].ndim != 3):
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors")
            h0, c0 = hx
            self._check_hidden(h0, state_shape, "hidden[0]")
            self._check_hidden(c0, state_shape, "hidden[1]")
        else:
            if batched and hx.ndim != 3:
                raise RuntimeError("For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.ndim}-D tensor")
            h0, c0 = hx, None
            self._check_hidden(h0, state_shape, "hidden")
        if hx is None:
            h_list = c_list = [h0] * state_shape[0]
        else:
            h_list = ops.unbind(h0, 0)
            c_list = ops.unbind(c0, 0) if lstm else None
        h_n, c_n = [], []
        # Layers pass lists of per-step tensors: stacking and slicing again between layers
        # would give every step a whole-sequence scatter in the backward pass.
        # An LSTM layer takes and gives whole-sequence tensors (one primitive per layer).
        xs = input if lstm else ops.unbind(input, 0)
        for layer in range(self.num_layers):
            outs = []
            for d in range(num_directions):
                k = layer * num_directions + d
                if lstm:
                    seq, h, c = _lstm_layer(xs, *self._layer_params(layer, d), h_list[k],
                                            c_list[k], reverse=d == 1)
                else:
                    seq, h, c = _sequence(self.mode, xs, *self._layer_params(layer, d),
                                          h_list[k], None, reverse=d == 1)
                outs.append(seq)
                h_n.append(h)
                c_n.append(c)
            if lstm:
                xs = outs[0] if num_directions == 1 else ops.cat(outs, -1)
            else:
                xs = outs[0] if num_directions == 1 else [ops.cat(hs, -1) for hs in zip(*outs)]
            if self.dropout and self.training and layer < self.num_layers - 1:
                xs = (F.dropout(xs, self.dropout, True) if lstm else
                      ops.unbind(F.dropout(ops.stack(xs, 0), self.dropout, True), 0))
        output = xs if lstm else ops.stack(xs, 0)
        h_n = ops.stack(h_n, 0)
        c_n = ops.stack(c_n, 0) if lstm else None
        if not batched:
            output = ops.squeeze(output, 1)
            h_n = ops.squeeze(h_n, 1)
            c_n = ops.squeeze(c_n, 1) if lstm else None
        elif self.batch_first:
            output = ops.transpose(output, 0, 1)
        return output, ((h_n, c_n) if lstm else h_n)

    def extra_repr(self) -> str:
        """PyTorch's summary: sizes, then the options that differ from their defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu), over
    ``num_layers`` stacked layers (``torch.nn.RNN``).

    >>> rnn = ng.nn.RNN(3, 4, num_layers=2)
    >>> out, h_n = rnn(ng.randn(5, 2, 3))
    >>> tuple(out.shape), tuple(h_n.shape)
    ((5, 2, 4), (2, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        self.nonlinearity = nonlinearity
        super().__init__(_nonlinearity_mode(nonlinearity), input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory over ``num_layers`` stacked layers (``torch.nn.LSTM``); returns
    ``(output, (h_n, c_n))``. Gates i, f, g, o in that order along the 4*hidden rows.

    >>> lstm = ng.nn.LSTM(3, 4, batch_first=True)
    >>> out, (h_n, c_n) = lstm(ng.randn(2, 5, 3))
    >>> tuple(out.shape), tuple(c_n.shape)
    ((2, 5, 4), (1, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit over ``num_layers`` stacked layers (``torch.nn.GRU``); gates r, z,
    n in that order, ``h' = (1 - z) * n + z * h``.

    >>> gru = ng.nn.GRU(3, 4, bidirectional=True)
    >>> out, h_n = gru(ng.randn(5, 2, 3))
    >>> tuple(out.shape), tuple(h_n.shape)
    ((5, 2, 8), (2, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)


class RNNCellBase(Module):
    """One step of a recurrent layer with parameters ``weight_ih``, ``weight_hh``,
    ``bias_ih``, ``bias_hh`` (``torch.nn.RNNCellBase``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gate_size = _GATES[mode] * hidden_size
        self.weight_ih = _param(gate_size, input_size, device=device, dtype=dtype)
        self.weight_hh = _param(gate_size, hidden_size, device=device, dtype=dtype)
        if bias:
            self.bias_ih = _param(gate_size, device=device, dtype=dtype)
            self.bias_hh = _param(gate_size, device=device, dtype=dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    reset_parameters = RNNBase.reset_parameters

    def _prepare(self, input, hx, n_states):
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for h in hx or ():
            if h is not None and h.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D "
                                 "instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        batched = input.ndim == 2
        if not batched:
            input = ops.unsqueeze(input, 0)
        shape = (input.shape[0], self.hidden_size)
        if hx is None:
            return input, [_zeros_like_state(input, shape)] * n_states, batched
        hx = [h if batched else ops.unsqueeze(h, 0) for h in hx]
        for k, h in enumerate(hx):
            if h.shape[0] != shape[0]:
                raise RuntimeError(f"Input batch size {shape[0]} doesn't match hidden{k} batch "
                                   f"size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, "
                                   f"expected {self.hidden_size}")
        return input, hx, batched

    def _run(self, input, hx):
        lstm = self.mode == "LSTM"
        input, states, batched = self._prepare(input, hx, 2 if lstm else 1)
        gi = ops.matmul(input, ops.t(self.weight_ih))
        gi = gi if self.bias_ih is None else gi + self.bias_ih
        out = _step(self.mode, gi, states[0], states[1] if lstm else None,
                    ops.t(self.weight_hh), self.bias_hh)
        out = out if lstm else out[:1]
        return out if batched else tuple(ops.squeeze(o, 0) for o in out)

    def extra_repr(self) -> str:
        """``input_size, hidden_size[, bias=False][, nonlinearity=...]``."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One Elman step ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (``torch.nn.RNNCell``).

    >>> cell = ng.nn.RNNCell(3, 4)
    >>> tuple(cell(ng.randn(2, 3)).shape)
    (2, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        self.nonlinearity = nonlinearity
        # PyTorch checks the name only when the cell runs (RuntimeError then).
        super().__init__("RNN_RELU" if nonlinearity == "relu" else "RNN_TANH", input_size,
                         hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        """The next hidden state (zeros when ``hx`` is None)."""
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._run(input, None if hx is None else [hx])[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')`` (``torch.nn.LSTMCell``).

    >>> cell = ng.nn.LSTMCell(3, 4)
    >>> h, c = cell(ng.randn(2, 3))
    >>> tuple(h.shape), tuple(c.shape)
    ((2, 4), (2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        """``(h', c')`` from ``input`` and ``hx = (h, c)`` (zeros when None)."""
        return self._run(input, None if hx is None else list(hx))


class GRUCell(RNNCellBase):
    """One GRU step (``torch.nn.GRUCell``).

    >>> cell = ng.nn.GRUCell(3, 4)
    >>> tuple(cell(ng.randn(3), ng.zeros(4)).shape)
    (4,)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        """The next hidden state (zeros when ``hx`` is None)."""
        return self._run(input, None if hx is None else [hx])[0]
