"""The symmetry constraint (`constraint NAME : E[a] agree`; Ganchev, Graca & Taskar 2008, Graca,
Ganchev & Taskar 2010): an alignment's two directions trained together, each pair's posterior
q(a_f, a_r) over both directions' alignments projected (in KL) onto those with E_q[link_f(i, j)] =
E_q[link_r(i, j)] for every link. The projection factorises: q_f ~ p_f exp(-lambda . links) and q_r
~ p_r exp(+lambda . links), with one unbounded dual lambda_ij a link, minimising
f(lambda) = log Z_f(lambda) + log Z_r(-lambda), whose gradient is E_qr[link] - E_qf[link]. With
bijectivity in the spec (`E[count per a.source] <= 1`), each direction's position duals mu join
lambda in the same problem (bijectivity of each direction, the paper's best setting).

Every evaluation of f is one E-step of each direction over the pairs still moving, with each
link's score shifted (the generated glue reads the shifts from `derived`:
emc/runtime/example_constraints.py). With both directions on this machine, an evaluation (and a
step's trial point and step terms) is one compiled parallel pass over the pairs
(emc/structures/alignment/symmetry.py: evaluate_pairs), each pair's posteriors kept only while
its gradient is taken; on a Dask cluster, the directions' posterior passes on the workers and the
rest here. The steps are projected gradient steps, each pair with its own Barzilai-Borwein
length and Armijo's test (emc/structures/alignment/projection.py's rule, pair by pair),
warm-started from the pair's duals of the previous EM iteration when those score better than
zero; the fit keeps the duals in its state, so checkpoints hold them.
"""
from __future__ import annotations

import numba
import numpy as np

from emc.runtime.duals import restored_duals
from emc.structures.alignment import symmetry
from emc.structures.alignment.projection import ARMIJO, SHRINK

STATE_KEY = "symmetric_duals"  # the duals in a fit's state.extra
TOLERANCE = 0.01  # the directions agree on each link's posterior to within this


