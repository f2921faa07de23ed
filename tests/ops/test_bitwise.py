"""ops.bitwise: PyTorch's errors for floating operands (values: the op table)."""
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402


def _error(lib, fn):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1.0, 2.0]) & m.tensor([1.0, 2.0]),
    lambda m: m.tensor([1, 2]) | m.tensor([1.0, 2.0], dtype=m.float64),
    lambda m: m.tensor([1, 2]) ^ 1.5,
    lambda m: m.bitwise_not(m.tensor([1.0])),
    lambda m: ~m.tensor([1.0]),
    lambda m: m.tensor([1.0]).bitwise_or_(m.tensor([1.0])),
], ids=["and_float", "or_double", "xor_pyfloat", "not_float", "invert_float", "or_inplace"])
def test_floating_operands_raise_as_in_torch(fn):
    assert _error(ng, fn) == _error(torch, fn)


def _program(a, b, m):
    return (a & b) | (a ^ 5), ~a, ~m, m ^ (a > b), b.bitwise_not()


_jitted = ng.jit(_program)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_bitwise_matches_torch(mode, device):
    if device == "cuda" and not ng.cuda.is_available():
        pytest.skip("neither a CUDA device nor Numba's simulator")
    a, b = ng.tensor([3, -5, 0, 12]), ng.tensor([6, 2, -1, 7])
    m = ng.tensor([True, False, True, False])
    ta, tb, tm = (torch.tensor(t.numpy()) for t in (a, b, m))
    f = _jitted if mode == "jit" else _program
    for got, want in zip(f(*(t.to(device) for t in (a, b, m))), _program(ta, tb, tm)):
        assert got.dtype.name == str(want.dtype).removeprefix("torch.")
        assert got.cpu().numpy().tolist() == want.tolist()


def test_augmented_assignment_writes_in_place_as_torch():
    # `a &= b` changes the tensor itself (an alias sees it) and bumps its version, as torch.
    got = {}
    for lib in (ng, torch):
        a = lib.tensor([5, 3, 12])
        alias = a
        a &= lib.tensor([7, 1, 4])
        a |= lib.tensor([8, 8, 1])
        a ^= lib.tensor([1, 0, 3])
        m = lib.tensor([True, False])
        m |= lib.tensor([False, True])
        got[lib] = (alias.tolist(), a is alias, a._version, m.tolist())
    assert got[ng] == got[torch]
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        f = ng.tensor([1.0, 2.0])
        f &= ng.tensor([1.0, 1.0])
