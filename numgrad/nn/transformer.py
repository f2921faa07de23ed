"""nn.transformer: ``TransformerDecoderLayer``, ``TransformerDecoder`` and the encoder-decoder
``Transformer`` (``torch.nn``), over the attention and encoder of ``nn.attention``.

Room: nn. Parameter names, initialisation and argument order are PyTorch's, so a torch
``state_dict`` loads unchanged and a subclass of ``nn.Transformer`` (the word language model's
``TransformerModel``) builds the same modules.
"""
from __future__ import annotations

import numgrad.creation as creation
import numgrad.ops as ops
from numgrad.nn.attention import (TransformerEncoder, TransformerEncoderLayer, _build_layer,
                                  _stack_layers)
from numgrad.nn.init import xavier_uniform_
from numgrad.nn.layers import LayerNorm
from numgrad.nn.module import Module


class TransformerDecoderLayer(Module):
    """Self-attention over ``tgt``, attention over ``memory``, then a feed-forward block, each
    with dropout, a residual connection and LayerNorm (``torch.nn.TransformerDecoderLayer``).

    >>> layer = ng.nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> tuple(layer(ng.randn(4, 3, 8), ng.randn(5, 3, 8)).shape)
    (4, 3, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        _build_layer(self, ("self_attn", "multihead_attn"), 3, d_model, nhead, dim_feedforward,
                     dropout, activation, layer_norm_eps, batch_first, norm_first, bias,
                     dict(device=device, dtype=dtype))

    def _sa_block(self, x, mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        """The decoded ``tgt`` (same shape), attending to ``memory``."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn, then ``norm`` if given
    (``torch.nn.TransformerDecoder``).

    >>> layer = ng.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
    >>> tuple(ng.nn.TransformerDecoder(layer, 2)(ng.randn(3, 4, 8), ng.randn(3, 5, 8)).shape)
    (3, 4, 8)
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm=None):
        super().__init__()
        _stack_layers(self, decoder_layer, num_layers, norm)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        """``tgt`` through every layer with ``memory`` (and the final norm)."""
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """An encoder over ``src`` and a decoder over ``tgt`` attending to the encoded ``src``
    (``torch.nn.Transformer``); matrices are initialised with ``xavier_uniform_``.

    >>> model = ng.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
    ...                           num_decoder_layers=1, dim_feedforward=16)
    >>> tuple(model(ng.randn(5, 2, 8), ng.randn(3, 2, 8)).shape)
    (3, 2, 8)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        layer_kw = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                        layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                        norm_first=norm_first, bias=bias, **kw)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **layer_kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **layer_kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for p in self.parameters():
            if p.dim() > 1:
                xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        """The decoder's output for ``tgt`` given the encoded ``src``."""
        batched = src.dim() == 3
        b = 0 if self.batch_first else 1
        if not batched and tgt.dim() == 3 or batched and src.shape[b] != tgt.shape[b]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The (sz, sz) float mask with -inf above the diagonal, 0 elsewhere: position i
        attends to positions 0..i.

        >>> ng.nn.Transformer.generate_square_subsequent_mask(2)
        tensor([[0., -inf],
                [0., 0.]])
        """
        return ops.triu(creation.full((sz, sz), float("-inf"), device=device, dtype=dtype),
                        diagonal=1)
