"""numgrad.config: every NUMGRAD_* variable is declared there once, read there only, and
read when asked (not at import)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import numgrad
from numgrad import config
from numgrad.compiler import speculate
from numgrad.compiler.backends.cpu.llvm import kernel as llvm_kernel

PKG = Path(numgrad.__file__).resolve().parent
NAME = re.compile(r"\bNUMGRAD_[A-Z_]+\b")


def test_every_flag_the_package_names_is_declared():
    named = {m for f in PKG.rglob("*.py") for m in NAME.findall(f.read_text())}
    assert named - set(config.FLAGS) == set()
    assert all(f.doc and f.type in (bool, int, float, str) for f in config.FLAGS.values())


def test_only_config_reads_the_environment_for_flags():
    # Setting a flag for a child process (os.environ["NUMGRAD_X"] = ...) is not reading it.
    reads = re.compile(r"environ\.get\(\s*[\"']NUMGRAD_|getenv\(\s*[\"']NUMGRAD_"
                       r"|environ\[\s*[\"']NUMGRAD_\w*[\"']\s*\](?!\s*=[^=])")
    bad = [str(f.relative_to(PKG)) for f in PKG.rglob("*.py")
           if f.name != "config.py" and reads.search(f.read_text())]
    assert bad == []


def test_flags_are_read_when_asked(monkeypatch):
    monkeypatch.setenv("NUMGRAD_PROGRESS_DELAY", "0.25")
    assert config.get("NUMGRAD_PROGRESS_DELAY") == 0.25
    monkeypatch.setenv("NUMGRAD_SPECULATE", "0")
    assert config.get("NUMGRAD_SPECULATE") is False
    monkeypatch.delenv("NUMGRAD_SPECULATE")
    assert config.get("NUMGRAD_SPECULATE") is True
    # One channel: the compiler keeps no module-level switch beside the flags.
    from numgrad.compiler.backends.cpu.llvm import body as llvm_body
    for module in (speculate, llvm_kernel, llvm_body):
        assert not hasattr(module, "ENABLED")


@pytest.mark.parametrize("text, want", [("off", False), ("NO", False), ("1", True),
                                        ("true", True)])
def test_boolean_spellings(monkeypatch, text, want):
    monkeypatch.setenv("NUMGRAD_TRACEBACK_FILTERING", text)
    assert config.get("NUMGRAD_TRACEBACK_FILTERING") is want


def test_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("NUMGRAD_VECTOR_MATH", "maybe")
    with pytest.raises(ValueError, match="NUMGRAD_VECTOR_MATH='maybe'"):
        config.get("NUMGRAD_VECTOR_MATH")
    monkeypatch.setenv("NUMGRAD_CACHE_MAX_MB", "lots")
    with pytest.raises(ValueError, match="expected a float"):
        config.get("NUMGRAD_CACHE_MAX_MB")


def test_info_lists_every_flag():
    proc = subprocess.run([sys.executable, "-m", "numgrad", "info"], capture_output=True,
                          text=True, timeout=120, cwd=PKG.parent)
    assert proc.returncode == 0, proc.stderr
    listed = set(NAME.findall(proc.stdout))
    assert set(config.FLAGS) <= listed


def test_a_flag_with_choices_takes_only_those(monkeypatch):
    monkeypatch.setenv("NUMGRAD_CUDA_MATMUL", " Kernel ")
    assert config.get("NUMGRAD_CUDA_MATMUL") == "kernel"
    monkeypatch.setenv("NUMGRAD_CUDA_MATMUL", "gemm")
    with pytest.raises(ValueError, match=r"NUMGRAD_CUDA_MATMUL='gemm': expected one of auto, "
                                         r"cublas, kernel"):
        config.get("NUMGRAD_CUDA_MATMUL")
    monkeypatch.delenv("NUMGRAD_CUDA_MATMUL")
    assert config.get("NUMGRAD_CUDA_MATMUL") == "auto"
