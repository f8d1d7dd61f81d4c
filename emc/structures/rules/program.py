"""A structure written as rules, checked: items, rules with their variables' ranges, and the order
in which the chart is built.

The checker (`check_program`) turns a `structure` declaration of the spec into a `Program`, naming
every problem with its position: unknown items or names, unbound variables, wrong arities, and a
program whose items cannot be built in order. The order is found, not declared: every item is put
on a *level*, either its last position index (left to right, as a chain or a segmentation) or the
width between its two position indices (shortest spans first, as CKY); items on one level are
built type by type. `ground` enumerates every rule firing for a given length, which checks the
order on small inputs and serves the brute-force oracle of the tests.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterator

from emc.spec import ir
from emc.spec.errors import did_you_mean

N = "n"  # the example's length, in every range

ErrorSink = Callable[[ir.Pos, str, str | None], None]


@dataclass(frozen=True)
class Dim:
    name: str
    lo: ir.Lin
    hi: ir.Lin

    @property
    def positional(self) -> bool:
        return N in self.lo.names or N in self.hi.names


@dataclass(frozen=True)
class Item:
    name: str
    dims: tuple[Dim, ...]

    @property
    def positions(self) -> tuple[int, ...]:
        return tuple(d for d, dim in enumerate(self.dims) if dim.positional)


@dataclass
class Rule:
    """An axiom, a part or the goal, with its variables in loop-able order: each variable's
    bounds (lo, hi: lists of expressions, the effective range is max(lo)..min(hi)) mention only
    variables before it."""

    kind: str  # "axiom" | "part" | "goal"
    name: str
    index: int  # the part's number among the parts (decoding writes it); -1 for axioms and goals
    params: tuple[str, ...]  # the part's attribute variables, as declared
    head: ir.ItemRef
    body: tuple[ir.ItemRef, ...]
    bounds: dict[str, tuple[list[ir.Lin], list[ir.Lin]]]
    order: list[str]  # the variables, each bounded by earlier ones
    where: tuple[ir.AttrDef, ...]
    pos: ir.Pos
    label: tuple[str, ir.Lin, ir.Lin | None, str] | None = None  # the tokens the part tags, and with which variable
    attach: tuple[ir.Lin, ir.Lin | None] | None = None  # the dependent's and the head's positions (None: root)


@dataclass
class Program:
    name: str
    observed: tuple[str, ...]
    defaults: dict[str, int]
    items: dict[str, Item]
    rules: list[Rule]
    kind: str = "last"  # how an item's level is read from its indices: "last" or "width"
    type_order: dict[str, int] = field(default_factory=dict)  # item -> its turn on a level

    @property
    def parts(self) -> list[Rule]:
        return [r for r in self.rules if r.kind == "part"]

    @property
    def goals(self) -> list[Rule]:
        return [r for r in self.rules if r.kind == "goal"]

    def level(self, item: str, values: tuple[int, ...], n: int) -> int:
        """The level of an item: for items with no position index, 0 when only axioms make them
        (there before everything) and n + 2 when a part builds them (after everything); else 1 +
        its key."""
        spec = self.items[item]
        pos = spec.positions
        if not pos:
            return n + 2 if self.is_built(item) else 0
        if self.kind == "last":
            return 1 + values[pos[-1]]
        return 1 + values[pos[-1]] - values[pos[0]]

    def is_built(self, item: str) -> bool:
        """Whether a part builds the item (one only axioms make is there from the start)."""
        return any(r.head.name == item for r in self.rules if r.kind == "part")


def evaluate(lin: ir.Lin, env: dict[str, int]) -> int:
    return lin.const + sum(coef * env[name] for name, coef in lin.terms)


# --- checking ----------------------------------------------------------------------------------


def check_program(decl: ir.StructureDecl, error: ErrorSink) -> Program | None:
    """The checked program, or None after reporting every problem through `error`."""
    errors_before = [0]

    def report(pos: ir.Pos, message: str, hint: str | None = None) -> None:
        errors_before[0] += 1
        error(pos, message, hint)

    defaults = {}
    for name, value, pos in decl.args:
        if name in defaults or name == N or name in decl.observed:
            report(pos, f"the structure's argument '{name}' is declared twice or shadows a name",
                   f"'{N}' is the example's length; observed variables and arguments need distinct names")
        defaults[name] = value
    constants = {N, *defaults}
    items: dict[str, Item] = {}
    for item in decl.items:
        if item.name in items:
            report(item.name_pos, f"item '{item.name}' is declared twice")
            continue
        dims = []
        for index in item.indices:
            for end in (index.range.lo, index.range.hi):
                for name in end.names:
                    if name not in constants:
                        report(end.pos, f"the range of '{item.name}({index.name})' may only use {N} and the "
                                        f"structure's arguments, not '{name}'", _constants_hint(defaults))
            dims.append(Dim(index.name, index.range.lo, index.range.hi))
        positional = sum(d.positional for d in dims)
        if positional > 2:
            report(item.pos, f"item '{item.name}' has {positional} position indices (ranges using {N}); at most 2",
                   "a position (as in a chain) or a span (two positions)")
        items[item.name] = Item(item.name, tuple(dims))
    rules = []
    parts = 0
    for decl_rule in decl.rules:
        rule = _check_rule(decl_rule, items, defaults, decl.observed, report, parts)
        if rule is not None:
            parts += rule.kind == "part"
            rules.append(rule)
    if not any(r.kind == "goal" for r in decl.rules):
        report(decl.name_pos, f"structure '{decl.name}' has no goal", "add e.g. `goal end(n, c) for c in 0..K-1`")
    if not any(r.kind == "axiom" or (r.kind == "part" and not r.body) for r in decl.rules):
        report(decl.name_pos, f"structure '{decl.name}' has no axiom and no part without a body, so nothing can be built",
               "add e.g. `axiom end(0, START)`")
    if errors_before[0]:
        return None
    program = Program(decl.name, decl.observed, defaults, items, rules)
    if not _choose_order(program, decl, report):
        return None
    for rule in program.parts:
        for attr in rule.where:
            if attr.kind == "span" and span_bound(rule, attr, defaults) is None:
                report(attr.pos, f"part '{rule.name}': the span {attr.observed}[{attr.index.text}:{attr.end.text}] can "
                                 "grow with the input, and a span is a word of a vocabulary of runs up to a length",
                       "bound its length by the structure's arguments, e.g. `for i in j-maxlen..j-1`")
    return None if errors_before[0] else program


def _constants_hint(defaults: dict[str, int]) -> str:
    return f"the names a range may use: {', '.join([N, *defaults])}"


def _check_rule(decl: ir.RuleDecl, items: dict[str, Item], defaults: dict[str, int], observed: tuple[str, ...],
                report: ErrorSink, part_index: int) -> Rule | None:
    ok = True
    constants = {N, *defaults}
    refs = (decl.head, *decl.body)
    bounds: dict[str, tuple[list[ir.Lin], list[ir.Lin]]] = {}
    for ref in refs:
        item = items.get(ref.name)
        if item is None:
            report(ref.pos, f"unknown item '{ref.name}'", did_you_mean(ref.name, items) or "declare it with `item`")
            ok = False
            continue
        if len(ref.args) != len(item.dims):
            report(ref.pos, f"item '{ref.name}' has {len(item.dims)} indices, not {len(ref.args)}",
                   f"it is declared as {ref.name}({', '.join(d.name for d in item.dims)})")
            ok = False
            continue
        for arg, dim in zip(ref.args, item.dims):
            variables = [name for name in arg.names if name not in constants]
            if len(arg.terms) == 1 and arg.terms[0][1] == 1 and arg.const == 0 and variables:
                lo, hi = bounds.setdefault(variables[0], ([], []))
                lo.append(dim.lo)
                hi.append(dim.hi)
            else:
                for name in variables:
                    bounds.setdefault(name, ([], []))
    for var_range in decl.ranges:
        lo, hi = bounds.setdefault(var_range.name, ([], []))
        lo.append(var_range.range.lo)
        hi.append(var_range.range.hi)
    for attr in decl.where:
        for lin in (attr.index, attr.end) if attr.end is not None else (attr.index,):
            for name in lin.names:
                if name not in constants:
                    bounds.setdefault(name, ([], []))
        if attr.kind in ("token", "span") and attr.observed not in observed:
            report(attr.pos, f"'{attr.observed}' is not an observed variable of this structure",
                   f"the structure reads {', '.join(observed)}")
            ok = False
    unbounded = [v for v, (lo, hi) in bounds.items() if not lo or not hi]
    for var in unbounded:
        report(decl.pos, f"variable '{var}' has no range", f"give it one: `for {var} in LO..HI`, or use it as an "
                                                             "item's index")
        ok = False
    kind = decl.kind
    name = decl.name or kind
    if kind == "part":
        missing = [v for v in bounds if v not in decl.params]
        extra = [v for v in decl.params if v not in bounds]
        if missing or extra:
            report(decl.name_pos, f"part '{name}' declares the variables ({', '.join(decl.params)}) but uses "
                                  f"({', '.join(bounds)})", "list every variable of the rule once, as its attributes")
            ok = False
        attribute_names = list(decl.params) + [a.name for a in decl.where]
        if len(set(attribute_names)) < len(attribute_names):
            report(decl.name_pos, f"part '{name}' names an attribute twice")
            ok = False
    if decl.label is not None:
        observed_name, index, end, variable = decl.label
        used = [*index.names, *(end.names if end is not None else ())]
        if observed_name not in observed or variable not in decl.params or any(
                v not in bounds and v not in constants for v in used):
            report(decl.pos, f"`labels {observed_name}[...] as {variable}`: the tokens must be of an observed "
                             "variable of the structure, at indices of the part's variables, and the label one of them")
            ok = False
    if decl.attach is not None and any(v not in bounds and v not in constants
                                       for lin in decl.attach if lin is not None for v in lin.names):
        report(decl.pos, "`attaches DEPENDENT to HEAD`: both are positions written with the part's variables")
        ok = False
    if not ok:
        return None
    order = _loop_order(bounds, constants)
    if order is None:
        report(decl.pos, "the variables' ranges depend on each other in a circle", "bound each variable by earlier ones")
        return None
    return Rule(kind, name, part_index if kind == "part" else -1, decl.params if kind == "part" else tuple(bounds),
                decl.head, decl.body, bounds, order, decl.where, decl.pos, decl.label, decl.attach)


def _loop_order(bounds: dict[str, tuple[list[ir.Lin], list[ir.Lin]]], constants: set[str]) -> list[str] | None:
    """Each variable after those its bounds mention; positions (variables whose range grows with
    n) before the others where that allows, so what depends on positions alone (the levels'
    scale factor, a token) is computed outside the loops over states and labels (a CKY rule's
    split point outside its labels: one exp per split, not one per split and label)."""
    positional = _positional(bounds)
    order: list[str] = []
    left = list(bounds)
    while left:
        ready = [v for v in left if all(name in constants or name in order
                                        for end in bounds[v][0] + bounds[v][1] for name in end.names)]
        if not ready:
            return None
        chosen = next((v for v in ready if v in positional), ready[0])
        order.append(chosen)
        left.remove(chosen)
    return order


def _positional(bounds: dict[str, tuple[list[ir.Lin], list[ir.Lin]]]) -> set[str]:
    """The variables whose ranges mention n, or a variable that does."""
    positional: set[str] = set()
    changed = True
    while changed:
        changed = False
        for var, (lo, hi) in bounds.items():
            if var not in positional and any(name == N or name in positional for end in lo + hi for name in end.names):
                positional.add(var)
                changed = True
    return positional


# --- grounding -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Firing:
    """One rule firing: the rule, its variables' values, the head's and the body's indices."""

    rule: Rule
    env: dict
    head: tuple[int, ...]
    body: tuple[tuple[str, tuple[int, ...]], ...]