class SymmetricProjection:
    """The duals of every pair, and the projection of both directions' posteriors onto agreement."""

    def __init__(self, forward, reverse, max_esteps: int = 20, tolerance: float = TOLERANCE):
        """forward, reverse: the two directions (emc.runtime.modes.agreement.Direction), each
        executor with its ExampleProjection attached (the carrier of the link shifts)."""
        self.directions = (forward, reverse)
        checked = forward.problem.model.checked
        self.name = checked.symmetric.name
        bounds = checked.example_constraints
        self.bijective = bounds[0] if bounds else None
        p = forward.problem
        self.lengths = np.ascontiguousarray(p.model.module.pair_lengths(p.ints, p.array_bounds), np.int64)
        links = self.lengths[:, 0] * self.lengths[:, 1]
        sizes = links + (self.lengths.sum(axis=1) if self.bijective else 0)
        self.x_at = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.shift_at = np.concatenate([[0], np.cumsum(links)]).astype(np.int64)
        self.x = np.zeros(int(self.x_at[-1]))
        for d in self.directions:
            d.executor.example_projection.inside = False  # bijectivity's duals are solved here
        # both directions on this machine: each evaluation is one compiled pass over the pairs
        self.here = all(d.executor.in_process for d in self.directions)
        self.max_esteps = max_esteps
        self.tolerance = tolerance
        self.nulls = tuple(int(d.problem.args["null"]) for d in self.directions)
        self.last: dict = {}

    @property
    def n_examples(self) -> int:
        return len(self.lengths)

    def resume(self, extra: dict) -> None:
        """The duals of a fit's state, when it has them (a resumed fit)."""
        self.x = restored_duals(extra, STATE_KEY, self.x, self.name, "duals")

    def keep(self, extra: dict) -> None:
        extra[STATE_KEY] = self.x

    def project(self, params: list) -> np.ndarray:
        """Minimise f over every pair's duals (at most max_esteps evaluations, each one E-step of each
        direction over the pairs still moving); leaves the solution in self.x and the link shifts set
        to it. Returns each pair's f at the solution (log p(x) - KL of both directions)."""
        n = self.n_examples
        every = np.arange(n, dtype=np.int64)
        self._carry_shifts()
        x, f, grad = np.zeros_like(self.x), np.empty(n), np.empty_like(self.x)
        before = self._evaluate(params, every, x, f, grad)
        gap, over = before[0].copy(), before[1].copy()  # at each pair's current x
        start, esteps, used = f.copy(), np.ones(n), 1
        trial, trial_f, trial_grad = x.copy(), np.empty(n), np.empty_like(self.x)
        warm = np.flatnonzero(symmetry.has_duals(self.x, self.x_at))
        if len(warm):  # the previous iteration's duals, where they score better than zero
            trial_gap, trial_over = self._evaluate(params, warm, self.x, trial_f, trial_grad)
            esteps[warm] += 1
            used += 1
            self._accept(warm[trial_f[warm] < f[warm]], (self.x, trial_grad, trial_f, trial_gap, trial_over),
                         (x, grad, f, gap, over))
        active = every[~symmetry.converged(grad, x, self.x_at, self.lengths, every, self.tolerance)]
        length = np.ones(n)
        while len(active) and used < self.max_esteps:
            moved, trial_gap, trial_over, terms = self._step(params, active, (x, grad, length), trial, trial_f,
                                                             trial_grad)
            if not moved.any():
                break
            active, (dots, curved, squared) = active[moved], (t[moved] for t in terms)
            esteps[active] += 1
            used += 1
            accepted = trial_f[active] <= f[active] + ARMIJO * dots
            good, bad = active[accepted], active[~accepted]
            # Barzilai-Borwein: |s|^2 / s.y with s the step and y the change of the gradient
            curved, squared = curved[accepted], squared[accepted]
            length[good] = np.where(curved > 0.0, squared / np.where(curved > 0.0, curved, 1.0), length[good])
            length[bad] *= SHRINK
            self._accept(good, (trial, trial_grad, trial_f, trial_gap, trial_over), (x, grad, f, gap, over))
            done = symmetry.converged(grad, x, self.x_at, self.lengths, good, self.tolerance)
            active = np.sort(np.concatenate([good[~done], bad]))
        self.x = x
        self._shift(every, x)  # the link shifts of the solution, for the E-step or decoding that follows
        self._record(before, (gap, over), start - f, esteps)
        return f

    def _carry_shifts(self) -> None:
        """Both directions' E-steps read link shifts from the first projection on: before it
        (IBM 1's start) they are all zero, and the glue multiplies no score by exp(0)."""
        for d in self.directions:
            if d.executor.example_projection.link_shifts is None:
                d.executor.example_projection.link_shifts = (self.shift_at, np.zeros(int(self.shift_at[-1])))

    def _accept(self, pairs: np.ndarray, source: tuple, target: tuple) -> None:
        """The pairs' (x, gradient, f, disagreement, excess) of source into target."""
        for a, b in zip(source[:2], target[:2]):
            symmetry.take(a, b, self.x_at, pairs)
        for a, b in zip(source[2:], target[2:]):
            b[pairs] = a[pairs]

    def _shift(self, pairs: np.ndarray, x: np.ndarray) -> None:
        sign = self.bijective.sign if self.bijective is not None else 1.0
        symmetry.write_shifts(x, self.x_at, self.shift_at, self.lengths, pairs, self.bijective is not None, sign,
                              *(d.executor.example_projection.link_shifts[1] for d in self.directions))

    def _evaluate(self, params: list, pairs: np.ndarray, x: np.ndarray, f: np.ndarray, grad: np.ndarray) -> tuple:
        """f and the gradient at x of the pairs (into f[pairs] and their slices of grad); the
        disagreement and excess of each pair (all pairs' arrays, these pairs' entries set); the
        link shifts of the pairs set to x."""
        gap, over = np.zeros(self.n_examples), np.zeros(self.n_examples)
        if self.here:
            nothing = np.zeros(0)
            self._compiled(params, pairs, False, (nothing, nothing, nothing), x, (f, grad, gap, over),
                           (np.zeros(0, np.bool_), nothing, nothing, nothing))
            return gap, over
        bijective, sign, bound = self._constraint()[2:]
        self._shift(pairs, x)
        flat, at, log_z = [], [], np.zeros(len(pairs))
        for d, p in zip(self.directions, params):
            posteriors, z = d.executor.posterior(p, pairs)
            sizes = [len(a) for a in posteriors]
            flat.append(np.concatenate(posteriors) if posteriors else np.zeros(0))
            at.append(np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64))
            log_z += z
        if bijective:
            log_z += sign * bound * symmetry.mu_sums(x, self.x_at, self.lengths, pairs)
        f[pairs] = log_z
        symmetry.gradients(flat[0], at[0], flat[1], at[1], pairs, self.x_at, self.lengths, *self.nulls, bijective,
                           sign, bound, grad, gap, over)
        return gap, over

    def _step(self, params: list, pairs: np.ndarray, current: tuple, trial: np.ndarray, trial_f: np.ndarray,
              trial_grad: np.ndarray) -> tuple:
        """The projected gradient step of each pair from current (x, gradient, step length) into
        trial, and where it moved, f and the gradient there (into trial_f, trial_grad); whether each
        pair moved, the disagreement and excess (as _evaluate's), and per pair (entries of those that
        moved) Armijo's dot and Barzilai-Borwein's s.y and |s|^2 (symmetry.step_terms)."""
        x, grad, length = current
        if self.here:
            gap, over = np.zeros(self.n_examples), np.zeros(self.n_examples)
            steps = (np.zeros(len(pairs), np.bool_), *(np.zeros(len(pairs)) for _ in range(3)))
            self._compiled(params, pairs, True, current, trial, (trial_f, trial_grad, gap, over), steps)
            return steps[0], gap, over, steps[1:]
        moved = symmetry.trial_points(x, grad, length, self.x_at, self.lengths, pairs, trial)
        terms = tuple(np.zeros(len(pairs)) for _ in range(3))
        if not moved.any():
            return moved, None, None, terms
        gap, over = self._evaluate(params, pairs[moved], trial, trial_f, trial_grad)
        for t, part in zip(terms, symmetry.step_terms(x, trial, grad, trial_grad, self.x_at, pairs[moved])):
            t[moved] = part
        return moved, gap, over, terms

    def _compiled(self, params: list, pairs: np.ndarray, stepping: bool, current: tuple, point: np.ndarray,
                  out: tuple, steps: tuple) -> None:
        """symmetry.evaluate_pairs over both directions on this machine; current: (x, its gradient,
        the step lengths), out: (f, the gradient at point, disagreement, excess), steps: (moved,
        Armijo's dot, s.y, |s|^2)."""
        threads = self.directions[0].executor.threads
        numba.set_num_threads(threads)
        # the loop cuts its pairs into one contiguous run a thread: dealt out in turn, each run is
        # a sample of the whole (the Hansards' second half costs 10% more than its first)
        dealt = np.concatenate([np.arange(t, len(pairs), threads) for t in range(threads)])
        own = tuple(np.empty_like(a) for a in steps)
        symmetry.evaluate_pairs()(*(a for d, p in zip(self.directions, params) for a in self._data(d, p)),
                                  pairs[dealt], self.x_at, self.shift_at, self.lengths, *self._constraint(), stepping,
                                  *current, point, *out, *own)
        if stepping:
            for a, b in zip(steps, own):
                a[dealt] = b

    def _constraint(self) -> tuple:
        """(NULL in the forward direction, in the reverse one, bijective, its sign, its bound)."""
        bijective = self.bijective is not None
        sign, bound = (self.bijective.sign, self.bijective.bound) if bijective else (1.0, 0.0)
        return (*self.nulls, bijective, float(sign), float(bound))

    def _data(self, direction, params) -> tuple:
        """What the compiled evaluation reads of a direction: its posterior pass (the glue's
        posterior_shifted), data, parameters, derived vector (prepare's numbers and the link
        shifts, which the evaluation writes into) and where the shifts start in it."""
        p = direction.problem
        derived = direction.executor.prepare(params)
        return (p.model.module.posterior_shifted, p.ints, p.array_bounds, p.meta, params.abi(), derived,
                len(derived) - int(self.shift_at[-1]))

    def _record(self, before: tuple, after: tuple, kl: np.ndarray, esteps: np.ndarray) -> None:
        """What the projection did, for the iteration's record (as ExampleProjection.last)."""
        links = max(float(np.sum(self.lengths[:, 0] * self.lengths[:, 1])), 1.0)
        link_duals = np.concatenate([self.x[a:a + l * m] for a, (l, m) in zip(self.x_at[:-1], self.lengths)]) \
            if len(self.x) else np.zeros(0)
        rows = [{"name": self.name, "bound": "both directions agree", "measure": "disagreement", "per": "link",
                 "before": float(before[0].sum()) / links, "after": float(after[0].sum()) / links,
                 "lambda": float(np.abs(link_duals).mean()) if len(link_duals) else 0.0,
                 "dual": float(kl.sum()), "esteps": float(esteps.mean()) if len(esteps) else 0.0}]
        if self.bijective is not None:
            c = self.bijective
            positions = max(float(self.lengths.sum()), 1.0)
            rows.append({"name": c.name, "bound": f"{c.op} {c.bound:g} per {c.attr.text}, both directions",
                         "before": float(before[1].sum()) / positions, "after": float(after[1].sum()) / positions,
                         "lambda": float(symmetry.mu_sums(self.x, self.x_at, self.lengths,
                                                          np.arange(self.n_examples)).sum()) / positions,
                         "dual": float(kl.sum()),
                         "esteps": float(esteps.mean()) if len(esteps) else 0.0})
        self.last = {"example_constraints": rows}
