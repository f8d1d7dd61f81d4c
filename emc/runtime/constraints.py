"""Posterior regularization (Ganchev, Graca, Gillenwater & Taskar, JMLR 2010): each E-step's
posterior q is replaced by its KL projection onto the spec's constraints before the M-step.

A constraint `constraint NAME : E[d.head, d.dependent in "FILE"] >= b` bounds the expected share
of a slot's parts whose values are a line of FILE. With ind(e) = 1 for the listed value
combinations, it is the linear constraint E_q[sum over parts of psi] <= 0 with psi = b - ind
(`<= b`: psi = ind - b), so it needs no count of parts. The checker compiles it like a fixed
block: a table over the attributes' values (emc.spec.model.Factor, kind "constraint") that every
part of the slot multiplies into its score, and whose expected counts the generated code collects
like a learned table's (the M-step never normalises it). Holding exp(-lambda * psi) in that table,
an ordinary E-step computes the projected posterior q_lambda(z) ~ p(z | x) exp(-lambda psi(z)) and,
in the table's counts, E_q[psi] entry by entry: for every structure, built-in or written as rules.

The projection is the dual problem: minimise G(lambda) = sum_x w_x log Z_lambda(x) over lambda >= 0
(convex; its gradient is -E_q[psi], one per constraint; the dual objective, the KL of the
projection, is G(0) - G(lambda) and only grows). It is solved by projected gradient steps with
Barzilai-Borwein lengths and Armijo's test, every evaluation one E-step, warm-started from the
previous iteration's lambda; G(lambda) plus the log prior is the objective PR-EM never lowers
(log p(x) - KL(q || p(z | x))). A constraint that holds under p needs no step: lambda stays 0, its
table stays 1 and EM is bit for bit what it is without the constraint.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from emc.io.readers import read_lines
from emc.runtime.params import ParamState, TableLayout
from emc.spec.errors import DataError
from emc.spec.model import Factor

if TYPE_CHECKING:
    from emc.runtime.executor import EStepResult

ARMIJO = 1e-4  # the share of the linear decrease a step must achieve
SHRINK = 0.25  # a refused step is this much shorter at the next try
# lambda * max |psi| stays below this: a constraint no structure can meet (its dual unbounded) then
# shifts part scores by at most e^50 instead of overflowing
MAX_SHIFT = 50.0


@dataclass
class CorpusConstraint:
    """One constraint over the whole corpus: its table, and psi and ind of each of its entries."""

    factor: Factor
    table: TableLayout
    listed: np.ndarray  # ind(e): 1.0 where the value combination is listed
    psi: np.ndarray

    @property
    def name(self) -> str:
        return self.factor.name

    def expectation(self, counts: np.ndarray) -> float:
        """E_q[sum of psi over the parts] from an E-step's counts."""
        return float(counts[self.table.entries] @ self.psi)

    def share(self, counts: np.ndarray) -> float:
        """The expected share of the slot's parts whose values are listed."""
        c = counts[self.table.entries]
        total = float(c.sum())
        return float(c @ self.listed) / total if total > 0 else float("nan")

    def parts(self, counts: np.ndarray) -> float:
        return float(counts[self.table.entries].sum())


def read_listed(problem, factor: Factor) -> np.ndarray:
    """ind(e) of a constraint's table from its file: one value combination per line, the values in
    the order the constraint writes its attributes, separated by whitespace; `#` starts a comment
    line. A word the data never uses is skipped (no part can have it); a value of a numeric or
    latent attribute is its index (0, 1, ...)."""
    table = problem.layout.table(factor.table)
    sizes = [problem.sizes[s] for s in factor.outcome_spaces]
    listed = np.zeros(table.size)
    path, entries = factor.bound.path, 0
    for number, line in read_lines(path):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != len(sizes):
            raise DataError(path, number, f"constraint '{factor.name}' lists {len(sizes)} value(s) a line "
                                          f"({', '.join(a.text for a in factor.outcome)}), this line has {len(fields)}")
        entries += 1
        index = 0
        for value, space, size, attr in zip(fields, factor.outcome_spaces, sizes, factor.outcome):
            code = _value_code(path, number, value, problem.vocabs.get(space), size, attr.text)
            if code is None:
                break
            index = index * size + code
        else:
            listed[index] = 1.0
    if entries == 0:
        raise DataError(path, None, f"the file of constraint '{factor.name}' lists no values")
    return listed


