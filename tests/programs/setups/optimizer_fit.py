"""Fit y = sin(x) with nn.Linear on (x, x^2, x^3) features, using the optimizer and learning-rate
schedule named by the PROGRAM_SETUP environment variable (every setup when it is unset),
printing the loss, the learning rate and the coefficients as training goes."""
import math
import os

import numpy as np
import torch
from torch.optim import lr_scheduler as sched

x = torch.tensor(np.linspace(-math.pi, math.pi, 40), dtype=torch.float32)
features = torch.stack([x, x ** 2, x ** 3], dim=1) / torch.tensor([3.0, 9.0, 27.0])
target = torch.sin(x).unsqueeze(1)

SETUPS = {
    "SGD": (lambda ps: torch.optim.SGD(ps, lr=0.1), None),
    "SGD momentum dampening wd": (
        lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.1,
                                   weight_decay=1e-2), None),
    "SGD nesterov maximize": (
        lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True,
                                   maximize=True), None),
    "Adam": (lambda ps: torch.optim.Adam(ps, lr=0.05, betas=(0.8, 0.99)), None),
    "Adam amsgrad wd": (lambda ps: torch.optim.Adam(ps, lr=0.05, amsgrad=True,
                                                    weight_decay=0.1), None),
    "AdamW": (lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.5), None),
    "RMSprop": (lambda ps: torch.optim.RMSprop(ps, lr=0.01), None),
    "RMSprop centered momentum": (
        lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True), None),
    "Adagrad": (lambda ps: torch.optim.Adagrad(ps, lr=0.3, lr_decay=0.01,
                                               initial_accumulator_value=0.1), None),
    "Adadelta": (lambda ps: torch.optim.Adadelta(ps, lr=5.0, rho=0.8), None),
    "Adamax": (lambda ps: torch.optim.Adamax(ps, lr=0.1), None),
    "NAdam": (lambda ps: torch.optim.NAdam(ps, lr=0.05), None),
    "RAdam": (lambda ps: torch.optim.RAdam(ps, lr=0.05), None),
    "StepLR": (lambda ps: torch.optim.SGD(ps, lr=0.2),
               lambda o: sched.StepLR(o, step_size=4, gamma=0.5)),
    "MultiStepLR": (lambda ps: torch.optim.SGD(ps, lr=0.2, momentum=0.5),
                    lambda o: sched.MultiStepLR(o, milestones=[3, 7, 9], gamma=0.3)),
    "ExponentialLR": (lambda ps: torch.optim.Adam(ps, lr=0.1),
                      lambda o: sched.ExponentialLR(o, gamma=0.8)),
    "LambdaLR": (lambda ps: torch.optim.SGD(ps, lr=0.2),
                 lambda o: sched.LambdaLR(o, lr_lambda=lambda e: 1.0 / (1 + e))),
    "LinearLR": (lambda ps: torch.optim.SGD(ps, lr=0.2),
                 lambda o: sched.LinearLR(o, start_factor=0.25, total_iters=5)),
    "SequentialLR": (lambda ps: torch.optim.SGD(ps, lr=0.2),
                     lambda o: sched.SequentialLR(
                         o, [sched.LinearLR(o, start_factor=0.5, total_iters=3),
                             sched.ExponentialLR(o, gamma=0.7)], milestones=[4])),
    "OneCycleLR": (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                   lambda o: sched.OneCycleLR(o, max_lr=0.3, total_steps=12)),
    "CosineAnnealingLR": (lambda ps: torch.optim.AdamW(ps, lr=0.1),
                          lambda o: sched.CosineAnnealingLR(o, T_max=6, eta_min=0.01)),
    "ReduceLROnPlateau": (lambda ps: torch.optim.SGD(ps, lr=0.5),
                          lambda o: sched.ReduceLROnPlateau(o, factor=0.5, patience=1,
                                                            threshold=0.05)),
    "ConstantLR": (lambda ps: torch.optim.SGD(ps, lr=0.2),
                   lambda o: sched.ConstantLR(o, factor=0.25, total_iters=4)),
    "MultiplicativeLR": (lambda ps: torch.optim.Adam(ps, lr=0.1),
                         lambda o: sched.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.7)),
    "PolynomialLR": (lambda ps: torch.optim.SGD(ps, lr=0.3, momentum=0.3),
                     lambda o: sched.PolynomialLR(o, total_iters=8, power=2.0)),
    "LBFGS": (lambda ps: torch.optim.LBFGS(ps, lr=0.5, max_iter=4, history_size=3), None),
    "LBFGS strong_wolfe": (lambda ps: torch.optim.LBFGS(ps, lr=1, max_iter=5,
                                                        line_search_fn="strong_wolfe"), None),
}

chosen = os.environ.get("PROGRAM_SETUP")
for name in [chosen] if chosen else list(SETUPS):
    make_opt, make_sched = SETUPS[name]
    model = torch.nn.Linear(3, 1)
    loss_fn = torch.nn.MSELoss()
    optimizer = make_opt(model.parameters())
    scheduler = make_sched(optimizer) if make_sched else None
    steps = 4 if name.startswith("LBFGS") else 12
    for t in range(steps):
        def closure():
            optimizer.zero_grad()
            loss = loss_fn(model(features), target)
            if "maximize" in name:
                loss = -loss
            loss.backward()
            return loss
        if name.startswith("LBFGS"):
            loss = optimizer.step(closure)
        else:
            loss = closure()
            optimizer.step()
        if isinstance(scheduler, sched.ReduceLROnPlateau):
            scheduler.step(loss.item())
        elif scheduler is not None:
            scheduler.step()
        if t % 2 == 1:
            print(f"{name} {t}: loss {loss.item():.6f} lr {optimizer.param_groups[0]['lr']:.6f}")
    coef = model.weight.detach().numpy().ravel()
    print(f"{name}: y = {model.bias.item():.5f} + {coef[0]:.5f} x + {coef[1]:.5f} x^2 + "
          f"{coef[2]:.5f} x^3")