def ground(program: Program, n: int, args: dict[str, int]) -> Iterator[Firing]:
    """Every firing of every rule for an example of length n (all indices within their ranges)."""
    for rule in program.rules:
        yield from _ground_rule(program, rule, {N: n, **args})


def assignments(rule: Rule, variables: list[str], env: dict[str, int]) -> Iterator[dict[str, int]]:
    """Every assignment of `variables` (in loop order, each bounded by those before it) within
    their ranges."""
    if not variables:
        yield env
        return
    var = variables[0]
    lo = max(evaluate(e, env) for e in rule.bounds[var][0])
    hi = min(evaluate(e, env) for e in rule.bounds[var][1])
    for value in range(lo, hi + 1):
        yield from assignments(rule, variables[1:], {**env, var: value})


def closure(rule: Rule, wanted: set[str]) -> list[str]:
    """The variables in `wanted` and those their ranges need, in loop order."""
    wanted = set(wanted)
    changed = True
    while changed:
        changed = False
        for var in list(wanted):
            for end in rule.bounds[var][0] + rule.bounds[var][1]:
                for name in end.names:
                    if name in rule.bounds and name not in wanted:
                        wanted.add(name)
                        changed = True
    return [v for v in rule.order if v in wanted]


def _ground_rule(program: Program, rule: Rule, env: dict[str, int]) -> Iterator[Firing]:
    for values in assignments(rule, rule.order, env):
        refs = []
        for ref in (rule.head, *rule.body):
            indices = tuple(evaluate(a, values) for a in ref.args)
            dims = program.items[ref.name].dims
            if not all(evaluate(d.lo, values) <= i <= evaluate(d.hi, values) for i, d in zip(indices, dims)):
                break
            refs.append((ref.name, indices))
        else:
            if all(_where_holds(a, values) for a in rule.where):
                yield Firing(rule, values, refs[0][1], tuple(refs[1:]))


