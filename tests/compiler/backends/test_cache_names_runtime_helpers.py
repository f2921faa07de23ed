"""A kernel's name on disk covers the helpers a program registers at run time: a later
process that registers the same helper name with another body must not load the first
body's kernel (the shipped helper files are hashed; a runtime helper's code is not in them)."""

from numgrad.compiler.backends import disk_cache
from numgrad.compiler.backends.cpu.cache import KIND
from numgrad.ops import Helper, register, unregister


def _name_with(body):
    register("cache_probe_op", inputs=("x",), impl=lambda x: x, kind="elementwise",
             lowering="cache_probe({0})", helpers=(Helper("cache_probe", body, llvm="numba"),))
    try:
        return disk_cache.module_name(KIND, "def kernel(x): return cache_probe(x)")
    finally:
        unregister("cache_probe_op")


def test_same_helper_name_other_body_gets_another_module_name():
    def double(x):
        return x * 2.0

    def triple(x):
        return x * 3.0

    assert _name_with(double) != _name_with(triple)
    assert _name_with(double) == _name_with(double)  # same code: the cached kernel is reused


def test_no_runtime_helper_leaves_the_name_as_before():
    source = "def kernel(x): return x"
    assert disk_cache._registered_helpers_digest() == ""
    assert disk_cache.module_name(KIND, source) == disk_cache.module_name(KIND, source)
