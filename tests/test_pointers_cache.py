"""A call through a function pointer (emc/structures/pointers.py) survives numba's cache across
processes, also when the function that makes the call is loaded from the cache and then linked into
a caller compiled later: the DMV's chart calls its passes through pointers, and a second deptree
spec fitted after a first (its glue compiled against the chart's cached entry points) crashed the
next process that decoded with it (a segfault, before pointers._keep_reload_init)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

INNER = """
from numba import njit
from emc.structures.pointers import by_pointer

@njit(cache=True)
def target(x):
    return x * 2.0

target_by_pointer = by_pointer(target)

@njit(cache=True)
def middle(x):
    return target_by_pointer(x) + 1.0
"""

OUTER = """
from numba import njit
from inner import middle

@njit(cache=True)
def outer(x):
    return middle(x) + 10.0
"""

RUN = """
import importlib, sys
sys.path.insert(0, ".")
name, function = sys.argv[1], sys.argv[2]
print(getattr(importlib.import_module(name), function)(1.0))
"""


def _run(folder: Path, module: str, function: str) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "numba-cache")}
    done = subprocess.run([sys.executable, "run.py", module, function], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout.strip()


def test_a_caller_compiled_against_cached_pointer_code_runs_from_the_cache(tmp_path):
    for name, text in {"inner.py": INNER, "outer.py": OUTER, "run.py": RUN}.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    assert _run(tmp_path, "inner", "middle") == "3.0"  # compiles middle and caches it
    assert _run(tmp_path, "outer", "outer") == "13.0"  # loads middle from the cache, compiles outer
    assert _run(tmp_path, "outer", "outer") == "13.0"  # loads outer alone: crashed here
