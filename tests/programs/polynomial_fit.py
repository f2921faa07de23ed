"""Fit y = sin(x) on [-pi, pi] with a cubic a + b x + c x^2 + d x^3: first with raw tensors and
manual updates, then with nn.Linear on polynomial features and each optimizer, with and
without a learning-rate schedule."""
import math

import numpy as np
import torch

x_np = np.linspace(-math.pi, math.pi, 200)
x = torch.tensor(x_np, dtype=torch.float32)
y = torch.sin(x)

# 1. Tensors and autograd, updating by hand.
rng = np.random.default_rng(4)
a, b, c, d = (torch.tensor(rng.standard_normal(), dtype=torch.float32, requires_grad=True)
              for _ in range(4))
learning_rate = 1e-6
for t in range(60):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 20 == 19:
        print(t, round(loss.item(), 3))
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= learning_rate * p.grad
            p.grad = None
print(f"manual: y = {a.item():.5f} + {b.item():.5f} x + {c.item():.5f} x^2 + {d.item():.5f} x^3")

# 2. nn.Linear on (x, x^2, x^3) features with the optimizers.
features = torch.stack([x, x ** 2, x ** 3], dim=1)
target = y.unsqueeze(1)
setups = [
    ("SGD", lambda ps: torch.optim.SGD(ps, lr=1e-3), None),
    ("SGD momentum nesterov", lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9,
                                                         nesterov=True), None),
    ("Adam", lambda ps: torch.optim.Adam(ps, lr=0.05), None),
    ("Adam amsgrad + StepLR", lambda ps: torch.optim.Adam(ps, lr=0.05, amsgrad=True),
     lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)),
    ("AdamW + CosineAnnealingLR", lambda ps: torch.optim.AdamW(ps, lr=0.05),
     lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=30)),
]
for name, make_opt, make_sched in setups:
    model = torch.nn.Linear(3, 1)
    loss_fn = torch.nn.MSELoss()
    optimizer = make_opt(model.parameters())
    scheduler = make_sched(optimizer) if make_sched else None
    for t in range(30):
        loss = loss_fn(model(features), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    coef = model.weight.detach().numpy().ravel()
    lr = optimizer.param_groups[0]["lr"]
    print(f"{name}: loss {loss.item():.4f} lr {lr:.6f} y = {model.bias.item():.5f} + "
          f"{coef[0]:.5f} x + {coef[1]:.5f} x^2 + {coef[2]:.5f} x^3")
