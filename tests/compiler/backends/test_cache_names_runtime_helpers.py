"""A kernel's name on disk covers every helper it may call: a later process (or a later
numgrad) that defines the same helper name with another body must not load the first body's
kernel. numgrad's own helpers count by the file that defines them, wherever it is; a program's
helpers by their code."""
import sys

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


def test_a_changed_helper_file_gives_another_module_name(monkeypatch):
    # Whichever numgrad file defines a helper (scalar_helpers.py or one beside its row), an
    # edit to it is a new name, without a list of files kept by hand.
    from numgrad.ops.registry import HELPERS
    files = {sys.modules[fn.__module__].__file__ for h in HELPERS.values()
             for fn in (h.body, h.cpu, h.cuda) if fn is not None}
    source = "def kernel(x): return x"
    before = disk_cache.module_name(KIND, source)
    assert disk_cache.module_name(KIND, source) == before  # stable while nothing changes
    for path in files:
        monkeypatch.setitem(disk_cache._S.file_digests, path, "an edited file")
        assert disk_cache.module_name(KIND, source) != before
        monkeypatch.undo()


def test_a_helper_with_a_nested_lambda_has_one_name_in_every_process():
    # A nested code object reprs with its address; two compilations of the same source
    # (as two processes would make) must give one fingerprint.
    src = "def h(x):\n    f = lambda y: y * 2.0\n    return f(x)\n"
    one, two = {}, {}
    exec(compile(src, "<helper>", "exec"), one)
    exec(compile(src, "<helper>", "exec"), two)
    assert repr(one["h"].__code__.co_consts) != repr(two["h"].__code__.co_consts)  # addresses
    assert disk_cache._code_fingerprint(one["h"]) == disk_cache._code_fingerprint(two["h"])
