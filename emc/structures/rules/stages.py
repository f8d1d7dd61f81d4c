"""A rule's sums in two stages, when its factors do not see a variable its bodies sum over.

A CKY rule `span(i, j, a) += span(i, k, b) * span(k, j, c)`, scored by P(b, c | a), fires once per
(k, a, b, c): labels^3 multiply-adds per split point k. The factors do not depend on k and the
bodies do not depend on the parent a, so the sums are reordered, the order of the hand-written
PCFG. Inside: first t(b, c) = the bodies' product summed over k (labels^2 per split), then
head(a) += P(b, c | a) t(b, c) summed over (b, c) (labels^3 per span, not per split); max
distributes over products of non-negative numbers as sum does, so Viterbi's inside takes the same
stages. Outside: g(b, c) = the head's outside times P(b, c | a) summed over a, once per span; each
child's outside is then the other child times g, per split (labels^2); the rule's counts are the
head's outside times t(b, c) per (a, b, c), once per span.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from emc.structures.rules.emit import Nest, Step, Sum, needs_of, render_nest
from emc.structures.rules.emit import index as index_code


@dataclass
class Stages:
    """A rule's variables by what reads them, and the two stages' nests (without their sums)."""

    outer: Nest  # the loops over the head's variables that the bodies read too, and their steps
    split: Nest  # over the summed and the shared variables: the bodies' side
    parent: Nest  # over the shared and the head's other variables: the factors' side
    cell: str  # a shared combination's entry in the stage tables
    size: str  # the stage tables' size
    given: set[str]  # what the outer loops bind


def stages_of(nest: Nest, head_cell: str) -> Stages | None:
    """The nest in two stages, or None where the rule does not have that shape."""
    loops = [local for local, _, _ in nest.loops]
    ranges = {local: (lo, hi) for local, lo, hi in nest.loops}
    lets = {s.text.split(" = ")[0]: s for s in nest.steps if s.kind == "let"}

    def deps(needs: set[str]) -> set[str]:
        """The loop variables behind `needs`, through the assignments that compute them."""
        found, todo, seen = set(), list(needs), set()
        while todo:
            local = todo.pop()
            if local not in seen:
                seen.add(local)
                found |= {local} if local in loops else set()
                todo += lets[local].needs if local in lets else []
        return found

    bodies = set().union(*(deps(lets[x].needs) for x in nest.bodies + ["rf"] if x in lets))
    factors = set().union(*(deps(lets[x].needs) for x in nest.factors))
    head = deps(needs_of(head_cell))
    outer = head & bodies
    summed = bodies - factors - head
    shared = (bodies & factors) - head
    parent = (factors | head) - bodies
    if not summed or not parent or set(loops) != outer | summed | shared | parent:
        return None
    if loops[:len(outer)] != [v for v in loops if v in outer]:
        return None
    range_deps = {v: deps(needs_of(" ".join(ranges[v]))) for v in loops}
    if any(needs_of(" ".join(ranges[v])) for v in shared) or any(range_deps[v] - outer - summed for v in summed) \
            or any(range_deps[v] & summed for v in parent):
        return None
    first, second, before = [], [], []
    for step in nest.steps:
        needed = deps(step.needs)
        if needed <= outer:
            before.append(step)
            continue
        if not needed <= outer | summed | shared and not needed <= outer | shared | parent:
            return None
        if needed <= outer | summed | shared:
            first.append(step)
        if needed <= outer | shared | parent:
            second.append(step)
    order = [v for v in loops if v in shared]
    extents = {v: f"max(0, {ranges[v][1]} - {ranges[v][0]} + 1)" for v in order}
    index, stride = [], ""
    for v in reversed(order):
        index.append(f"({v} - {ranges[v][0]}){stride}")
        stride += f" * {extents[v]}"
    return Stages(outer=Nest([lp for lp in nest.loops if lp[0] in outer], before),
                  split=Nest([lp for lp in nest.loops if lp[0] in summed | shared], first),
                  parent=Nest([lp for lp in nest.loops if lp[0] in shared | parent], second),
                  cell=index_code(" + ".join(reversed(index)) or "0"),  # no shared variable: one number
                  size=" * ".join(extents[v] for v in order) or "1",
                  given={local for local in lets if deps({local}) <= outer} | outer)


def two_stage_inside(nest: Nest, target: str, indent: int) -> list[str] | None:
    """The nest's inside lines (target = plus(semiring, target, term)) through a table `rtmp`
    over the shared variables; None where the rule does not have the shape."""
    stages = stages_of(nest, target)
    if stages is None:
        return None
    split, parent = stages.split, stages.parent
    split.product = [x for x in nest.product if x in nest.bodies + ["rf"]]
    parent.steps = parent.steps + [Step(f"rtv = rtmp[{stages.cell}]", needs_of(stages.cell), "let"),
                                   Step("rtv != 0.0", {"rtv"}, "if")]
    parent.product = ["rtv"] + [x for x in nest.product if x in nest.factors]
    inner = ["rtmp[:] = 0.0"]
    inner += render_nest(split, [], 0, accumulate=(f"rtmp[{stages.cell}]", split.product), given=stages.given)
    inner += render_nest(parent, [], 0, accumulate=(target, parent.product), given=stages.given)
    return [" " * indent + f"rtmp = np.zeros({stages.size})"] + render_nest(stages.outer, inner, indent)


def two_stage_outside(nest: Nest, counts: list[tuple[str, Callable[[str], list[str]]]], indent: int,
                      posting: tuple[set[str], list[str]] | None = None) -> list[str] | None:
    """The nest's outside lines: the bodies' outsides and, for each learned factor (its local
    and a function of its count's value giving the lines), its counts; the head's outside is the
    step `roh`. With `posting` (what the lines need, and the lines adding the firings' marginal
    `rp` to the posteriors), rp summed over the firings as the two stages' tables' inner product,
    when the lines need only what the outer loops bind (a CKY node's span). None where the rule
    does not have the shape."""
    stages = stages_of(nest, nest.head_cell)
    if stages is None or (posting is not None and not posting[0] <= stages.given):
        return None
    split, parent = stages.split, stages.parent
    split_side = [x for x in nest.product if x in nest.bodies + ["rf"]]
    factors = [x for x in nest.product if x in nest.factors]
    inner = ["rtmp[:] = 0.0", "rgt[:] = 0.0"]
    if counts or posting:  # t: the bodies' product summed over the split, which the counts need
        inner += render_nest(split, [f"rtmp[{stages.cell}] += {' * '.join(split_side)}"], 0, given=stages.given)
    parent.steps = parent.steps + [Step(f"rtv = rtmp[{stages.cell}]", needs_of(stages.cell), "let")]
    # g summed in a local over the head's own variables where they loop inside the shared ones
    g = Sum("rgs", needs_of(stages.cell), [f"rgt[{stages.cell}] += rgs"])

    def parent_side(hoisted: set[str]) -> list[str]:
        term = " * ".join(["roh"] + factors)
        lines = [f"rgs += {term}"] if "rgs" in hoisted else [f"rgt[{stages.cell}] += {term}"]
        for local, count in counts:
            lines += count(" * ".join(["roh", "rtv"] + [f for f in factors if f != local]))
        return lines
    inner += render_nest(parent, parent_side, 0, sums=[g], given=stages.given)
    if posting is not None:
        inner += ["if posting:", "    rp = 0.0", f"    for rtq in range({stages.size}):", "        rp += rtmp[rtq] * rgt[rtq]",
                  *("    " + line for line in posting[1])]
    split.steps = split.steps + [Step(f"rgv = rgt[{stages.cell}]", needs_of(stages.cell), "let"),
                                 Step("rgv != 0.0", {"rgv"}, "if")]
    outs = [f"out[{cell}] += {' * '.join(['rgv'] + [x for x in split_side if x != f'ru{q}'])}"
            for q, cell in enumerate(nest.body_cells)]
    inner += render_nest(split, outs, 0, given=stages.given)
    allocate = [" " * indent + f"rtmp = np.zeros({stages.size})", " " * indent + f"rgt = np.zeros({stages.size})"]
    return allocate + render_nest(stages.outer, inner, indent)
