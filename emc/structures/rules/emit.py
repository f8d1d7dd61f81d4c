"""The rule program -> the generated module's dynamic program: loop nests, one per rule and pass.

Every rule is written out as nested loops over its variables (each range bounded by the variables
before it), with each factor of a part's score, each body item's inside value and each token read
placed at the shallowest loop where all it reads is bound, so the innermost loop does the least.
The same nest generator serves four passes, which differ only in what the innermost loop does:

  reference  the log-scale each level's values are kept in (the largest body scale of any firing)
  inside     head += part score x body values (the semiring's plus: sum or max)
  outside    body outside += head outside x part score x the other bodies; part marginals -> counts
  choose     the firings of one head item, for the Viterbi read-back (argmax) or a posterior draw

Charts are kept in linear space, one log-scale per level (`ls`): an item on level k holds
inside / exp(ls[k]) and outside x exp(ls[k]) / Z, so every firing's term carries the one factor
exp(sum of its bodies' ls - its head's ls), computed once per combination of levels, not per term.
Generated names follow a fixed scheme (rv<i> variables, ru<q> body values, rw<q> factors, ra<k> arguments): nothing from
the spec becomes code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from emc.spec import ir
from emc.structures.rules import posterior_kind
from emc.structures.rules.program import N, Program, Rule

LOCAL = re.compile(r"\brv\d+\b")


@dataclass
class Names:
    """How the generated code names the program's things."""

    program: Program
    args: dict[str, str]  # argument -> local
    tables: list[str] = field(default_factory=list)  # the tables' constants the program reads
    small: list[str] = field(default_factory=list)  # those prepare() writes out, in its order
    bounded_rows: list[str] = field(default_factory=list)  # the others whose rows are few: read via a table_reader
    # whether an example's structure may be given (emc/structures/rules/given.py): each part with a
    # place among the posteriors is then also scored by its place's flag (`rgv`), 1 when not given
    given: bool = False

    def item(self, name: str) -> int:
        return list(self.program.items).index(name)

    def var(self, rule: Rule, name: str) -> str:
        return f"rv{rule.order.index(name)}"

    def lin(self, lin: ir.Lin, rule: Rule | None) -> str:
        out = str(lin.const) if lin.const or not lin.terms else ""
        for name, coef in lin.terms:
            if coef == 0:
                continue
            local = "n" if name == N else self.args[name] if name in self.args else self.var(rule, name)
            term = local if abs(coef) == 1 else f"{abs(coef)} * {local}"
            out = (f"-{term}" if coef < 0 else term) if not out else f"{out} {'-' if coef < 0 else '+'} {term}"
        return f"({out})" if " " in out else out


def layout_code(names: Names) -> list[str]:
    """Locals for the chart's layout: item k's cells start at b<k>; its index d starts at
    lo<k>_<d>, has z<k>_<d> values and stride s<k>_<d>. `cells` is the chart's size."""
    lines = ["b0 = 0"]
    for k, item in enumerate(names.program.items.values()):
        dims = item.dims
        for d, dim in enumerate(dims):
            lines.append(f"lo{k}_{d} = {names.lin(dim.lo, None)}")
            lines.append(f"z{k}_{d} = max(0, {names.lin(dim.hi, None)} - lo{k}_{d} + 1)")
        for d in reversed(range(len(dims))):
            lines.append(f"s{k}_{d} = " + ("1" if d == len(dims) - 1 else f"s{k}_{d + 1} * z{k}_{d + 1}"))
        size = f"s{k}_0 * z{k}_0" if dims else "1"
        lines.append(f"b{k + 1} = b{k} + {size}")
    lines.append(f"cells = b{len(names.program.items)}")
    return lines


def cell_code(names: Names, ref: ir.ItemRef, rule: Rule | None, values: list[str] | None = None) -> str:
    return index(cell_offset(names, ref, rule, values))


