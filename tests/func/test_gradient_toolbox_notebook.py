"""notebooks/gradient_toolbox.ipynb runs top to bottom in a fresh kernel, its checks print
True, and it draws its pictures (Jacobian and Hessian heat maps, per-sample gradient norms).
It is not numbered, so tests/test_notebooks.py leaves it to this test."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

from numgrad import notebooks  # noqa: E402

PATH = Path(__file__).resolve().parents[2] / "notebooks" / "gradient_toolbox.ipynb"


def test_gradient_toolbox_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMGRAD_CACHE_DIR", str(tmp_path))
    nb = notebooks.execute(PATH, timeout=300)
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outs if o.output_type == "stream")
    for check in ("symmetric: True", "mean == batch grad: True",
                  "row sums of the Jacobian: True"):
        assert check in text
    assert sum("image/png" in o.get("data", {}) for o in outs) == 3
