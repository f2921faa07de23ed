"""A tiny transformer language model: token and position embeddings, a causal
TransformerEncoder, a linear head; trained with AdamW on a repeating token pattern."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

vocab, context, d_model = 7, 8, 16
pattern = np.array([0, 1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1] * 6)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, idx):
        T = idx.shape[1]
        positions = torch.arange(T)
        x = self.tok(idx) * math.sqrt(d_model) + self.pos(positions)
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)  # no peeking ahead
        x = self.encoder(x, mask=mask, is_causal=True)
        return self.head(self.norm(x))


model = TinyLM()
print("parameters", sum(p.numel() for p in model.parameters()))
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
rng = np.random.default_rng(2)

for step in range(25):
    starts = rng.integers(0, len(pattern) - context - 1, size=6)
    x = torch.tensor(np.stack([pattern[s:s + context] for s in starts]))
    y = torch.tensor(np.stack([pattern[s + 1:s + context + 1] for s in starts]))
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, vocab), y.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step:2d} loss {loss.item():.5f}")

model.eval()
with torch.no_grad():
    idx = torch.tensor([[0, 1, 2]])
    for _ in range(6):
        logits = model(idx[:, -context:])
        nxt = logits[0, -1].argmax()
        idx = torch.cat([idx, nxt.view(1, 1)], dim=1)
    print("continuation", idx[0].tolist())
    weights = F.softmax(logits[0, -1], dim=-1)
    print("last distribution", " ".join(f"{w:.4f}" for w in weights.tolist()))
