"""Which way `emc fit` and `emc decode` run for a structure: its own mode (emc/runtime/modes/)
when it has one for these options, else the ordinary fit and decode."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from emc.spec.errors import EmcError
from emc.io.readers import Lines
from emc.runtime import decode as ordinary
from emc.runtime.model_dir import SavedRun
from emc.runtime.modes import alignment

# structure name -> function of the options returning the fit to run (a function of the Runner) or None
FIT_MODES: dict[str, Callable[[dict[str, Any]], Callable | None]] = {"alignment": alignment.fit_mode}
# structure name -> function of (saved run, options, posteriors) returning a decoder or None
DECODE_MODES: dict[str, Callable[[SavedRun, dict[str, Any], bool], Callable | None]] = {
    "alignment": alignment.decode_mode}


def fit_mode(structure: str, options: dict[str, Any]) -> Callable | None:
    """The structure's own fit for these options, or None for the ordinary one."""
    choose = FIT_MODES.get(structure)
    return choose(options) if choose else None


def decode(saved: SavedRun, data: str | Path | Lines | None, options: dict[str, Any],
           posteriors: bool = False, samples: int | None = None, seed: int = 1) -> ordinary.Decoded:
    """Decode with a saved run: the structure's own decoder for these options, else the ordinary one;
    with `samples` N, N structures drawn from each example's posterior."""
    choose = DECODE_MODES.get(saved.model.checked.structure.name)
    runner = choose(saved, options, posteriors) if choose else None
    if samples is not None:
        if posteriors:
            raise EmcError("emc decode: give --sample or --posteriors, not both")
        if runner is not None:
            raise EmcError("emc decode --sample draws from one model's posterior, but this run decodes its own way "
                           "(two alignment directions, symmetrised or thresholded links): decode RUN without "
                           "--direction/--symmetrize/--threshold (a run fitted with --agree cannot be sampled)")
        return ordinary.sample(saved, data, options, samples, seed)
    if runner is None:
        return ordinary.decode(saved, data, options, posteriors)
    lines, metrics = runner(saved, data, options)
    return ordinary.Decoded(list(lines), dict(metrics))
