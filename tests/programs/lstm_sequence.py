"""Predict the next value of a noisy sine wave with an LSTM (a sequence-to-sequence regressor)."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(0)
steps = np.linspace(0, 4 * np.pi, 25)
phases = rng.uniform(0, 2 * np.pi, size=(8, 1))
waves = np.sin(steps[None, :] + phases) + 0.05 * rng.standard_normal((8, 25))
inputs = torch.tensor(waves[:, :-1, None], dtype=torch.float32)   # (batch, time, 1)
targets = torch.tensor(waves[:, 1:, None], dtype=torch.float32)


class SequenceModel(nn.Module):
    def __init__(self, hidden_size=12):
        super().__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=hidden_size, num_layers=2,
                            batch_first=True)
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, x, state=None):
        out, state = self.lstm(x, state)
        return self.head(out), state


model = SequenceModel()
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)

for epoch in range(15):
    optimizer.zero_grad()
    prediction, _ = model(inputs)
    loss = loss_fn(prediction, targets)
    loss.backward()
    optimizer.step()
    if epoch % 3 == 0:
        print(f"epoch {epoch:2d}  loss {loss.item():.6f}")

# Feed the first half, then let the model continue on its own for a few steps.
model.eval()
with torch.no_grad():
    _, state = model(inputs[:1, :12])
    value = inputs[:1, 12:13]
    generated = []
    for _ in range(5):
        value, state = model(value, state)
        generated.append(value.item())
print("generated", " ".join(f"{v:.5f}" for v in generated))
h, c = state
print("final state norms", f"{h.norm().item():.5f}", f"{c.norm().item():.5f}")
