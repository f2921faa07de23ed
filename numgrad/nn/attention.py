"""nn.attention: ``scaled_dot_product_attention``, ``MultiheadAttention``,
``TransformerEncoderLayer`` and ``TransformerEncoder`` (``torch.nn``).

Room: nn. Written with matmul, softmax, masked_fill and dropout only (PyTorch's math path), so
gradients, double backward and ``@ng.jit`` follow from the primitives. Parameter names and
initialisation are PyTorch's, so a torch ``state_dict`` loads unchanged.
"""
from __future__ import annotations

import copy
import math

import numgrad.creation as creation
import numgrad.ops as ops
import numgrad.tracing_hook as tracing_hook
import numgrad.nn.functional as F
import numgrad.nn.init as init
from numgrad.nn.containers import ModuleList
from numgrad.nn.layers import Dropout, LayerNorm, Linear, _param
from numgrad.nn.module import Module
from numgrad.tensor import Tensor

_NEG_INF = float("-inf")


def _on(t, like):
    return t if like.device.type == "cpu" else t.to(like.device)


def _causal(L, S, like):
    """The (L, S) bool mask that lets position i see keys 0..i."""
    rows = ops.unsqueeze(F._arange_on(L, like), 1)
    return rows >= ops.unsqueeze(F._arange_on(S, like), 0)