def cell_offset(names: Names, ref: ir.ItemRef, rule: Rule | None, values: list[str] | None = None) -> str:
    """An item's cell in the chart (values: its indices' code, default its arguments')."""
    k = names.item(ref.name)
    codes = values if values is not None else [names.lin(a, rule) for a in ref.args]
    terms = [f"({c} - lo{k}_{d}) * s{k}_{d}" for d, c in enumerate(codes)]
    return " + ".join([f"b{k}"] + terms)


def index(code: str) -> str:
    """An array index as the generated code writes it: unsigned, since numba checks a signed
    index for being negative (to count from the end) on every access, which keeps LLVM from
    vectorising the innermost loops (4x the time of the chain's E-step). Every index is
    guarded to lie inside its array."""
    return f"np.uint64({code})"


def level_code(names: Names, ref: ir.ItemRef, rule: Rule | None, values: list[str] | None = None) -> str:
    program = names.program
    item = program.items[ref.name]
    codes = values if values is not None else [names.lin(a, rule) for a in ref.args]
    pos = item.positions
    if not pos:
        return "(n + 2)" if program.is_built(ref.name) else "0"
    if program.kind == "last":
        return f"(1 + {codes[pos[-1]]})"
    return f"(1 + {codes[pos[-1]]} - {codes[pos[0]]})"



@dataclass
class Step:
    """Code placed once its locals are bound: an assignment or a condition."""

    text: str
    needs: set[str]
    kind: str  # "let" | "if"


@dataclass
class Nest:
    """A rule's loops and the steps hoisted into them."""

    loops: list[tuple[str, str, str]]  # (local, lo code, hi code)
    steps: list[Step]
    product: list[str] = field(default_factory=list)  # the locals whose product is the term
    bodies: list[str] = field(default_factory=list)  # the body values' locals, in body order
    body_cells: list[str] = field(default_factory=list)
    factors: list[str] = field(default_factory=list)
    head_cell: str = ""


def needs_of(text: str) -> set[str]:
    return set(LOCAL.findall(text))


