"""nn.Transformer and nn.TransformerDecoder(Layer) against PyTorch with the same weights (torch's
state_dict loads into numgrad's module: the parameter names agree): values, gradients of
every input and parameter, masks (causal, key padding), norm_first, batch_first, error texts,
the initialisation (xavier on matrices) and generate_square_subsequent_mask."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn

torch = pytest.importorskip("torch")
R = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy()


def _load(m, tm):
    m.load_state_dict({k: ng.tensor(_np(v)) for k, v in tm.state_dict().items()})
    return m


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, activation="gelu",
                                             batch_first=True)])
def test_transformer_matches_torch(kw):
    torch.manual_seed(3)
    tm = torch.nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, **kw).double()
    nm = _load(nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, **kw, dtype=ng.float64), tm)
    assert list(nm.state_dict()) == list(tm.state_dict()) and repr(nm) == repr(tm)
    shape_s, shape_t = ((2, 5, 8), (2, 3, 8)) if kw else ((5, 2, 8), (3, 2, 8))
    s, t = R.standard_normal(shape_s), R.standard_normal(shape_t)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    nmask = nn.Transformer.generate_square_subsequent_mask(3, dtype=ng.float64)
    np.testing.assert_array_equal(_np(nmask), _np(tmask))
    pad = np.array([[False] * 4 + [True], [False] * 5])
    ts, tt = (torch.tensor(a, requires_grad=True) for a in (s, t))
    ns, nt = (ng.tensor(a, requires_grad=True) for a in (s, t))
    want = tm(ts, tt, tgt_mask=tmask, src_key_padding_mask=torch.tensor(pad),
              memory_key_padding_mask=torch.tensor(pad))
    got = nm(ns, nt, tgt_mask=nmask, src_key_padding_mask=ng.tensor(pad),
             memory_key_padding_mask=ng.tensor(pad))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-10)
    (want ** 2).sum().backward()
    (got ** 2).sum().backward()
    for a, b in [(ns.grad, ts.grad), (nt.grad, tt.grad)] + [
            (p.grad, q.grad) for p, q in zip(nm.parameters(), tm.parameters())]:
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-9)


def test_decoder_alone_and_errors():
    torch.manual_seed(1)
    tl = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0).double()
    td = torch.nn.TransformerDecoder(tl, 2, norm=torch.nn.LayerNorm(8).double())
    nd = _load(nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0,
                                                                dtype=ng.float64), 2,
                                     norm=nn.LayerNorm(8, dtype=ng.float64)), td)
    t, m = R.standard_normal((4, 2, 8)), R.standard_normal((6, 2, 8))
    want = td(torch.tensor(t), torch.tensor(m), tgt_is_causal=True,
              tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4).double())
    got = nd(ng.tensor(t), ng.tensor(m), tgt_is_causal=True,
             tgt_mask=nn.Transformer.generate_square_subsequent_mask(4, dtype=ng.float64))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-10)
    tm, nm = torch.nn.Transformer(8, 2, 1, 1, 16), nn.Transformer(8, 2, 1, 1, 16)
    for s, t in [((5, 2, 8), (3, 1, 8)), ((5, 2, 8), (3, 2, 4))]:
        with pytest.raises(RuntimeError) as want_err:
            tm(torch.zeros(s), torch.zeros(t))
        with pytest.raises(RuntimeError) as got_err:
            nm(ng.zeros(s), ng.zeros(t))
        assert str(got_err.value) == str(want_err.value)


def test_matrices_start_xavier_uniform():
    ng.manual_seed(0)
    m = nn.Transformer(16, 2, 1, 1, 32)
    w = _np(m.encoder.layers[0].linear1.weight)  # (32, 16): xavier bound sqrt(6 / 48)
    assert np.abs(w).max() <= np.sqrt(6 / 48) and np.abs(w).max() > 0.8 * np.sqrt(6 / 48)
    assert np.all(_np(m.decoder.layers[0].linear1.bias) != 0)  # vectors keep Linear's init


def test_a_fully_masked_attention_row_is_zeros_as_in_torch():
    q = R.standard_normal((1, 2, 3, 4))
    m = np.ones((3, 3), bool)
    m[0] = False  # query 0 may attend to nothing
    tq, nq = torch.tensor(q, requires_grad=True), ng.tensor(q, requires_grad=True)
    want = torch.nn.functional.scaled_dot_product_attention(tq, tq, tq, attn_mask=torch.tensor(m))
    got = nn.functional.scaled_dot_product_attention(nq, nq, nq, attn_mask=ng.tensor(m))
    np.testing.assert_allclose(_np(got), _np(want), atol=1e-14)
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(_np(nq.grad), _np(tq.grad), atol=1e-13)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(4, 1).double()
    nm = _load(nn.MultiheadAttention(4, 1, dtype=ng.float64), tm)
    x = R.standard_normal((3, 1, 4))
    pad = np.array([[True, True, True]])
    for need in (False, True):  # PyTorch: zeros on its fused path, NaN with the weights
        w = tm(*[torch.tensor(x)] * 3, key_padding_mask=torch.tensor(pad), need_weights=need)[0]
        g = nm(*[ng.tensor(x)] * 3, key_padding_mask=ng.tensor(pad), need_weights=need)[0]
        np.testing.assert_array_equal(np.isnan(_np(g)), np.isnan(_np(w)))
        np.testing.assert_allclose(_np(g), _np(w), atol=1e-14)
