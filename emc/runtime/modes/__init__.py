"""A structure's own ways of carrying out `emc fit` and `emc decode`, and its own starts that run
EM, where the ordinary driver does not fit: alignment trains two directions (or both jointly, by
agreement) and decodes them together (alignment.py, agreement.py) and starts the HMM aligner from
IBM Model 1 (ibm1.py). They use the runtime, so they live here: nothing in emc/structures imports
emc/runtime. dispatch.py picks a structure's mode by the structure's name; a start that runs EM
registers itself with emc/runtime/initialize.py when its module is imported, here, as the modes
are (by the job and the API, through dispatch.py)."""
from emc.runtime.modes import ibm1  # noqa: F401  registers --init ibm1 for the aligners
