"""F.scaled_dot_product_attention, nn.MultiheadAttention and nn.TransformerEncoder(Layer)
against PyTorch with the same weights (torch's state_dict loaded into numgrad's module):
values, attention weights, gradients, masks, error texts; the compiled form against eager;
nn.utils.rnn.pad_sequence against torch.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad import nn
from numgrad.devices import cuda_is_available
from numgrad.nn import functional as F

R = np.random.default_rng(0)


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _load(m, tm):
    m.load_state_dict({k: ng.tensor(_np(v)) for k, v in tm.state_dict().items()})
    return m


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(b), _np(a), rtol=tol, atol=tol)


_SDPA_CASES = [
    dict(),
    dict(is_causal=True),
    dict(attn_mask=R.random((4, 6)) > 0.3),
    dict(attn_mask=R.standard_normal((4, 6)), scale=0.3),
    dict(attn_mask=R.standard_normal((2, 1, 4, 6))),
]


@pytest.mark.parametrize("kw", _SDPA_CASES)
def test_sdpa_values_and_gradients_match_torch(kw):
    if "attn_mask" in kw and kw["attn_mask"].dtype == bool:
        kw["attn_mask"][:, 0] = True  # no fully masked row (torch's kernels disagree there)
    arrays = [R.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5))]
    tq = [torch.tensor(a, requires_grad=True) for a in arrays]
    nq = [ng.tensor(a, requires_grad=True) for a in arrays]
    conv = {k: (v if not isinstance(v, np.ndarray) else (torch.tensor(v), ng.tensor(v)))
            for k, v in kw.items()}
    t_out = torch.nn.functional.scaled_dot_product_attention(
        *tq, **{k: v[0] if isinstance(v, tuple) else v for k, v in conv.items()})
    n_out = F.scaled_dot_product_attention(
        *nq, **{k: v[1] if isinstance(v, tuple) else v for k, v in conv.items()})
    _close(t_out, n_out)
    w = R.standard_normal(t_out.shape)
    (t_out * torch.tensor(w)).sum().backward()
    ng.sum(n_out * ng.tensor(w)).backward()
    for a, b in zip(tq, nq):
        _close(a.grad, b.grad)


def test_sdpa_dropout_and_errors():
    q = ng.ones(1, 4, 8)
    ng.manual_seed(0)
    out = F.scaled_dot_product_attention(q, q, ng.randn(1, 4, 8), dropout_p=0.5)
    assert out.shape == (1, 4, 8)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ng.zeros(4, 4), is_causal=True)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ng.zeros(4, 4, dtype=ng.int64))


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True), dict(kdim=3, vdim=5),
                                dict(bias=False)])
def test_multihead_attention_matches_torch(kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, **kw).double()
    m = _load(nn.MultiheadAttention(8, 2, **kw, dtype=ng.float64), tm)
    assert [(n, tuple(p.shape)) for n, p in tm.named_parameters()] == \
        [(n, p.shape) for n, p in m.named_parameters()]
    assert repr(m) == repr(tm)
    L, S, N = 3, 4, 2
    shapes = [(L, N, 8), (S, N, kw.get("kdim", 8)), (S, N, kw.get("vdim", 8))]
    if kw.get("batch_first"):
        shapes = [(b, a, c) for a, b, c in shapes]
    arrays = [R.standard_normal(s) for s in shapes]
    kpm = np.array([[False, False, True, False], [False, True, False, False]])
    extras = [dict(), dict(key_padding_mask=kpm, attn_mask=R.random((L, S)) > 0.8,
                           average_attn_weights=False),
              dict(attn_mask=R.standard_normal((N * 2, L, S)), need_weights=False)]
    for extra in extras:
        tq = [torch.tensor(a, requires_grad=True) for a in arrays]
        nq = [ng.tensor(a, requires_grad=True) for a in arrays]
        t_out, t_w = tm(*tq, **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                                for k, v in extra.items()})
        n_out, n_w = m(*nq, **{k: ng.tensor(v) if isinstance(v, np.ndarray) else v
                               for k, v in extra.items()})
        _close(t_out, n_out)
        assert (t_w is None) == (n_w is None)
        if t_w is not None:
            _close(t_w, n_w)
        tm.zero_grad()
        m.zero_grad()
        t_out.sum().backward()
        ng.sum(n_out).backward()
        for a, b in zip(tq, nq):
            _close(a.grad, b.grad)
        for (name, p), q in zip(tm.named_parameters(), m.parameters()):
            _close(p.grad, q.grad)


def test_multihead_attention_unbatched_and_errors():
    torch.manual_seed(1)
    tm = torch.nn.MultiheadAttention(4, 2).double()
    m = _load(nn.MultiheadAttention(4, 2, dtype=ng.float64), tm)
    x = R.standard_normal((3, 4))
    kpm = np.array([False, True, False])
    t_out, t_w = tm(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(kpm))
    n_out, n_w = m(*(ng.tensor(x),) * 3, key_padding_mask=ng.tensor(kpm))
    _close(t_out, n_out)
    _close(t_w, n_w)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(8, 3)
    q = ng.zeros(3, 2, 4, dtype=ng.float64)
    for kw, text in [(dict(is_causal=True), "Need attn_mask if specifying the is_causal hint"),
                     (dict(attn_mask=ng.zeros(4, 4)),
                      r"The shape of the 2D attn_mask is torch.Size\(\[4, 4\]\), but should be "
                      r"\(3, 3\)."),
                     (dict(attn_mask=ng.zeros(2, 3, 3)),
                      r"The shape of the 3D attn_mask is torch.Size\(\[2, 3, 3\]\), but should "
                      r"be \(4, 3, 3\).")]:
        with pytest.raises(RuntimeError, match=text):
            m(q, q, q, **kw)


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, activation="gelu",
                                             batch_first=True)])
def test_transformer_encoder_matches_torch(kw):
    torch.manual_seed(2)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    te = torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False)
    ne = _load(nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw, dtype=ng.float64), 2), te)
    assert repr(ne) == repr(te)
    x = R.standard_normal((3, 3, 8))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    for extra_t, extra_n in [({}, {}), (dict(mask=mask, is_causal=True),
                                        dict(mask=ng.tensor(_np(mask)), is_causal=True))]:
        tx, nx = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
        t_out, n_out = te(tx, **extra_t), ne(nx, **extra_n)
        _close(t_out, n_out)
        (t_out ** 2).sum().backward()
        ng.sum(n_out ** 2).backward()
        _close(tx.grad, nx.grad, 1e-9)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not foo"):
        nn.TransformerEncoderLayer(8, 2, activation="foo")


def test_transformer_layer_dropout_trains_and_eval_is_deterministic():
    ng.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = ng.randn(4, 2, 8)
    assert not np.allclose(_np(layer(x)), _np(layer(x)))
    layer.eval()
    np.testing.assert_array_equal(_np(layer(x)), _np(layer(x)))


ng.manual_seed(4)
_JIT_LAYER = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                        dtype=ng.float64)


def _layer_loss(x, mask):
    return ng.sum(_JIT_LAYER(x, src_mask=mask) ** 2)


_JIT_LOSS = ng.jit(_layer_loss)


def test_jit_matches_eager_values_and_gradients():
    x = ng.tensor(R.standard_normal((2, 3, 8)))
    mask = ng.tensor(R.random((3, 3)) > 0.7)
    results = []
    for f in (_layer_loss, _JIT_LOSS):
        _JIT_LAYER.zero_grad()
        loss = f(x, mask)
        loss.backward()
        results.append((float(loss), [_np(p.grad).copy() for p in _JIT_LAYER.parameters()]))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-12)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not cuda_is_available(), reason="no CUDA device or simulator")
def test_sdpa_causal_on_cuda_eager_and_jit_match_cpu():
    arrays = [R.standard_normal((1, 3, 2)).astype(np.float32) for _ in range(3)]
    want = F.scaled_dot_product_attention(*map(ng.tensor, arrays), is_causal=True)
    f = ng.jit(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    for fn in (lambda *a: F.scaled_dot_product_attention(*a, is_causal=True), f):
        qs = [ng.tensor(a, device="cuda", requires_grad=True) for a in arrays]
        got = fn(*qs)
        ng.sum(got).backward()
        assert got.device.type == "cuda" and qs[0].grad.device.type == "cuda"
        np.testing.assert_allclose(_np(got.cpu()), _np(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True, padding_value=-1.0),
                                dict(padding_side="left")])
def test_pad_sequence_matches_torch(kw):
    arrays = [R.standard_normal((n, 2)) for n in (3, 1, 2)]
    want = torch.nn.utils.rnn.pad_sequence([torch.tensor(a) for a in arrays], **kw)
    seqs = [ng.tensor(a, requires_grad=True) for a in arrays]
    got = nn.utils.rnn.pad_sequence(seqs, **kw)
    _close(want, got, 0)
    ng.sum(got * 2).backward()
    for s in seqs:
        np.testing.assert_array_equal(_np(s.grad), 2 * np.ones(s.shape))
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right"):
        nn.utils.rnn.pad_sequence(seqs, padding_side="middle")


@pytest.mark.parametrize("name", ["numgrad.nn.rnn", "numgrad.nn.attention",
                                  "numgrad.nn.utils.rnn"])
def test_docstring_examples(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ng": ng},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
