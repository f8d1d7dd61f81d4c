"""The package version, in a module of its own so that what records it (saved runs, generated
code, the compile cache key) need not import the package and its API."""

__version__ = "0.1.0"