def _where_holds(attr: ir.AttrDef, values: dict[str, int]) -> bool:
    """A numeric attribute lies in its range; a span is not empty and lies inside the example
    (a token's position is checked by the token arrays' bounds, as every index is)."""
    if attr.kind == "numeric":
        return evaluate(attr.range.lo, values) <= evaluate(attr.index, values) <= evaluate(attr.range.hi, values)
    if attr.kind == "span":
        return 0 <= evaluate(attr.index, values) < evaluate(attr.end, values) <= values[N]
    return 0 <= evaluate(attr.index, values) < values[N]


def _choose_order(program: Program, decl: ir.StructureDecl, report: ErrorSink) -> bool:
    """Find the level kind under which every firing builds its head after its body, on lengths
    1..5 and arguments capped at 3; report the first rule that defeats both kinds."""
    small = {name: min(value, 3) for name, value in program.defaults.items()}
    firings = [f for n in range(1, 6) for f in _derivable(list(ground(program, n, small)))]
    failure = None
    for kind in ("last", "width"):
        if kind == "width" and any(len(item.positions) == 1 for item in program.items.values()):
            continue
        program.kind = kind
        failure = _type_order(program, firings)
        if failure is None:
            return True
    rule = failure.rule if failure is not None else program.rules[0]
    report(rule.pos, f"cannot order the chart: this rule builds '{rule.head.name}' from an item on the same "
                     "position or span (or a later one)",
           "every rule must build its head from items ending earlier or from shorter spans")
    return False


