"""Custom autograd Functions the way PyTorch's tutorial writes them: a Legendre polynomial
P3 with its own backward, used to fit sin(x) by gradient descent; then a clamp whose backward
passes the gradient straight through, checked with gradcheck and used in a tiny model."""
import math

import numpy as np
import torch


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class StraightThroughClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.mark_non_differentiable()
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        return g, None, None


x = torch.from_numpy(np.linspace(-math.pi, math.pi, 200))
y = torch.sin(x)
a = torch.full((), 0.0, dtype=torch.float64, requires_grad=True)
b = torch.full((), -1.0, dtype=torch.float64, requires_grad=True)
c = torch.full((), 0.0, dtype=torch.float64, requires_grad=True)
d = torch.full((), 0.3, dtype=torch.float64, requires_grad=True)
P3 = LegendrePolynomial3.apply
lr = 5e-6
for t in range(400):
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, f"{loss.item():.6f}")
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= lr * p.grad
            p.grad = None
print(f"Result: y = {a.item():.5f} + {b.item():.5f} * P3({c.item():.5f} + {d.item():.5f} x)")
print("grad_fn:", P3(x.requires_grad_()).grad_fn.name())

inp = torch.tensor([0.3, -0.7, 1.4], dtype=torch.float64, requires_grad=True)
print("gradcheck:", torch.autograd.gradcheck(LegendrePolynomial3.apply, (inp,)))
w = torch.tensor([[0.5, -1.0], [1.5, 0.25]], dtype=torch.float64, requires_grad=True)
h = StraightThroughClamp.apply(torch.tensor([[1.0, 2.0]], dtype=torch.float64) @ w, -1.0, 1.0)
(h * torch.tensor([[1.0, -2.0]], dtype=torch.float64)).sum().backward()
print("clamped:", h.tolist(), "grad:", w.grad.tolist())
