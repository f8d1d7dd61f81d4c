"""How `emc fit` and `emc decode` run alignment models (chosen by emc/runtime/modes/dispatch.py).

Fitting trains both directions by default: RUN holds source->target, RUN/reverse the same spec
trained target->source (the bitext read swapped), each an ordinary saved run. `--agree` trains
them jointly instead (agreement.py); `--forward-only` trains RUN alone.

Decoding prints Pharaoh links in the bitext's orientation (i on the source side, j on the target
side, 0-based):
    (default)                    the forward model's Viterbi links; an --agree run's agreed links;
                                 under a symmetry constraint (`E[a] agree`), the links whose mean
                                 projected posterior is at least 0.5
    --threshold T                posterior decoding: links with posterior >= T (for an --agree
                                 run, the product of both directions' posteriors)
    --direction reverse          the reverse model's links instead
    --symmetrize HEURISTIC       both directions' links combined (symmetrize.py)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from emc.eval.alignment import alignment_scores
from emc.io.bitext import pharaoh, swap_links
from emc.runtime.decode import bind_saved, in_input_order
from emc.runtime.example_constraints import attach_saved
from emc.runtime.executor import LocalExecutor
from emc.runtime.state import check_log_z
from emc.runtime.model_dir import SavedRun, load_run
from emc.spec.errors import EmcError
from emc.structures.alignment import REVERSE
from emc.structures.alignment.symmetrize import symmetrize


def fit_mode(options: dict[str, Any]) -> Callable | None:
    if options.get("agree"):
        # imported where used: its compiled loop loads at import, which every emc command paid
        from emc.runtime.modes import agreement

        return agreement.fit_jointly
    if options.get("forward_only") or options.get("reverse"):
        return None
    return fit_both_directions


def fit_both_directions(job) -> int:
    if job.job.checked.symmetric is not None and job.settings.constraints != "off":
        from emc.runtime.modes import agreement, symmetric

        symmetric.use_default_schedule(job)
        return agreement.fit_jointly(job, symmetric.Symmetric)  # trained together, their posteriors agreeing
    job.run()
    job.say("emc: the reverse direction (target -> source)")
    job.run({**job.options, "reverse": True}, job.out / REVERSE if job.out else None)
    return 0


def decode_mode(saved: SavedRun, options: dict[str, Any], posteriors: bool) -> Callable | None:
    trained = saved.info["options"]
    if posteriors and _symmetric(saved) and not options.get("direction") and not options.get("symmetrize"):
        return decode_symmetric_posteriors
    if posteriors:
        # The ordinary path prints the saved model's own posteriors: a RUN/reverse folder's come out
        # in the reverse model's orientation, which is what decoding that folder asks for.
        if options.get("direction") or options.get("symmetrize"):
            if trained.get("reverse"):
                raise EmcError("--posteriors prints this reverse model's link posteriors, in its own orientation; "
                               "decode it without --direction/--symmetrize")
            raise EmcError("--posteriors prints the forward model's link posteriors; decode RUN without "
                           "--direction/--symmetrize (or RUN/reverse for the other direction's, in its own orientation)")
        return None
    if trained.get("agree") or _symmetric(saved) or trained.get("reverse") or options.get("symmetrize") \
            or options.get("threshold") is not None or options.get("direction") == REVERSE:
        return decode_links
    return None


class _Direction:
    """A saved model bound to the data to decode, with its links in the bitext's orientation."""

    def __init__(self, saved: SavedRun, path: str | None, options: dict[str, Any]):
        self.problem, self.params = bind_saved(saved, path, options)
        self.reverse = bool(saved.info["options"].get("reverse"))
        self.executor = LocalExecutor(self.problem)
        attach_saved(self.executor, self.problem, saved)  # posteriors projected as the fit projected them
        self.examples = np.arange(self.problem.n_examples)

    def viterbi(self) -> list[set[tuple[int, int]]]:
        from emc.structures.alignment.data import decoded_links  # data.py imports this module

        decoded, scores = self.executor.decode(self.params, self.examples)
        check_log_z(self.problem, self.examples, scores)
        return [self._oriented(decoded_links(d)) for d in decoded]

    def posteriors(self) -> list[np.ndarray]:
        from emc.runtime.modes import agreement

        return agreement.Direction(self.problem, self.executor).posteriors(self.params, self.examples)[0]

    def thresholded(self, threshold: float) -> list[set[tuple[int, int]]]:
        null = int(self.problem.args["null"])
        out = []
        for p in self.posteriors():
            j, i = np.nonzero(p[:, :p.shape[1] - null] >= threshold)
            out.append(self._oriented(zip(i.tolist(), j.tolist())))
        return out

    def _oriented(self, links) -> set[tuple[int, int]]:
        return {(j, i) for i, j in links} if self.reverse else set(links)


