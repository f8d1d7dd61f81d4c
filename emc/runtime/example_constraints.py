"""Per-example constraints on the posterior (posterior regularization, Ganchev et al. 2010): with
`constraint NAME : E[count per a.source] <= 1` each example's posterior is projected on its own
onto the set where, at every position of the attribute's tokens, the expected number of parts is
within the bound (alignment bijectivity: each source word linked to about one target word).

The projection runs inside the generated E-step (emc/codegen/templates/alignment.py.j2): a few
projected-gradient steps on the example's duals lambda (one per position), each an E-step with
the part scores shifted by exp(-lambda_i). This module owns the duals between E-steps: every
E-step receives them after prepare's numbers in `derived` (the warm start) and leaves its
solution there, so the next E-step starts from it; a fit keeps them in its state (a checkpoint
holds them, and `emc fit --resume` continues exactly). On a Dask cluster each shard's E-step
receives its examples' part of that vector and sends it back solved (shard_derived, shard_collect);
with a symmetry constraint, its pairs' link shifts.
It also gathers what the projections did for the fit's log. The E-step's log Z becomes the dual
objective f(lambda) = log p(x) - KL(q || p), the objective PR-EM never lowers.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.duals import restored_duals

HEAD = 5  # most E-steps, tolerance, where the statistics start, bound, sign (the glue's PROJECTION_HEAD)
STATS = 5  # per example: excess before, after, E-steps, sum of lambda, KL (PROJECTION_STATS)
TOLERANCE = 0.01  # a bound is met to within this many expected parts
STATE_KEY = "example_duals"  # the duals in a fit's state.extra


class ExampleProjection:
    """The duals of a problem's per-example constraint, and the derived vector that carries them.

    With a symmetry constraint (`E[a] agree`, emc/runtime/symmetry.py) the vector also carries
    each link's score shift, `link_shifts` (per-pair offsets and the shifts), which the symmetry's
    solver sets before each E-step; it solves bijectivity's duals itself (`inside` False), so the
    glue then leaves the per-example projection out."""

    def __init__(self, problem, max_esteps: int = 20, tolerance: float = TOLERANCE):
        checked = problem.model.checked
        self.constraint = checked.example_constraints[0] if checked.example_constraints else None
        self.symmetric = checked.symmetric is not None
        self.inside = self.constraint is not None
        self.link_shifts: tuple[np.ndarray, np.ndarray] | None = None
        self._carrier: np.ndarray | None = None  # derived's vector with the link shifts, kept (_carried)
        self.offsets = (problem.model.module.dual_offsets(problem.ints, problem.array_bounds)
                        if self.constraint is not None else np.zeros(problem.n_examples + 1, np.int64))
        self.duals = np.zeros(int(self.offsets[-1]))
        self.n_examples = len(self.offsets) - 1
        self.max_esteps = max_esteps
        self.tolerance = tolerance
        self.last: dict = {}

    def derived(self, prepared: np.ndarray) -> np.ndarray:
        """prepare's numbers followed by the link shifts (with a symmetry constraint) and the
        projection's numbers: settings, the duals, room for statistics."""
        if not self.inside and self.link_shifts is not None:
            return self._carried(prepared)
        parts = [prepared]
        if self.symmetric:
            offsets, shifts = self.link_shifts if self.link_shifts is not None else (np.zeros(1), np.zeros(0))
            parts += [np.array([len(offsets) - 1], np.float64), offsets.astype(np.float64), shifts]
        if not self.inside:
            return np.concatenate(parts)
        stats_at = sum(len(p) for p in parts) + HEAD + len(self.duals)
        c = self.constraint
        head = np.array([self.max_esteps, self.tolerance, stats_at, c.bound, c.sign], np.float64)
        return np.concatenate([*parts, head, self.duals, np.zeros(STATS * self.n_examples)])

    def _carried(self, prepared: np.ndarray) -> np.ndarray:
        """prepare's numbers, the pair count, offsets and link shifts in one vector kept from call
        to call, link_shifts' shifts becoming its view: the shifts' writer (emc/runtime/symmetry.py)
        writes into it, and each E-step or posterior pass copies prepare's few numbers rather than
        every pair's shifts (13 MB a direction on the Hansards bench)."""
        offsets, shifts = self.link_shifts
        size = len(prepared) + len(offsets) + 1 + len(shifts)
        if self._carrier is None or shifts.base is not self._carrier or len(self._carrier) != size:
            self._carrier = np.concatenate([prepared, [len(offsets) - 1], offsets.astype(np.float64), shifts])
            self.link_shifts = (offsets, self._carrier[size - len(shifts):])
        else:
            self._carrier[:len(prepared)] = prepared
        return self._carrier

    def collect(self, derived: np.ndarray, examples: np.ndarray, weights: np.ndarray) -> None:
        """The E-step's duals (the next one's warm start) and what its projections did."""
        if not self.inside:
            return
        start = len(derived) - STATS * self.n_examples - len(self.duals)
        self.duals = derived[start:start + len(self.duals)].copy()
        stats = derived[start + len(self.duals):].reshape(self.n_examples, STATS)[examples]
        positions = float(np.sum(np.diff(self.offsets)[examples]))
        c = self.constraint
        self.last = {"example_constraints": [{
            "name": c.name, "bound": f"{c.op} {c.bound:g} per {c.attr.text}",
            "before": float(stats[:, 0].sum()) / max(positions, 1.0),
            "after": float(stats[:, 1].sum()) / max(positions, 1.0),
            "lambda": float(stats[:, 3].sum()) / max(positions, 1.0),
            "dual": float(weights @ stats[:, 4]),
            "esteps": float(stats[:, 2].mean()) if len(stats) else 0.0}]}

    # a Dask worker's shard (emc/dist/executor.py): its examples packed on their own, numbered from 0
    def _head_at(self, whole: np.ndarray) -> int:
        """Where the projection's head starts in the whole corpus's derived vector."""
        return len(whole) - STATS * self.n_examples - len(self.duals) - HEAD

    def shard_derived(self, whole: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """The derived vector of examples lo:hi cut from the whole corpus's: prepare's numbers, the
        head (its statistics start after the shard's duals), their duals and their statistics; with
        the symmetry's link shifts instead (the symmetric fit solves bijectivity's duals itself), those
        of pairs lo:hi."""
        if not self.inside:
            return self._shard_shifts(whole, lo, hi)
        at = self._head_at(whole) + HEAD
        duals = whole[at + self.offsets[lo]:at + self.offsets[hi]]
        head = whole[at - HEAD:at].copy()
        head[2] = at + len(duals)
        stats_at = at + len(self.duals)
        return np.concatenate([whole[:at - HEAD], head, duals, whole[stats_at + STATS * lo:stats_at + STATS * hi]])

    def _shard_shifts(self, whole: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """prepare's numbers, then [pairs, offsets, shifts] of pairs lo:hi, offsets from the first's."""
        if self.link_shifts is None:  # derived() wrote no pairs: the glue shifts nothing
            return whole
        offsets, shifts = self.link_shifts
        prepared = len(whole) - 1 - len(offsets) - len(shifts)
        own = offsets[lo:hi + 1]
        return np.concatenate([whole[:prepared], [hi - lo], own - own[0], shifts[own[0]:own[-1]]])

    def shard_collect(self, whole: np.ndarray, part: np.ndarray, lo: int, hi: int) -> None:
        """A shard's solved duals and statistics back into the whole corpus's derived vector, which
        `collect` then reads as it reads a local E-step's (nothing to bring back of link shifts)."""
        if not self.inside:
            return
        at = self._head_at(whole) + HEAD
        n = int(self.offsets[hi] - self.offsets[lo])
        whole[at + self.offsets[lo]:at + self.offsets[hi]] = part[at:at + n]
        stats_at = at + len(self.duals)
        whole[stats_at + STATS * lo:stats_at + STATS * hi] = part[at + n:]

    def keep(self, extra: dict) -> None:
        """The duals into a fit's state (a checkpoint saves them)."""
        extra[STATE_KEY] = self.duals

    def resume(self, extra: dict) -> None:
        """The duals of a fit's state, when it has them (a resumed fit)."""
        self.duals = restored_duals(extra, STATE_KEY, self.duals, self.constraint.name, "positions")


def attach(executor, problem, settings) -> ExampleProjection | None:
    """Set the executor to project each E-step's posteriors onto the spec's per-example
    constraint (none without one, or with --constraints off); the projection, or None."""
    checked = problem.model.checked
    constraints = [*checked.example_constraints, *([checked.symmetric] if checked.symmetric else [])]
    if not constraints or settings.constraints == "off":
        return None
    executor.example_projection = ExampleProjection(problem, settings.constraint_esteps)
    return executor.example_projection


def example_projection_text(record: dict) -> str:
    """One iteration's per-example projection in a few words ('' without one)."""
    if "example_constraints" not in record:
        return ""
    return "  ".join(f"{c['name']} {c.get('measure', 'excess')} {c['before']:.3f}->{c['after']:.3f} per "
                     f"{c.get('per', 'position')} (lambda {c['lambda']:.3g}, "
                     f"KL {c['dual']:.6g}, {c['esteps']:.1f} E-steps a pair)" for c in record["example_constraints"])


def attach_saved(executor, problem, saved) -> ExampleProjection | None:
    """attach for decoding with a saved run: its posteriors and best structures are projected as
    its fit projected them (not when it was fitted with --constraints off)."""
    from emc.runtime.settings import FitSettings

    fitted = saved.info.get("settings", {})
    settings = FitSettings(constraints=fitted.get("constraints", "on"),
                           constraint_esteps=fitted.get("constraint_esteps", 20))
    return attach(executor, problem, settings)
