"""The steps of an autograd tutorial: tensors that require grad, backward, .grad, gradients
accumulating, vector-Jacobian products, torch.autograd.grad, no_grad and detach."""
import numpy as np
import torch

rng = np.random.default_rng(3)
x = torch.tensor(rng.standard_normal(5), dtype=torch.float32)
w = torch.tensor(rng.standard_normal((5, 3)), dtype=torch.float32, requires_grad=True)
b = torch.tensor(rng.standard_normal(3), dtype=torch.float32, requires_grad=True)
y = torch.zeros(3)

z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print("requires grad:", z.requires_grad, "leaf:", w.is_leaf, z.is_leaf)
print("loss", round(loss.item(), 6))

loss.backward()
print("w.grad", np.round(w.grad.numpy(), 6).tolist())
print("b.grad", np.round(b.grad.numpy(), 6).tolist())

# Gradients accumulate until they are zeroed.
loss = torch.nn.functional.binary_cross_entropy_with_logits(torch.matmul(x, w) + b, y)
loss.backward()
print("b.grad after a second backward", np.round(b.grad.numpy(), 6).tolist())
b.grad.zero_()
print("b.grad zeroed", b.grad.tolist())

# A non-scalar output needs the vector of a vector-Jacobian product.
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print("first call\n", inp.grad.numpy())
out.backward(torch.ones_like(out))
print("second call\n", inp.grad.numpy())

# torch.autograd.grad returns the gradient instead of accumulating it; create_graph lets
# us differentiate again.
t = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
f = (t ** 3).sum()
(g,) = torch.autograd.grad(f, t, create_graph=True)
print("df/dt", g.tolist())
(h,) = torch.autograd.grad(g.sum(), t)
print("d2f/dt2", h.tolist())

# Stop tracking: no_grad and detach.
with torch.no_grad():
    z = torch.matmul(x, w) + b
print("under no_grad requires grad:", z.requires_grad)
z_det = (torch.matmul(x, w) + b).detach()
print("detached requires grad:", z_det.requires_grad)

# Freeze a parameter: only the rest get gradients.
w.requires_grad_(False)
w.grad = None
b.grad = None
loss = ((torch.matmul(x, w) + b) ** 2).mean()
loss.backward()
print("w.grad is None:", w.grad is None, "b.grad", np.round(b.grad.numpy(), 6).tolist())
