"""What another user who can write a kernel cache directory could plant in it, for the
disk cache's tests (tests/compiler/backends/cpu/test_cache_security.py and
tests/compiler/backends/cuda/test_cuda_disk_cache.py): a pickle whose unpickling would
create a marker file, written as Numba's (or numba-cuda's) index or data file, and a
manifest forged to vouch for it."""
from __future__ import annotations

import hashlib
import json
import os
import pickle


class Payload:
    """Unpickling this creates the marker file (as a planted pickle would run code)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


def plant_index(path, marker):
    """Overwrite the index file ``path`` with the payload; returns ``path``."""
    import numba
    with open(path, "wb") as f:  # the index format: Numba's version, then the pickle
        pickle.dump(numba.__version__, f, protocol=-1)
        f.write(pickle.dumps(Payload(marker)))
    return path


def plant_data(path, marker):
    """Overwrite the data file ``path`` with the payload; returns ``path``."""
    with open(path, "wb") as f:
        f.write(pickle.dumps(Payload(marker)))
    return path


def forge_manifest(d, path):
    """What someone who can write the directory ``d`` could do: vouch for their own file."""
    name = os.path.basename(path).split(".", 1)[0]
    man = os.path.join(str(d), name + ".manifest")
    with open(man) as f:
        body = json.load(f)
    with open(path, "rb") as f:
        body["files"][os.path.basename(path)] = hashlib.sha256(f.read()).hexdigest()
    with open(man, "w") as f:
        json.dump(body, f)
