"""nn.utils.rnn: ``pad_sequence`` (``torch.nn.utils.rnn``).

Room: nn. Padding is a ``cat`` with a constant block, so gradients flow back to each sequence.
"""
from __future__ import annotations

import numgrad.creation as creation
import numgrad.ops as ops
from numgrad.tensor import Tensor


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shape (L_i, *) into (max L, B, *), or (B, max L, *) with
    ``batch_first``, filling the missing steps with ``padding_value`` on ``padding_side``
    (``torch.nn.utils.rnn.pad_sequence``).

    >>> ng.nn.utils.rnn.pad_sequence([ng.tensor([1, 2]), ng.tensor([3])], batch_first=True)
    tensor([[1, 2],
            [3, 0]])

    Raises RuntimeError for a ``padding_side`` other than "left" or "right".
    """
    if isinstance(sequences, Tensor):
        sequences = ops.unbind(sequences, 0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = creation.full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
            fill = fill if s.device.type == "cpu" else fill.to(s.device)
            s = ops.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return ops.stack(padded, 0 if batch_first else 1)
