"""optim: optimizers and learning-rate schedules (``torch.optim``).

Room: optim. Builds on tensor, grad_mode and nn; never imports the compiler.
"""
from numgrad.optim.optimizer import Optimizer  # noqa: F401
from numgrad.optim.sgd import SGD  # noqa: F401
from numgrad.optim.adam import Adam, AdamW  # noqa: F401
from numgrad.optim import lr_scheduler  # noqa: F401
from numgrad.optim import schedules as _schedules  # noqa: F401  (enters LambdaLR, ... into lr_scheduler)
from numgrad.optim import factor_schedules as _factor_schedules  # noqa: F401  (ConstantLR, ...)
from numgrad.optim.adaptive import RMSprop, Adagrad, Adadelta  # noqa: F401
from numgrad.optim.adam_variants import Adamax, NAdam, RAdam  # noqa: F401
from numgrad.optim.lbfgs import LBFGS  # noqa: F401
