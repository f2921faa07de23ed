"""utils.data: datasets and mini-batch loading (``torch.utils.data``).

Room: utils. Builds on tensor, creation and ops; never imports the compiler.
"""
from numgrad.utils.data.dataset import Dataset, TensorDataset  # noqa: F401
from numgrad.utils.data.dataloader import DataLoader, default_collate  # noqa: F401