def _symmetric(saved: SavedRun) -> bool:
    """Whether the run's two directions were trained together under a symmetry constraint."""
    fitted = saved.info.get("settings", {}).get("constraints", "on")
    return saved.model.checked.symmetric is not None and fitted != "off" and not saved.info["options"].get("reverse")


def _symmetric_posteriors(saved: SavedRun, path: str | None, options: dict[str, Any]):
    """Both directions (forward, reverse) and their link posteriors, each pair projected to agree
    as the fit projected them."""
    from emc.runtime.modes import symmetric
    from emc.runtime.symmetry import SymmetricProjection

    directions = [_Direction(saved, path, options), _Direction(_reverse_run(saved), path, options)]
    esteps = saved.info.get("settings", {}).get("constraint_esteps", 20)
    return directions, symmetric.projected_posteriors(SymmetricProjection(*directions, max_esteps=esteps),
                                                      directions, [d.params for d in directions])


def _symmetric_links(saved: SavedRun, path: str | None, options: dict[str, Any], threshold: float | None):
    """The forward direction and the links whose mean projected posterior is at least the threshold."""
    from emc.runtime.modes import symmetric

    directions, post = _symmetric_posteriors(saved, path, options)
    level = symmetric.THRESHOLD if threshold is None else threshold
    null = int(directions[0].problem.args["null"])
    return directions[0], [symmetric.symmetric_links(f, r, null, level) for f, r in zip(*post)]


def decode_symmetric_posteriors(saved: SavedRun, path: str | None, options: dict[str, Any]):
    """`emc decode RUN --posteriors` of a symmetric run: the forward direction's projected link
    posteriors (`i-j:p`, as a model's --posteriors prints them)."""
    directions, post = _symmetric_posteriors(saved, path, options)
    p = directions[0].problem
    lines = [saved.model.data.format_posterior(p.corpus, saved.model.checked, q, post[0][q].ravel(), p.labels, p.args)
             for q in range(p.n_examples)]
    return in_input_order(p, lines), {}


def _reverse_run(saved: SavedRun) -> SavedRun:
    path = Path(saved.path) / REVERSE
    if not (path / "run.json").exists():
        raise EmcError(f"{saved.path} holds one direction only (fit without --forward-only to train both)")
    return load_run(path)


def decode_links(saved: SavedRun, path: str | None, options: dict[str, Any]) -> tuple[list[str], dict[str, float]]:
    """(the Pharaoh links of each pair in input order, their scores against the gold links when
    the data has some)."""
    threshold = options.get("threshold")
    heuristic = options.get("symmetrize")
    if _symmetric(saved) and not heuristic and options.get("direction") is None:
        forward, links = _symmetric_links(saved, path, options, threshold)
    elif saved.info["options"].get("agree") and not heuristic and options.get("direction") is None:
        forward, reverse = _Direction(saved, path, options), _Direction(_reverse_run(saved), path, options)
        f_null = int(forward.problem.args["null"])
        from emc.runtime.modes import agreement

        level = agreement.THRESHOLD if threshold is None else threshold
        links = [agreement.agreed_links(agreement.product_posteriors(f, r, f_null), level)
                 for f, r in zip(forward.posteriors(), reverse.posteriors())]
    elif heuristic:
        forward = _Direction(saved, path, options)
        reverse = _Direction(_reverse_run(saved), path, options)
        one, two = (d.viterbi() if threshold is None else d.thresholded(threshold) for d in (forward, reverse))
        links = [symmetrize(a, b, heuristic) for a, b in zip(one, two)]
    else:
        chosen = _reverse_run(saved) if options.get("direction") == REVERSE else saved
        forward = _Direction(chosen, path, options)  # the one direction (the reverse, with --direction)
        links = forward.viterbi() if threshold is None else forward.thresholded(threshold)
    gold = forward.problem.corpus.gold.get("links")
    metrics: dict[str, float] = {}
    if gold is not None:
        if forward.reverse:  # read swapped: its gold is in the model's orientation
            gold = [(swap_links(sure), swap_links(possible)) for sure, possible in gold]
        metrics = alignment_scores(links, gold)
    return in_input_order(forward.problem, [pharaoh(pair) for pair in links]), metrics