def build_nest(names: Names, rule: Rule, reads: list, token_reads: list, head_bound: dict[str, str],
               scale_base: str, loop_vars: list[str] | None = None) -> Nest:
    """The loops over the rule's variables not in `head_bound` (var -> code), and its steps:
    range checks of indices that are expressions, `where` ranges, token reads, factor reads, body
    values and the levels' scale factor `f`."""
    program = names.program
    order = [v for v in rule.order if v not in head_bound]
    if loop_vars is not None:
        order = [v for v in order if v in loop_vars]
    last = _contiguous_variable(names, rule, reads, order)
    if last is not None:
        order = [v for v in order if v != last] + [last]
    steps: list[Step] = []
    bound_locals = {names.var(rule, v) for v in head_bound}
    for var, code in head_bound.items():
        steps.append(Step(f"{names.var(rule, var)} = {code}", needs_of(code) - bound_locals | set(), "let"))
    for var in head_bound:  # a bound variable must lie in its own ranges
        steps.append(_range_step(names, rule, var))
    loops = []
    for var in order:
        lo, hi = rule.bounds[var]
        lo_code = _extreme("max", [names.lin(e, rule) for e in lo])
        hi_code = _extreme("min", [names.lin(e, rule) for e in hi])
        loops.append((names.var(rule, var), lo_code, hi_code))
    nest = Nest(loops, steps)
    for ref in (rule.head, *rule.body):
        item = program.items[ref.name]
        for arg, dim in zip(ref.args, item.dims):
            if not (len(arg.terms) == 1 and arg.terms[0][1] == 1 and arg.const == 0 and arg.names[0] != N
                    and arg.names[0] not in names.args):
                code = names.lin(arg, rule)
                steps.append(Step(f"{names.lin(dim.lo, None)} <= {code} <= {names.lin(dim.hi, None)}",
                                  needs_of(code), "if"))
    for attr in rule.where:
        code = names.lin(attr.index, rule)
        if attr.kind == "numeric":
            if not (attr.index.terms or attr.range.lo.terms or attr.range.hi.terms) and \
                    attr.range.lo.const <= attr.index.const <= attr.range.hi.const:
                continue  # a constant inside its range (`preterminal = 1 in 0..1`) needs no test
            steps.append(Step(f"{names.lin(attr.range.lo, rule)} <= {code} <= {names.lin(attr.range.hi, rule)}",
                              needs_of(code), "if"))
        elif attr.kind == "span":
            end = names.lin(attr.end, rule)
            steps.append(Step(f"0 <= {code} < {end} <= n and {end} - {code} <= rspan_max", needs_of(f"{code} {end}"), "if"))
        else:
            steps.append(Step(f"0 <= {code} < n", needs_of(code), "if"))
    token_locals = [read.local for read in token_reads]
    for read in token_reads:
        steps.append(Step(f"{read.local} = {read.expr}", needs_of(read.expr), "let"))
    for q, read in enumerate(reads):
        local = f"rw{q}"
        code = table_read(names, read)
        text = f"{read.row} {read.outcome}"
        tokens = {t for t in token_locals if re.search(rf"\b{re.escape(t)}\b", text)}
        steps.append(Step(f"{local} = {code}", needs_of(text) | tokens, "let"))
        nest.factors.append(local)
    place = part_place(names, rule) if names.given and rule.kind == "part" else None
    if place is not None and place.over is None:
        steps.append(Step(f"rgv = float(rgf[{index('rgo + ' + place.index)}]) if rgiven else 1.0", place.needs, "let"))
        nest.factors.append("rgv")
    levels = []
    for q, ref in enumerate(rule.body):
        cell = cell_code(names, ref, rule)
        nest.body_cells.append(cell)
        steps.append(Step(f"ru{q} = chart[{cell}]", needs_of(cell), "let"))
        nest.bodies.append(f"ru{q}")
        levels.append(f"ls[{index(level_code(names, ref, rule))}]")
    scale = " + ".join(levels) if levels else "0.0"
    steps.append(Step(f"rf = np.exp({scale} - {scale_base})", needs_of(scale), "let"))
    nest.head_cell = cell_code(names, rule.head, rule)
    nest.product = nest.factors + nest.bodies + ["rf"]
    return nest


@dataclass
class Place:
    """Where a part's marginal goes among an example's posteriors: the index code, what it needs
    bound, and for a label over a span of tokens the range of `rq` it runs over (one place a token)."""

    needs: set[str]
    index: str
    over: str | None = None


def part_place(names: Names, rule: Rule) -> Place | None:
    """A part's place among the posteriors (emc/structures/rules/__init__.py: posterior_kind),
    which is also where a given structure says whether the part may fire: its label at the token
    it labels (or each token of the span it labels); its head at the dependent it attaches (the
    root first); the span its head covers, by start then end; or the word it reads, by start then
    length. None for a part that does none of these."""
    kind = posterior_kind(names.program)
    if kind == "labels" and rule.label is not None:
        _, start, end, variable = rule.label
        label = names.var(rule, variable)
        first = names.lin(start, rule)
        if end is None:
            return Place(needs_of(f"{first} {label}"), f"{first} * rpw + {label}")
        last = names.lin(end, rule)
        return Place(needs_of(f"{first} {last} {label}"), f"rq * rpw + {label}", f"range({first}, {last})")
    if kind == "attaches" and rule.attach is not None:
        dependent, head = rule.attach
        at = names.lin(dependent, rule)
        column = "0" if head is None else f"{names.lin(head, rule)} + 1"
        return Place(needs_of(f"{at} {column}"), f"{at} * rpw + {column}")
    spans = [a for a in rule.where if a.kind == "span"]
    if kind == "segments" and spans:
        i, j = names.lin(spans[0].index, rule), names.lin(spans[0].end, rule)
        return Place(needs_of(f"{i} {j}"), f"({i}) * rspan_max + ({j}) - ({i}) - 1")
    positions = names.program.items[rule.head.name].positions
    if kind == "spans" and len(positions) == 2:
        i, j = (names.lin(rule.head.args[d], rule) for d in positions)
        return Place(needs_of(f"{i} {j}"), f"({i}) * n - (({i}) * ({i} - 1)) // 2 + ({j}) - ({i}) - 1")
    return None


