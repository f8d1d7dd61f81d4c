"""Load (and cache) the generated module of a checked model.

The module's source is rendered from the spec and written to a cache directory under a name that
hashes the source together with the emc code it is compiled against (the DPs and the ABI), then
imported from there; numba's `cache=True` keeps the machine code beside it, so a second run of the
same model starts without compiling. The cache is `$EMC_CACHE_DIR`, else `$XDG_CACHE_HOME/emc`,
else `~/.cache/emc`.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from emc.version import __version__
from emc.codegen.render import render
from emc.spec.check import CheckedModel


def cache_dir() -> Path:
    if os.environ.get("EMC_CACHE_DIR"):
        return Path(os.environ["EMC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "emc"


@functools.cache
def emc_fingerprint() -> str:
    """A hash of the emc sources that generated code calls into (DPs, ABI): when they change,
    generated modules get new names, so numba never serves machine code built against old ones."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(list((root / "structures").rglob("*.py")) + [root / "codegen" / "abi.py"]):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def module_name(model: CheckedModel, source: str) -> str:
    digest = hashlib.sha256((source + emc_fingerprint()).encode()).hexdigest()[:16]
    return f"emc_{model.name}_{digest}"


def load_module(model: CheckedModel) -> ModuleType:
    """The generated module for a model, rendered and imported from the cache directory."""
    source = render(model)
    return load_source(module_name(model, source), source)


def load_source(name: str, source: str) -> ModuleType:
    """Import generated source under a name (from the cache directory); also how a Dask worker
    loads the model it was sent."""
    if name in sys.modules:
        return sys.modules[name]
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        # write-then-rename: concurrent processes never import a half-written file
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _marker(module: ModuleType) -> Path:
    return Path(module.__file__).with_suffix(".compiled")


def is_compiled(module: ModuleType) -> bool:
    """Whether a run on this machine has already compiled this generated module (and numba cached
    it), so that loading it takes a second rather than a compile."""
    return _marker(module).exists()


def mark_compiled(module: ModuleType) -> None:
    try:
        _marker(module).touch()
    except OSError:  # a read-only cache only costs the notice being shown again
        pass
