"""emc: a declarative model-spec compiler for unsupervised learning with EM."""

__version__ = "0.1.0"
