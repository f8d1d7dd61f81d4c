"""A learned block's prior, as an object: its M-step, its log prior, its online pseudo-count and
its variational Dirichlet (emc/priors/kinds.py), built by one parser from the spec, the command
line or a saved run (emc/priors/text.py)."""
from emc.priors.kinds import KINDS, Dirichlet, Prior, SmoothedL0

__all__ = ["KINDS", "Dirichlet", "Prior", "SmoothedL0"]