def _mask_scores(scores, mask):
    """Apply a mask to attention scores: a bool mask keeps the True places (the rest become
    -inf), a float mask is added."""
    if mask.dtype.name == "bool":
        return ops.masked_fill(scores, ops.logical_not(mask), _NEG_INF)
    if not mask.dtype.is_floating_point:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {mask.dtype} and  query.dtype: "
                           f"{scores.dtype} instead.")
    return scores + mask


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(Q K^T * scale + mask) V`` over the last two dims
    (``torch.nn.functional.scaled_dot_product_attention``). ``scale`` defaults to
    ``1/sqrt(E)``; a bool ``attn_mask`` marks the places that may attend, a float one is added;
    ``is_causal`` applies the lower-triangular mask; ``dropout_p`` drops attention weights.

    >>> q = ng.ones(1, 2, 4)
    >>> out = ng.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    >>> tuple(out.shape)
    (1, 2, 4)

    Raises RuntimeError when both ``attn_mask`` and ``is_causal`` are given.
    """
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention: enable_gqa is not supported")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    L, S = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = ops.matmul(query, ops.transpose(key, -2, -1)) * scale
    if is_causal:
        attn_mask = _causal(L, S, query)
    if attn_mask is not None:
        scores = _mask_scores(scores, attn_mask)
    attn = _safe_softmax(scores)
    if dropout_p > 0.0:
        attn = F.dropout(attn, dropout_p, True)
    return ops.matmul(attn, value)


def _safe_softmax(scores):
    """``softmax(scores, -1)``, but 0 (not NaN) along a row whose every score is -inf (every
    key masked), with a zero gradient there, as PyTorch's attention gives since 2.5."""
    dead = ops.all(scores == _NEG_INF, -1, keepdim=True)
    if tracing_hook.concrete(dead._data) and not ops.any(dead):
        return F.softmax(scores, -1)  # eagerly, the common case: nothing to guard
    live = ops.masked_fill(scores, dead, 0.0)  # no -inf - -inf: the backward stays finite
    return ops.masked_fill(F.softmax(live, -1), dead, 0.0)


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under the name PyTorch gives ``MultiheadAttention.out_proj``."""


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim // num_heads`` features each
    (``torch.nn.MultiheadAttention``); returns ``(output, weights)``, the weights averaged over
    heads unless ``average_attn_weights=False``, None unless ``need_weights``. A bool
    ``attn_mask`` / ``key_padding_mask`` marks the places that may NOT attend.

    >>> mha = ng.nn.MultiheadAttention(4, 2, batch_first=True)
    >>> x = ng.randn(3, 5, 4)
    >>> out, w = mha(x, x, x)
    >>> tuple(out.shape), tuple(w.shape)
    ((3, 5, 4), (3, 5, 5))

    Raises AssertionError when ``embed_dim`` is not divisible by ``num_heads``.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = dict(device=device, dtype=dtype)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _param(3 * embed_dim, embed_dim, **kw)
            for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(n, None)
        else:
            self.q_proj_weight = _param(embed_dim, embed_dim, **kw)
            self.k_proj_weight = _param(embed_dim, self.kdim, **kw)
            self.v_proj_weight = _param(embed_dim, self.vdim, **kw)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = _param(3 * embed_dim, **kw)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _project(self, query, key, value):
        if self._qkv_same_embed_dim:
            ws = ops.chunk(self.in_proj_weight, 3, 0)
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        bs = (None,) * 3 if self.in_proj_bias is None else ops.chunk(self.in_proj_bias, 3, 0)
        return [F.linear(x, w, b) for x, w, b in zip((query, key, value), ws, bs)]

    def _merged_mask(self, attn_mask, key_padding_mask, L, S, N, like):
        """One additive (or None) mask of shape (N*heads | 1, L, S) from both masks."""
        H = self.num_heads
        total = None
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (L, S):
                    raise RuntimeError(f"The shape of the 2D attn_mask is "
                                       f"{_size(attn_mask.shape)}, but should be {(L, S)}.")
                attn_mask = ops.unsqueeze(attn_mask, 0)
            elif attn_mask.ndim == 3:
                if tuple(attn_mask.shape) != (N * H, L, S):
                    raise RuntimeError(f"The shape of the 3D attn_mask is "
                                       f"{_size(attn_mask.shape)}, but should be "
                                       f"{(N * H, L, S)}.")
            else:
                raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
            total = _additive(attn_mask, like)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                     f"{_size(key_padding_mask.shape)}")
            kpm = ops.reshape(_additive(key_padding_mask, like), (N, 1, 1, S))
            kpm = ops.reshape(ops.expand(kpm, (N, H, 1, S)), (N * H, 1, S))
            total = kpm if total is None else total + kpm
        return total

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        """``(output, weights)`` for (L, N, E) inputs ((N, L, E) with ``batch_first``, or
        unbatched (L, E)); ``is_causal`` is a hint that ``attn_mask`` is the causal mask."""
        batched = query.ndim == 3
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                               "Transformer module method `generate_square_subsequent_mask` to "
                               "create this mask.")
        if not batched:
            query, key, value = (ops.unsqueeze(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = ops.unsqueeze(key_padding_mask, 0)
        elif self.batch_first:
            query, key, value = (ops.transpose(t, 0, 1) for t in (query, key, value))
        L, N, E = query.shape
        S = key.shape[0]
        if E != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {E}")
        H, hd = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)
        # (len, N, E) -> (N*H, len, hd): every head of every batch row becomes one bmm matrix.
        q, k, v = (ops.transpose(ops.reshape(t, (t.shape[0], N * H, hd)), 0, 1)
                   for t in (q, k, v))
        scores = ops.matmul(q * (1.0 / math.sqrt(hd)), ops.transpose(k, 1, 2))
        mask = self._merged_mask(attn_mask, key_padding_mask, L, S, N, scores)
        if mask is not None:
            scores = scores + mask
        # Without weights PyTorch takes its fused attention, whose softmax gives a row with
        # every key masked zeros; the weights path gives NaN there.
        attn = F.softmax(scores, -1) if need_weights else _safe_softmax(scores)
        if self.dropout > 0.0:
            attn = F.dropout(attn, self.dropout, self.training)
        out = ops.reshape(ops.transpose(ops.matmul(attn, v), 0, 1), (L, N, E))
        out = self.out_proj(out)
        weights = None
        if need_weights:
            weights = ops.reshape(attn, (N, H, L, S))
            if average_attn_weights:
                weights = ops.mean(weights, 1)
        if not batched:
            out = ops.squeeze(out, 1)
            weights = None if weights is None else ops.squeeze(weights, 0)
        elif self.batch_first:
            out = ops.transpose(out, 0, 1)
        return out, weights


def _size(shape):
    return f"torch.Size([{', '.join(str(s) for s in shape)}])"


def _additive(mask, like):
    """A MultiheadAttention mask as a float to add: bool True (may not attend) becomes -inf."""
    if mask.dtype.name == "bool":
        zeros = _on(creation.zeros(*mask.shape, dtype=like.dtype), like)
        return ops.masked_fill(zeros, mask, _NEG_INF)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of masks are supported, got "
                             f"{mask.dtype}")
    return mask.to(like.dtype)


def _activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _build_layer(layer, attentions, blocks, d_model, nhead, dim_feedforward, dropout,
                 activation, layer_norm_eps, batch_first, norm_first, bias, kw):
    """A transformer layer's submodules, registered in PyTorch's order (its parameters()
    order, which optimizers and state_dicts follow): the attentions named ``attentions``,
    the feed-forward block, then a norm and a dropout per residual block."""
    for name in attentions:
        setattr(layer, name, MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                batch_first=batch_first, **kw))
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
    layer.norm_first = norm_first
    for i in range(1, blocks + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
    for i in range(1, blocks + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))
    layer.activation = _activation(activation)


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual connection and
    LayerNorm (after, or before with ``norm_first``) (``torch.nn.TransformerEncoderLayer``).

    >>> layer = ng.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> tuple(layer(ng.randn(5, 3, 8)).shape)
    (5, 3, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        _build_layer(self, ("self_attn",), 2, d_model, nhead, dim_feedforward, dropout,
                     activation, layer_norm_eps, batch_first, norm_first, bias,
                     dict(device=device, dtype=dtype))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """The encoded ``src`` (same shape)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


def _stack_layers(module: Module, layer: Module, num_layers: int, norm) -> None:
    """Give an encoder or decoder ``num_layers`` deep copies of ``layer`` and its final norm
    (torch's ``_get_clones``: the copies start equal and train apart)."""
    module.layers = ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])
    module.num_layers = num_layers
    module.norm = norm


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm`` if given
    (``torch.nn.TransformerEncoder``).

    >>> layer = ng.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    >>> encoder = ng.nn.TransformerEncoder(layer, num_layers=2)
    >>> tuple(encoder(ng.randn(3, 5, 8)).shape)
    (3, 5, 8)
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        _stack_layers(self, encoder_layer, num_layers, norm)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """``src`` through every layer (and the final norm)."""
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


F.scaled_dot_product_attention = scaled_dot_product_attention  # torch.nn.functional's name