def _value_code(path: str, number: int, value: str, vocab, size: int, attr: str) -> int | None:
    if vocab is not None:
        code = vocab.index.get(value)
        return code if code is not None and 0 < code < size else None
    if not value.isdigit() or int(value) >= size:
        raise DataError(path, number, f"'{value}' is not a value of {attr} (0 to {size - 1})")
    return int(value)


class Projection:
    """The projection of every E-step onto the spec's corpus-level constraints (see the module's
    docstring); `last` holds what the latest one did, for the fit's log."""

    def __init__(self, problem, max_esteps: int = 20, tolerance: float = 1e-3):
        self.constraints = []
        for factor in problem.model.checked.factors:
            if factor.kind != "constraint":
                continue
            listed = read_listed(problem, factor)
            b = factor.bound.value
            psi = b - listed if factor.bound.op == ">=" else listed - b
            self.constraints.append(CorpusConstraint(factor, problem.layout.table(factor.table), listed, psi))
        self.lam = np.zeros(len(self.constraints))
        self.lam_max = np.array([MAX_SHIFT / max(float(np.abs(c.psi).max(initial=0.0)), 1e-300)
                                 for c in self.constraints])
        self.max_esteps = max_esteps
        self.tolerance = tolerance
        self.last: dict = {}
        self.duals: list[float] = []  # the dual objective at each accepted lambda of the latest projection

    def _set(self, params: ParamState, lam: np.ndarray) -> None:
        """The tables hold exp(-lambda psi), their rows' totals 1: the online variants' lazy form then
        reads them as those values too, theta * scale / (row_total * scale) (they add nothing to a
        constraint's table; their rescaling multiplies its theta and totals alike)."""
        for c, value in zip(self.constraints, lam):
            params.theta[c.table.entries] = np.exp(-value * c.psi) if value > 0 else 1.0
            params.row_total[c.table.row_slice] = 1.0

    def _gradient(self, counts: np.ndarray) -> np.ndarray:
        """d objective / d lambda = -E_q[psi], per constraint."""
        return -np.array([c.expectation(counts) for c in self.constraints])

    def _converged(self, lam: np.ndarray, counts: np.ndarray) -> bool:
        """Every constraint holds to within `tolerance` of its share, and each one with lambda > 0 is
        tight to within it (the projected gradient is small)."""
        for c, value in zip(self.constraints, lam):
            slack = c.expectation(counts) / max(c.parts(counts), 1e-300)
            if slack > self.tolerance or (value > 0 and slack < -self.tolerance):
                return False
        return True

    def estep(self, params: ParamState, run: Callable[[ParamState], tuple[EStepResult, float]]
              ) -> tuple[EStepResult, float]:
        """The projected E-step: `run(params)` is one ordinary E-step (result, objective); returns
        those of the projected posterior. `params` are left as given."""
        try:
            self._set(params, np.zeros_like(self.lam))
            result, objective = run(params)
            before = [c.share(result.counts) for c in self.constraints]
            start_objective, esteps = objective, 1
            lam = np.zeros_like(self.lam)
            self.duals = [0.0]
            if not self._converged(lam, result.counts):
                if np.any(self.lam > 0):  # warm start, kept if it is better than lambda = 0
                    self._set(params, self.lam)
                    warm, warm_objective = run(params)
                    esteps += 1
                    if warm_objective < objective:
                        result, objective, lam = warm, warm_objective, self.lam.copy()
                        self.duals.append(start_objective - objective)
                result, objective, lam, esteps = self._descend(params, run, result, objective, lam, esteps,
                                                               start_objective)
            self.lam = lam
        finally:
            self._set(params, np.zeros_like(self.lam))
        self.last = {"constraints": [
            {"name": c.name, "bound": f"{c.factor.bound.op} {c.factor.bound.value:g}", "before": b,
             "after": c.share(result.counts), "lambda": float(v)}
            for c, b, v in zip(self.constraints, before, lam)],
            "dual": start_objective - objective, "projection_esteps": esteps}
        return result, objective

    def _descend(self, params, run, result, objective, lam, esteps, start_objective):
        """Projected gradient descent on the objective over lambda >= 0 until the constraints hold
        (or `max_esteps` E-steps): Barzilai-Borwein step lengths, each step accepted only when it
        lowers the objective by Armijo's share of its linear decrease."""
        gradient = self._gradient(result.counts)
        curvature = sum(float(result.counts[c.table.entries] @ c.psi ** 2) for c in self.constraints)
        length = 1.0 / max(curvature, 1e-300)
        while esteps < self.max_esteps and not self._converged(lam, result.counts):
            accepted = False
            while esteps < self.max_esteps:
                trial = np.clip(lam - length * gradient, 0.0, self.lam_max)
                step = trial - lam
                if not np.any(step):
                    return result, objective, lam, esteps
                self._set(params, trial)
                new, new_objective = run(params)
                esteps += 1
                if new_objective <= objective + ARMIJO * float(gradient @ step):
                    accepted = True
                    break
                length *= SHRINK
            if not accepted:
                break
            new_gradient = self._gradient(new.counts)
            change = new_gradient - gradient
            curved = float(step @ change)
            if curved > 0:
                length = float(step @ step) / curved
            result, objective, lam, gradient = new, new_objective, trial, new_gradient
            self.duals.append(start_objective - objective)
        return result, objective, lam, esteps


