"""Where emc keeps what it compiles: the generated modules with numba's machine code beside them
(emc/runtime/compiled.py) and jinja's template bytecode (emc/codegen/render.py). Here, below both,
so that the code generator needs nothing from the runtime to find it."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """`$EMC_CACHE_DIR`, else `$XDG_CACHE_HOME/emc`, else `~/.cache/emc`."""
    if os.environ.get("EMC_CACHE_DIR"):
        return Path(os.environ["EMC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "emc"