def _derivable(firings: list[Firing]) -> list[Firing]:
    """The firings (goals aside) all of whose body items can be built: the others never fire,
    whatever order the chart is built in."""
    built: set = set()
    waiting = [f for f in firings if f.rule.kind != "goal"]
    usable: list[Firing] = []
    progress = True
    while progress:
        progress = False
        rest = []
        for firing in waiting:
            if all(body in built for body in firing.body):
                usable.append(firing)
                head = (firing.rule.head.name, firing.head)
                if head not in built:
                    built.add(head)
                    progress = True
            else:
                rest.append(firing)
        waiting = rest
    return usable


def _type_order(program: Program, firings: list[Firing]) -> Firing | None:
    """Order the item types on a level (bodies on the head's level first); None when it works,
    else a firing that goes backwards or round a circle."""
    same_level: dict[str, set[str]] = {name: set() for name in program.items}
    for firing in firings:
        n = firing.env[N]
        head_level = program.level(firing.rule.head.name, firing.head, n)
        for name, indices in firing.body:
            level = program.level(name, indices, n)
            if level > head_level:
                return firing
            if level == head_level:
                if name == firing.rule.head.name:
                    return firing
                same_level[firing.rule.head.name].add(name)
    order: dict[str, int] = {}
    while len(order) < len(same_level):
        ready = [t for t in same_level if t not in order and same_level[t] <= set(order)]
        if not ready:
            stuck = [t for t in same_level if t not in order]
            return next(f for f in firings if f.rule.head.name in stuck)
        for t in ready:
            order[t] = len(order)
    program.type_order = order
    return None


def span_bound(rule: Rule, attr: ir.AttrDef, args: dict[str, int]) -> int | None:
    """The longest the span attribute `attr` of a part gets under the arguments (its ends' variables
    grounded at two lengths); None when it grows with the input."""
    names = {v for v in (*attr.index.names, *attr.end.names) if v in rule.bounds}
    variables = closure(rule, names)
    size = 2 * max([*args.values(), 1]) + 6
    found = [max((evaluate(attr.end, a) - evaluate(attr.index, a) for a in assignments(rule, variables, {N: n, **args})),
                 default=0) for n in (size, size + 7)]
    return found[0] if found[0] == found[1] else None


def parts_per_level(program: Program) -> int:
    """How many parts a decoded derivation may hold per level of its chart (n + 3 levels): the
    read-back's buffers (generated code) and the decode buffer (decoded_size) both size
    by it, and a derivation longer than that is refused rather than cut."""
    return 4 * len(program.items)


def arity_bound(program: Program) -> int:
    """The most values a decoded part takes: its number and its variables."""
    return 1 + max((len(r.params) for r in program.parts), default=0)


def decoded_size(program: Program, n):
    """The decode buffer of an example of n tokens (n may be an array of lengths): out[0] the
    number of parts, then each part's number and variables (arity_bound values)."""
    return 1 + (n + 3) * parts_per_level(program) * arity_bound(program)


def all_items(program: Program, n: int, args: dict[str, int]) -> Iterator[tuple[str, tuple[int, ...]]]:
    env = {N: n, **args}
    for item in program.items.values():
        ranges = [range(evaluate(d.lo, env), evaluate(d.hi, env) + 1) for d in item.dims]
        for values in itertools.product(*ranges):
            yield item.name, values
