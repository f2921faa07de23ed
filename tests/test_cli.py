"""The command line as a newcomer meets it: no command, bench from another folder,
notebooks without a path (which must not rewrite the checkout's notebooks)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from numgrad import __main__ as cli
from numgrad import notebooks

ROOT = Path(__file__).resolve().parent.parent


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "numgrad", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_no_command_prints_help_and_where_to_start(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert "demo" in out and "bench" in out and "Start with: python -m numgrad demo" in out


def test_bench_takes_its_options_from_any_folder(tmp_path):
    r = _run(["bench", "--help"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "--quick" in r.stdout and "unrecognized" not in r.stderr


def test_bench_without_the_bench_folder_says_what_to_do(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_bench_arguments", lambda: None)
    assert cli.main(["bench", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "bench/ folder" in err and "unrecognized arguments" not in err


def test_notebooks_without_a_path_leave_the_checkout_alone(monkeypatch, tmp_path):
    # Executing a notebook is the slow part: a stand-in returns it unchanged, so this
    # checks only where the result is written.
    import nbformat
    src = tmp_path / "nb"
    src.mkdir()
    path = src / "01_x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), str(path))
    before = path.read_bytes()
    monkeypatch.setattr(notebooks, "notebook_paths", lambda: [path])
    monkeypatch.setattr(notebooks, "execute",
                        lambda p, timeout: nbformat.read(str(p), as_version=4))
    out = tmp_path / "out"
    assert cli.main(["notebooks", "--out-dir", str(out)]) == 0
    assert path.read_bytes() == before
    assert (out / "01_x.ipynb").is_file()
