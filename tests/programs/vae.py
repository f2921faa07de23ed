"""A variational autoencoder with Linear layers on small synthetic binary images: encoder to a
mean and log-variance, the reparameterisation trick (noise drawn with NumPy), a Bernoulli
decoder, the ELBO loss; trained with Adam, then decode points of the latent space."""
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

rng = np.random.default_rng(5)
# 64 binary 6x6 "images": vertical or horizontal bars.
images = np.zeros((64, 6, 6), dtype=np.float32)
for i in range(64):
    k = rng.integers(0, 6)
    if i % 2:
        images[i, :, k] = 1
    else:
        images[i, k, :] = 1
data = torch.from_numpy(images.reshape(64, 36))


class VAE(nn.Module):
    def __init__(self, latent=2, hidden=24):
        super().__init__()
        self.enc = nn.Linear(36, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec1 = nn.Linear(latent, hidden)
        self.dec2 = nn.Linear(hidden, 36)

    def encode(self, x):
        h = F.relu(self.enc(x))
        return self.mu(h), self.logvar(h)

    def decode(self, z):
        return torch.sigmoid(self.dec2(F.relu(self.dec1(z))))

    def forward(self, x, eps):
        mu, logvar = self.encode(x)
        z = mu + eps * torch.exp(0.5 * logvar)
        return self.decode(z), mu, logvar


def loss_function(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld, bce, kld


model = VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(4):
    total = 0.0
    for start in range(0, 64, 16):
        x = data[start:start + 16]
        eps = torch.from_numpy(rng.standard_normal((16, 2)).astype(np.float32))
        recon, mu, logvar = model(x, eps)
        loss, bce, kld = loss_function(recon, x, mu, logvar)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss per image {total / 64:.5f} last bce {bce.item():.4f} "
          f"kld {kld.item():.4f}")

model.eval()
with torch.no_grad():
    grid = torch.tensor([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])
    samples = model.decode(grid)
    for row in samples:
        print(" ".join(f"{v:.3f}" for v in row[:8].tolist()))
    mu, _ = model.encode(data[:4])
    print("means", np.round(mu.numpy(), 5).tolist())