def _contiguous_variable(names: Names, rule: Rule, reads: list, order: list[str]) -> str | None:
    """The variable to loop over innermost: the row of a small table the rule reads (tables are
    stored outcome-major, so its rows are adjacent and the loop reads them in one stride, which
    LLVM vectorises), if no other variable's range depends on it; else None (the order stays)."""
    for read in sorted(reads, key=lambda r: r.table not in names.small):
        if read.table not in names.small and read.table not in names.bounded_rows:
            continue
        var = next((v for v in order if names.var(rule, v) == read.row.strip()), None)
        if var is not None and not any(var in end.names for other in order if other != var
                                       for end in rule.bounds[other][0] + rule.bounds[other][1]):
            return var
    return None


def table_read(names: Names, read) -> str:
    """A factor's weight: one load from a small table prepare() wrote out (rd<q> its start in
    derived, rr<q> its rows); for a table with few rows (an emission's states), through a
    table_reader (rt<q>: the rows' shared denominators inverted once per call, not divided by
    per read); else through the lazy parameter view."""
    q = names.tables.index(read.table)
    if read.table in names.small:
        return f"derived[{index(f'rd{q} + ({read.outcome}) * rr{q} + {read.row}')}]"
    if read.table in names.bounded_rows:
        return f"read_hoisted(rt{q}, {read.row}, {read.outcome})"
    return f"read(params, meta, {read.table}, {read.row}, {read.outcome})"


def _range_step(names: Names, rule: Rule, var: str) -> Step:
    lo, hi = rule.bounds[var]
    local = names.var(rule, var)
    lo_code = _extreme("max", [names.lin(e, rule) for e in lo])
    hi_code = _extreme("min", [names.lin(e, rule) for e in hi])
    return Step(f"{lo_code} <= {local} <= {hi_code}", needs_of(f"{lo_code} {hi_code} {local}"), "if")


def _extreme(function: str, codes: list[str]) -> str:
    unique = list(dict.fromkeys(codes))
    out = unique[0]
    for code in unique[1:]:
        out = f"{function}({out}, {code})"
    return out


@dataclass
class Sum:
    """A value summed over the loops deeper than where `needs` are bound (a factor's count over
    the firings that share its entry): `name = 0.0` there, `close` (lines using it) after them;
    `close` may be a function of the names of the sums hoisted so far, giving the lines. With no
    name, only `close`: lines after the loops below where `needs` are bound."""

    name: str
    needs: set[str]
    close: list[str] | Callable[[set[str]], list[str]]
    hoisted: bool = False


