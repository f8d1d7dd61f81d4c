"""emc: a declarative model-spec compiler for unsupervised learning with EM.

The Python API (see emc/api.py): `emc.load(spec, **overrides).fit(data, ...)`, `emc.load_run(dir)`.
"""

from emc.version import __version__

__all__ = ["__version__", "load", "load_run"]


def load(spec, **overrides):
    from emc.api import load as _load
    return _load(spec, **overrides)


def load_run(path):
    from emc.api import load_run as _load_run
    return _load_run(path)
