"""An encoder-decoder nn.Transformer subclass learning to copy token sequences: batches made
column-major with .t().contiguous(), teacher forcing under a causal mask, padding masked out of
the loss with masked_select, and the predictions summarised with nonzero, unique and floor. The
first target position is padding under a causal mask: its attention row has every key masked
(PyTorch's attention gives zeros there, not NaN)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

vocab, pad, d_model, steps = 9, 0, 8, 6
rng = np.random.default_rng(5)
lengths = rng.integers(3, 7, 24)
data = np.zeros((24, 7), dtype=np.int64)
for i, n in enumerate(lengths):
    data[i, :n] = rng.integers(1, vocab, n)
stream = torch.tensor(data.reshape(-1))


def batchify(flat, rows):
    """(seq, batch): each column one sequence, as the word language model lays them out."""
    return flat.view(rows, -1).t().contiguous()


class Copier(nn.Transformer):
    def __init__(self):
        super().__init__(d_model=d_model, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                         dim_feedforward=16, dropout=0.0)
        self.embed = nn.Embedding(vocab, d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        mask = self.generate_square_subsequent_mask(tgt.size(0))
        scale = math.sqrt(d_model)
        out = super().forward(self.embed(src) * scale, self.embed(tgt) * scale, tgt_mask=mask,
                              src_key_padding_mask=(src == pad).t(),
                              tgt_key_padding_mask=(tgt == pad).t())
        return self.head(out)


def metrics(logits, target):
    keep = target != pad
    pred = logits.argmax(-1)
    hits = torch.masked_select(pred == target, keep).float()
    wrong = torch.nonzero((pred != target) & keep)
    return hits.mean(), wrong.shape[0], torch.unique(torch.masked_select(pred, keep))


model = Copier()
opt = torch.optim.Adam(model.parameters(), lr=0.02)
batches = batchify(stream, 24)                        # (7, 24)
src, tgt = batches, torch.cat([torch.zeros(1, 24, dtype=torch.long), batches[:-1]])
print("batch", tuple(batches.shape), batches.is_contiguous(), batches.t().is_contiguous())
for step in range(steps):
    logits = model(src, tgt)
    flat_logits, flat_target = logits.view(-1, vocab), batches.view(-1)
    losses = F.cross_entropy(flat_logits, flat_target, reduction="none")
    loss = torch.masked_select(losses, flat_target != pad).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    acc, wrong, seen = metrics(logits.detach(), batches)
    print(f"step {step}: loss {loss.item():.5f} accuracy {acc.item():.4f} wrong {wrong} "
          f"tokens {seen.tolist()} mean floor {torch.floor(logits * 4).mean().item():.3f}")
