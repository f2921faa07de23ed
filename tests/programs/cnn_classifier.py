"""A small convolutional classifier on synthetic MNIST-shaped data (1x12x12 images of a bright
square in one of four corners), written as PyTorch's CNN examples are: nn.Conv2d, max
pooling, BatchNorm2d, Dropout, Flatten, a DataLoader, SGD with momentum and a StepLR
schedule, then an evaluation pass under no_grad in eval mode."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(11)
n = 96
labels = rng.integers(0, 4, n)
images = rng.normal(0, 0.3, (n, 1, 12, 12)).astype(np.float32)
for i, c in enumerate(labels):
    r, q = divmod(int(c), 2)
    images[i, 0, r * 6 + 1:r * 6 + 5, q * 6 + 1:q * 6 + 5] += 1.5
x_all = torch.from_numpy(images)
y_all = torch.from_numpy(labels.astype(np.int64))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.dropout = nn.Dropout(0.0)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(8 * 2 * 2, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.dropout(self.flatten(x)))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=32, shuffle=False)
print(model.conv1)
print("parameters:", sum(p.numel() for p in model.parameters()))

for epoch in range(4):
    model.train()
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.shape[0]
    scheduler.step()
    print(f"epoch {epoch}: loss {total / n:.5f}, lr {scheduler.get_last_lr()[0]:.4f}")

model.eval()
with torch.no_grad():
    logits = model(x_all)
    pred = logits.argmax(dim=1)
    print("accuracy:", (pred == y_all).float().mean().item())
    print("running mean:", [round(v, 4) for v in model.bn1.running_mean.tolist()])
print("loss grad_fn:", F.cross_entropy(model(x_all[:4]), y_all[:4]).grad_fn.name())
