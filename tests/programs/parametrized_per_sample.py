"""A small classifier whose first layer is kept symmetric by a parametrization, trained with
RMSprop (PyTorch's implementation switches given); its per-sample gradients from
torch.func's grad + vmap over functional_call, checked against a loop of autograd.grad; what
its saved tensors and its weights' distance say along the way."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch import vmap
from torch.func import functional_call, grad


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


rng = np.random.default_rng(7)
x = torch.tensor(rng.normal(size=(24, 2, 3)).astype(np.float32)).movedim(1, 2).flatten(1)
labels = torch.tensor(rng.integers(0, 3, 24))
model = Net()
parametrize.register_parametrization(model.fc1, "weight", Symmetric())
print(model)
print([name for name, _ in model.named_parameters()])
opt = torch.optim.RMSprop(model.parameters(), lr=0.01, foreach=False)
print(sorted(k for k in opt.param_groups[0] if k != "params"))
start = model.fc1.weight.detach().clone()
for step in range(40):
    loss = F.cross_entropy(model(x), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 9:
        w = model.fc1.weight
        print(step, f"{loss.item():.5f}", f"moved {torch.dist(w, start).item():.5f}",
              "symmetric", torch.allclose(w, w.T))

h = model.fc1(x[:2])
print("saved:", h.grad_fn.name(),
      tuple(torch.tanh(h).grad_fn._saved_result.shape))

params = {k: v.detach() for k, v in model.named_parameters()}


def loss_one(params, sample, target):
    out = functional_call(model, params, (sample.unsqueeze(0),))
    return F.cross_entropy(out, target.unsqueeze(0))


per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, x[:5], labels[:5])
for name, g in per_sample.items():
    loop = torch.stack([torch.autograd.grad(loss_one(dict(model.named_parameters()), x[i],
                                                      labels[i]),
                                            dict(model.named_parameters())[name])[0]
                        for i in range(5)])
    print(name, tuple(g.shape), f"{g.abs().sum().item():.5f}",
          "matches loop", torch.allclose(g, loop, atol=1e-6))
parametrize.remove_parametrizations(model.fc1, "weight")
print(type(model.fc1).__name__, [name for name, _ in model.named_parameters()])