def render_nest(nest: Nest, innermost, indent: int, skip_zero: bool = True,
                accumulate: tuple[str, str] | None = None, sums: list[Sum] = (),
                given: set[str] = frozenset()) -> list[str]:
    """The nest as lines: each step at the shallowest depth where what it needs is bound, then
    `innermost` (lines using the locals) inside all the loops. `accumulate` = (target, locals):
    innermost does target = plus(semiring, target, the locals' product), summed in a local over
    the innermost loop when the target does not depend on that loop's variable (a register, not a
    store per term). `sums` are placed as their needs allow (Sum); `innermost` may be a function of the
    names of the sums that were hoisted, giving the lines. `given`: locals the enclosing code binds."""
    lines: list[str] = []
    placed: set[int] = set()
    bound: set[str] = set(given)
    pad = indent

    def place(pad: int, depth: int) -> int:
        progress = True
        while progress:
            progress = False
            for q, step in enumerate(nest.steps):
                if q in placed or not step.needs <= bound:
                    continue
                placed.add(q)
                progress = True
                if step.kind == "if":
                    lines.append(" " * pad + f"if {step.text}:")
                    pad += 4
                else:
                    lines.append(" " * pad + step.text)
                    target = step.text.split(" = ")[0]
                    bound.add(target)
                    if skip_zero and depth < len(nest.loops) and target.startswith("ru") and target[2:].isdigit():
                        lines.append(" " * pad + f"if {target} != 0.0:")
                        pad += 4
        if depth < len(nest.loops):
            for s in sums:
                if not s.hoisted and s.needs <= bound:
                    s.hoisted = True
                    if s.name:  # a nameless Sum only closes: lines after the loops below
                        lines.append(" " * pad + f"{s.name} = 0.0")
                    hoisted = {t.name for t in sums if t.hoisted}
                    closing.append((pad, s.close(hoisted) if callable(s.close) else s.close))
        return pad

    closing: list[tuple[int, list[str]]] = []
    pad = place(pad, 0)
    for depth, (local, lo, hi) in enumerate(nest.loops):
        if accumulate is not None and depth == len(nest.loops) - 1 and local not in needs_of(accumulate[0]):
            # the innermost loop sums the terms' changing factors; the others multiply the sum once
            # (under max too: max_j(c a_j) = c max_j(a_j) for c >= 0)
            outer, inner = split_product(nest, accumulate[1])
            lines.append(" " * pad + "acc = 0.0")
            closing.append((pad, [f"{accumulate[0]} = plus(semiring, {accumulate[0]}, acc * {product(outer)})"]))
            innermost = [f"acc = plus(semiring, acc, {product(inner)})"]
            accumulate = None
        lines.append(" " * pad + f"for {local} in range({lo}, {hi} + 1):")
        pad += 4
        bound.add(local)
        pad = place(pad, depth + 1)
    missing = [s.text for q, s in enumerate(nest.steps) if q not in placed]
    assert not missing, f"unplaced steps: {missing}"
    if accumulate is not None:
        innermost = [f"{accumulate[0]} = plus(semiring, {accumulate[0]}, {ordered_product(nest, accumulate[1])})"]
    if callable(innermost):
        innermost = innermost({s.name for s in sums if s.hoisted})
    lines.extend(" " * pad + line for line in innermost)
    for at, close in reversed(closing):  # inner loops close first
        lines.extend(" " * at + line for line in close)
    return lines


def product(locals_: list[str]) -> str:
    return " * ".join(locals_) if locals_ else "1.0"


def moving_locals(nest: Nest) -> set[str]:
    """The innermost loop's variable and the locals computed from it (none without loops)."""
    if not nest.loops:
        return set()
    moving = {nest.loops[-1][0]}
    for step in nest.steps:  # steps are listed bodies-after-what-they-read, so one pass suffices
        if step.kind == "let" and step.needs & moving:
            moving.add(step.text.split(" = ")[0])
    return moving


def split_product(nest: Nest, locals_: list[str]) -> tuple[list[str], list[str]]:
    """The locals that do not change in the innermost loop, and those that do: writing the first
    ones first (`(a * b) * c * d`) lets LLVM compute their product once per innermost loop."""
    moving = moving_locals(nest)
    inner = [x for x in locals_ if x in moving]
    return [x for x in locals_ if x not in moving], inner


def ordered_product(nest: Nest, locals_: list[str], first: str | None = None) -> str:
    """product() with what the innermost loop does not change first, in parentheses."""
    outer, inner = split_product(nest, locals_)
    outer = ([first] if first else []) + outer
    head = f"({product(outer)})" if len(outer) > 1 else product(outer) if outer else ""
    return " * ".join([x for x in [head] if x] + inner) or "1.0"
