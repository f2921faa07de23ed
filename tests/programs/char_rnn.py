"""A character-level language model: embed characters, run a GRU, predict the next character;
train with SGD and gradient clipping, then generate greedily."""
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

text = "hello world, hello numbers, hello gradients. " * 3
chars = sorted(set(text))
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for ch, i in stoi.items()}
encoded = torch.tensor([stoi[ch] for ch in text], dtype=torch.long)
print("vocabulary size", len(chars), "text length", len(text))


class CharRNN(nn.Module):
    def __init__(self, vocab_size, embed_size=8, hidden_size=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, idx, hidden=None):
        output, hidden = self.rnn(self.embed(idx), hidden)
        return self.out(output), hidden


model = CharRNN(len(chars))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
seq_len, batch = 10, 4
rng = np.random.default_rng(1)

for step in range(20):
    starts = rng.integers(0, len(text) - seq_len - 1, size=batch)
    x = torch.stack([encoded[s:s + seq_len] for s in starts])
    y = torch.stack([encoded[s + 1:s + seq_len + 1] for s in starts])
    logits, _ = model(x)
    loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    if step % 4 == 0:
        print(f"step {step:2d} loss {loss.item():.5f} grad norm {norm.item():.5f}")

with torch.no_grad():
    idx = torch.tensor([[stoi["h"]]])
    hidden = None
    generated = "h"
    for _ in range(12):
        logits, hidden = model(idx, hidden)
        probs = F.softmax(logits[0, -1], dim=0)
        nxt = int(probs.argmax())
        print(f"{itos[nxt]!r} p={probs[nxt].item():.5f}")
        generated += itos[nxt]
        idx = torch.tensor([[nxt]])
print("generated:", generated)
