"""emc: a declarative model-spec compiler for unsupervised learning with EM.

The Python API (see emc/api.py): `emc.load(spec, **overrides).fit(data, ...)`, `emc.load_run(dir)`.
"""

__version__ = "0.1.0"


def load(spec, **overrides):
    from emc.api import load as _load
    return _load(spec, **overrides)


def load_run(path):
    from emc.api import load_run as _load_run
    return _load_run(path)
