"""What an iteration will cost, said before the first one: one 3,000-token sentence under the DMV,
or a PCFG over words with 45 labels, made an iteration take half an hour with no word up front.

The E-step's time per sentence grows as a power of its length: the highest power of n in the
structure's cost model (`O(n^3 K^2 + n^2 K^3) per sentence of n tokens`: 3), or where the model
names no n, the power measured between two groups of the corpus's short sentences (lengths near L
and 2L; short sentences understate a cubic DP's power, 2.4 for the DMV, whose overheads weigh
there). The constant is measured on this machine on the shorter group, and the power law applied
to every sentence's length: a sum that is small is not reported; a large one is, with the
sentence that dominates it and the --max-length that would leave it out.
"""
from __future__ import annotations

import math
import re
import time
from typing import Callable

import numpy as np

from emc.runtime.params import ParamState
from emc.structures.semiring import SUM

REPORT_SECONDS = 60.0  # an iteration predicted to take longer is reported
PROBE_EXAMPLES = 16  # the first group's size
MAX_PROBE_EXAMPLES = 4096
OUTWEIGH = 4.0  # a group's call must take this many times a call's overhead
PROBE_SECONDS = 0.05  # each group is timed, repeated, for at least this long
POWERS = (1.0, 3.5)  # the exponent is kept within these (a chain: 1; inside-outside: 3)
QUICK_MARGIN = 4.0  # a first bound this many times under REPORT_SECONDS skips the measurement


def _seconds_per_call(executor, params: ParamState, examples: np.ndarray) -> float:
    """Seconds of one E-step call over `examples` (repeated until PROBE_SECONDS have passed)."""
    weights = np.ones(len(examples))
    executor.estep(params, examples, SUM, weights)  # untimed: a first call may still compile a path
    runs, started = 0, time.perf_counter()
    while runs == 0 or time.perf_counter() - started < PROBE_SECONDS:
        executor.estep(params, examples, SUM, weights)
        runs += 1
    return (time.perf_counter() - started) / runs


def _short_length(lengths: np.ndarray) -> float:
    """The length the probes time first: the median, kept within 4..20 tokens."""
    return float(max(4.0, min(np.median(lengths), 20.0)))


def _nearest(lengths: np.ndarray, target: float) -> np.ndarray:
    """The examples nearest `target` in length, nearest first, within half of it (never a long
    sentence: it may take minutes), or the one nearest."""
    order = np.argsort(np.abs(lengths - target), kind="stable")
    near = order[np.abs(lengths[order] - target) <= target / 2]
    return near if len(near) else order[:1]


def _probe(executor, params: ParamState, lengths: np.ndarray, target: float, overhead: float) -> tuple[float, float]:
    """(seconds per example of the E-step, their mean length) over the sentences nearest `target`
    in length, without a call's own `overhead` (the count buffers a call zeroes: for an HMM over
    CoNLL-2000's words 12 ms, as much as 700 sentences' dynamic programs): the group grows from
    PROBE_EXAMPLES until its work outweighs the overhead."""
    order = _nearest(lengths, target)
    size = PROBE_EXAMPLES
    while True:
        group = order[:size]
        whole = _seconds_per_call(executor, params, group)
        if whole > OUTWEIGH * overhead or size >= min(len(order), MAX_PROBE_EXAMPLES):
            return max(whole - overhead, 0.05 * whole) / len(group), float(lengths[group].mean())
        size *= 4


def length_power(cost: str) -> float | None:
    """The highest power of the length n in a structure's cost model (None: it names no n)."""
    powers = [int(p) for p in re.findall(r"\bn\^(\d+)", cost)]
    if powers:
        return float(max(powers))
    return 1.0 if re.search(r"\bn\b", cost) else None


def predicted_iteration(executor, params: ParamState, power: float | None = None) -> tuple[float, float, int] | None:
    """(seconds an iteration's E-step will take, the longest sentence's share of them, the length of
    the next longest), or None when the corpus has too few lengths to measure the growth on."""
    lengths = np.asarray(executor.lengths, np.float64)
    short = _short_length(lengths)
    shortest = np.argsort(lengths, kind="stable")[:1]
    overhead = _seconds_per_call(executor, params, shortest) * 0.9  # a call on the shortest sentence: mostly overhead
    t1, l1 = _probe(executor, params, lengths, short, overhead)
    if power is None:
        t2, l2 = _probe(executor, params, lengths, 2 * short, overhead)
        if l2 < 1.5 * l1:
            return None
        power = min(max(math.log(max(t2, 1e-12) / max(t1, 1e-12)) / math.log(l2 / l1), POWERS[0]), POWERS[1])
    per_sentence = t1 * (lengths / l1) ** power
    total = float(per_sentence.sum()) + overhead
    next_longest = int(np.sort(lengths)[-2]) if len(lengths) > 1 else 0
    return total, float(per_sentence.max()) / total, next_longest


def quick_bound(executor, params: ParamState, power: float | None) -> float:
    """An upper bound of an iteration's E-step seconds from one call over up to PROBE_EXAMPLES short
    sentences: the call's overhead (and any compiling) counted as their own work, and the steepest
    growth where the cost model names none. The measurement it spares (predicted_iteration) took
    0.12-0.19 CPU s of every fit."""
    lengths = np.asarray(executor.lengths, np.float64)
    group = _nearest(lengths, _short_length(lengths))[:PROBE_EXAMPLES]
    started = time.perf_counter()
    executor.estep(params, group, SUM, np.ones(len(group)))
    per_example = (time.perf_counter() - started) / len(group)
    return float((per_example * (lengths / lengths[group].mean()) ** (power or POWERS[1])).sum())


def say_iteration_cost(executor, params: ParamState, cost: str, say: Callable[[str], None]) -> None:
    """Say, when it is long, what an iteration will cost (`cost`: the structure's cost model, in
    words), and which sentence makes it so."""
    power = length_power(cost)
    if quick_bound(executor, params, power) < REPORT_SECONDS / QUICK_MARGIN:
        return
    predicted = predicted_iteration(executor, params, power)
    if predicted is None or predicted[0] < REPORT_SECONDS:
        return
    seconds, share, next_longest = predicted
    dominant = (f"; the longest sentence alone is {share:.0%} of it: --max-length {next_longest} leaves it out"
                if share > 0.5 and next_longest else "")
    say(f"emc: one iteration will take about {duration_text(seconds)} on this machine (its E-step: {cost}, timed here on short "
        f"sentences){dominant}")


def duration_text(seconds: float) -> str:
    """A duration as a reader takes it in: 0.012 s, 45 s, 22 minutes, 5 hours, 17 days."""
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