def projection_text(record: dict) -> str:
    """One iteration's projection in a few words: each constraint's expected share before -> after
    (lambda), the dual objective and the E-steps it took, then the per-example constraint's ('' without
    constraints)."""
    from emc.runtime.example_constraints import example_projection_text
    from emc.runtime.sparsity import sparsity_text

    text = ""
    if "constraints" in record:
        shares = "  ".join(f"{c['name']} {c['before']:.3f}->{c['after']:.3f} (lambda {c['lambda']:.3g})"
                           for c in record["constraints"])
        text = f"{shares}  dual {record['dual']:.6g}  {record['projection_esteps']} E-steps"
    return "  ".join(t for t in (text, example_projection_text(record), sparsity_text(record)) if t)


def projection_lines(history: list[dict], shown: int = 5) -> list[str]:
    """`emc info RUN`: the projections of a fit's first and last `shown` iterations."""
    records = [r for r in history if "constraints" in r or "example_constraints" in r or "sparsity" in r]
    if not records:
        return []
    lines = ["posterior regularization, per iteration (an online fit's pass: the mean over its mini-batches): each "
             "constraint's expected share before -> after the "
             "projection (lambda), the dual objective (the projection's KL) and the E-steps it took; a per-example "
             "constraint's expected parts beyond its bound per position, before -> after; posterior sparsity's states per "
             "word type (the summed largest posterior of each state) from the previous duals -> after:"]
    picked = records if len(records) <= 2 * shown else records[:shown] + [None] + records[-shown:]
    for r in picked:
        lines.append("  ..." if r is None else f"  {'pass' if 'pass' in r else 'iter'} "
                                               f"{r.get('iteration', r.get('pass', '?')):>4}  {projection_text(r)}")
    return lines


def mean_record(records: list[dict]) -> dict:
    """The projections of an online pass's mini-batches (or blocks) in one record: every number
    their mean (a share, an excess or a norm of one mini-batch; its dual; its E-steps), every name
    the first's ({} without constraints)."""
    return _mean(records) if records else {}


def _mean(values: list):
    first = values[0]
    if isinstance(first, dict):
        return {k: _mean([v[k] for v in values]) for k in first}
    if isinstance(first, list):
        return [_mean([v[i] for v in values]) for i in range(len(first))]
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return float(np.mean(values))
    return first
