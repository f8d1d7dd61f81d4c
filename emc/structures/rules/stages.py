"""A rule's inside sum in two stages, when its factors do not see a variable its bodies sum over.

A CKY rule `span(i, j, a) += span(i, k, b) * span(k, j, c)`, scored by P(b, c | a), fires once per
(k, a, b, c): labels^3 multiply-adds per split point k. The factors do not depend on k and the
bodies do not depend on the parent a, so the sum is reordered: first t(b, c) = the bodies' product
summed over k (labels^2 per split), then head(a) += P(b, c | a) t(b, c) summed over (b, c)
(labels^3 per span, not per split), the order of the hand-written PCFG. Max distributes over
products of non-negative numbers as sum does, so Viterbi's inside takes the same two stages.
"""
from __future__ import annotations

from emc.structures.rules.emit import Nest, Step, needs_of, render_nest
from emc.structures.rules.emit import index as index_code


def two_stage_inside(nest: Nest, target: str, indent: int) -> list[str] | None:
    """The nest's inside lines (target = plus(semiring, target, term)) in two stages through a
    table `rtmp` over the variables both the bodies and the factors read; None where the rule
    does not have that shape (then the one-stage nest serves)."""
    loops = [local for local, _, _ in nest.loops]
    ranges = {local: f"{lo} {hi}" for local, lo, hi in nest.loops}
    lets = {s.text.split(" = ")[0]: s for s in nest.steps if s.kind == "let"}

    def deps(needs: set[str]) -> set[str]:
        """The loop variables behind `needs`, through the assignments that compute them."""
        found, todo, seen = set(), list(needs), set()
        while todo:
            local = todo.pop()
            if local in seen:
                continue
            seen.add(local)
            if local in loops:
                found.add(local)
            elif local in lets:
                todo += lets[local].needs
        return found

    bodies = set().union(*(deps(lets[x].needs) for x in nest.bodies + ["rf"] if x in lets))
    factors = set().union(*(deps(lets[x].needs) for x in nest.factors))
    head = deps(needs_of(target))
    outer = head & bodies
    summed = bodies - factors - head
    shared = (bodies & factors) - head
    parent = (factors | head) - bodies
    if not summed or not parent or set(loops) != outer | summed | shared | parent:
        return None
    if loops[:len(outer)] != [v for v in loops if v in outer]:
        return None
    if any(needs_of(ranges[v]) for v in shared) or any(deps(needs_of(ranges[v])) - outer - summed for v in summed) \
            or any(deps(needs_of(ranges[v])) & summed for v in parent):
        return None
    first, second, before = [], [], []
    for step in nest.steps:
        needed = deps(step.needs)
        if needed <= outer:
            before.append(step)
            continue
        if needed <= outer | summed | shared:
            first.append(step)
        if needed <= outer | shared | parent:
            second.append(step)
        if not needed <= outer | summed | shared and not needed <= outer | shared | parent:
            return None
    order = [v for v in loops if v in shared]
    extents = {v: f"max(0, {nest.loops[loops.index(v)][2]} - {nest.loops[loops.index(v)][1]} + 1)" for v in order}
    index, stride = [], ""
    for v in reversed(order):
        lo = nest.loops[loops.index(v)][1]
        index.append(f"({v} - {lo}){stride}")
        stride += f" * {extents[v]}"
    cell = index_code(" + ".join(reversed(index)) or "0")  # no shared variable: one number
    size = " * ".join(extents[v] for v in order) or "1"
    given = {local for local in lets if deps({local}) <= outer} | outer

    stage_one = Nest([lp for lp in nest.loops if lp[0] in summed | shared], first)
    stage_one.product = [x for x in nest.product if x in nest.bodies + ["rf"]]
    stage_two = Nest([lp for lp in nest.loops if lp[0] in shared | parent],
                     second + [Step(f"rtv = rtmp[{cell}]", set(order), "let"), Step("rtv != 0.0", {"rtv"}, "if")])
    stage_two.product = ["rtv"] + [x for x in nest.product if x in nest.factors]
    inner = ["rtmp[:] = 0.0"]
    inner += render_nest(stage_one, [], 0, accumulate=(f"rtmp[{cell}]", stage_one.product), given=given)
    inner += render_nest(stage_two, [], 0, accumulate=(target, stage_two.product), given=given)
    lines = [" " * indent + f"rtmp = np.zeros({size})"]
    return lines + render_nest(Nest([lp for lp in nest.loops if lp[0] in outer], before), inner, indent)
