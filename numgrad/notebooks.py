"""notebooks: run the notebooks in ``notebooks/`` top to bottom and save their outputs.

Room: the command line (``python -m numgrad notebooks``), and the test that executes
every notebook (``tests/test_notebooks.py``). Needs the ``dev`` extra (nbclient,
nbformat, ipykernel, matplotlib). Each notebook runs in a fresh kernel whose working
directory is ``notebooks/``; a cell may raise only if it is tagged ``raises-exception``
(the notebooks show some errors on purpose).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"


def notebook_paths():
    return sorted(NOTEBOOK_DIR.glob("[0-9]*.ipynb"))


def execute(path, timeout=600):
    """The notebook at ``path``, executed in a fresh kernel (raises on an unexpected error)."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(str(path), as_version=4)
    # The kernel imports this checkout's numgrad, whatever is installed.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(Path(path).parent)}})
    client.execute(env=env)
    return nb


def main(paths=None, timeout=600, out_dir="executed-notebooks"):
    """Execute each notebook and save it with its outputs: into ``out_dir`` (made if
    missing), or back into the notebook itself when ``out_dir`` is None (``--in-place``:
    for maintainers updating the committed notebooks, never the default)."""
    import nbformat
    paths = [Path(p) for p in paths] if paths else notebook_paths()
    if not paths:
        print(f"no notebooks found under {NOTEBOOK_DIR}", file=sys.stderr)
        return 2
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    for p in paths:
        t0 = time.perf_counter()
        nb = execute(p, timeout)
        target = p if out_dir is None else Path(out_dir) / p.name
        nbformat.write(nb, str(target))
        print(f"{p.name}: executed in {time.perf_counter() - t0:.1f} s, saved to {target}")
    return 0
