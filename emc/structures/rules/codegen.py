"""How a structure written as rules becomes generated code (emc/codegen/templates/rules.py.j2).

The template holds the fixed glue (the ABI's entry points); `program_code` writes the program's
passes from emc/structures/rules/emit.py's loop nests: `_inside` (sum or max, level by level),
`_outside` (part marginals into expected counts), `_readback` (the best derivation, or a draw from
the posterior, as a list of parts) and `_part_counts` (a list of parts into counts: hard and
sampling EM). A part's attributes are its variables (`rv<i>` inside its loops) and its `where`
attributes (an index expression, or a token read at one).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from emc.spec.model import CheckedModel, ResolvedAttr
from emc.spec.structure import Binding
from emc.structures.rules.emit import (Names, Nest, Step, Sum, build_nest, ordered_product, cell_code, index, layout_code, level_code, needs_of,
                                       moving_locals, part_place, product, render_nest, split_product)
from emc.structures.rules.program import N, Program, Rule, arity_bound, closure, parts_per_level
from emc.structures.rules import label_bounds, posterior_kind, takes_given
from emc.structures.rules.spans import span_attributes
from emc.structures.rules.contraction import Contractions, contract_inside, contract_outside, contraction_of
from emc.structures.rules.lanes import (BATCH_MIN, LANES, STRIDE, WIDTH, NotLaneable, check_reads, dtype, lanes_inside,
                                        lanes_outside)
from emc.structures.rules.stages import two_stage_inside, two_stage_outside

TEMPLATE = "rules.py.j2"
# The arguments are the spec's (`structure tags(x, states=45)`): their meta constants are numbered
# (M_0, ...; emc/codegen/render.py), and extra_context finds them by their slots' labels.
ARGUMENTS_FROM_SPEC = True
# The most a level's values are scaled up by: 1 / (the largest normal double) would overflow
SHRINK_MOST = 1e300


def arrays(binding: Binding) -> list[str]:
    """offsets: example boundaries in the token arrays; with span attributes (`x[i:j]`), spans and
    span_length (emc/structures/rules/spans.py); for a program whose examples may come with
    their structure given, given_start and given_flags (emc/structures/rules/given.py)."""
    program = _program(binding)
    return (["offsets"] + (["spans", "span_length"] if span_attributes(program) else [])
            + (["given_start", "given_flags"] if takes_given(program) else []))


def _program(binding: Binding) -> Program:
    return binding.structure.program


def _attribute(binding: Binding, attr: ResolvedAttr, slot: str) -> tuple[Rule, str]:
    program = _program(binding)
    rule = next(r for r in program.parts if r.name == slot)
    return rule, attr.attribute.path.rsplit(".", 1)[1]


def _names(binding: Binding, tables: list[str] | None = None) -> Names:
    program = _program(binding)
    return Names(program, {name: f"ra{k}" for k, name in enumerate(program.defaults)}, tables or [])


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    rule, name = _attribute(binding, attr, slot)
    names = _names(binding)
    if name in rule.params:
        return names.var(rule, name)
    where = next(a for a in rule.where if a.name == name)
    if where.kind == "span":
        start, end = names.lin(where.index, rule), names.lin(where.end, rule)
        return f"rspans[{index(f'(first + {start}) * rspan_max + {end} - {start} - 1')}]"
    return names.lin(where.index, rule)


def token_expr(binding: Binding, attr: ResolvedAttr, slot: str, array: str) -> str:
    rule, name = _attribute(binding, attr, slot)
    where = next(a for a in rule.where if a.name == name)
    return f"{array}[{index(f'first + {_names(binding).lin(where.index, rule)}')}]"


# --- the passes --------------------------------------------------------------------------------


def extra_context(model: CheckedModel, context: dict) -> dict:
    """The program's passes as code, for the template."""
    binding = model.binding
    program = _program(binding)
    tables = list(dict.fromkeys(read.table for reads in context["slots"].values() for read in reads))
    names = _names(binding, tables)
    names.small, names.bounded_rows = _small_tables(model, context, tables)
    arg_const = {label.split(":", 1)[1]: const for const, _index, label in context["meta"] if label.startswith("arg:")}
    prologue = [f"{local} = meta[{arg_const[name]}]" for name, local in names.args.items()]
    if span_attributes(program):
        prologue += ["rspans = array(ints, layout, A_SPANS)", "rspan_max = array(ints, layout, A_SPAN_LENGTH)[0]"]
    prologue += layout_code(names)
    # an example's own locals (ex is bound: the one-example passes): whether its structure is given
    example_prologue = [f"rpw = {posterior_width_code(names)}"]
    if takes_given(program):
        names.given = True
        example_prologue += ["rgb = array(ints, layout, A_GIVEN_START)", "rgf = array(ints, layout, A_GIVEN_FLAGS)",
                             "rgiven = rgb.shape[0] > 0 and rgb[ex] >= 0", "rgo = rgb[ex] if rgiven else 0"]
    reads = context["slots"]
    tokens = context["token_reads"]
    table_locals = [line for q, table in enumerate(tables)
                    for line in (f"ro{q} = meta[{table} + TABLE_OFFSET]", f"rr{q} = meta[{table} + TABLE_ROWS]")]
    table_locals += [f"rd{tables.index(table)} = int(derived[{q}])" for q, table in enumerate(names.small)]
    # the readers of tables with few rows, in the passes that read weights (_part_counts does not)
    readers = [f"rt{tables.index(table)} = table_reader(params, meta, {table})" for table in names.bounded_rows]
    readback = _readback(names, reads, tokens)
    readback["goal"] = readers + readback["goal"]
    lanes = _lanes(names, reads, tokens)
    # the template's prologue() and tables() as lines, for the functions a pass calls
    preamble = ["offsets = array(ints, layout, A_OFFSETS)", "first = offsets[ex]", "n = offsets[ex + 1] - first",
                *(f"{local} = meta[{const}]" for local, const, _space in context["sizes"]),
                *(f"{local} = array(ints, layout, {const})" for local, const, _name in context["token_arrays"]),
                *prologue, *example_prologue, *table_locals]
    inside, inside_functions = _inside(names, reads, tokens, preamble)
    return {
        "rule_lanes": lanes is not None and LANES,
        "rule_lanes_saved": lanes[2] if lanes else 0,
        "rule_batch_min": BATCH_MIN,
        "rule_lanes_inside": readers + lanes[0] if lanes else [],
        "rule_lanes_outside": readers + lanes[1] if lanes else [],
        "rule_prologue": prologue,
        "rule_example_prologue": example_prologue,
        "rule_given": takes_given(program),
        "rule_inside": readers + inside,
        "rule_inside_functions": inside_functions,
        "rule_goal": _goal(names),
        "rule_outside": readers + _outside(names, reads, tokens),
        "rule_readback": readback,
        "rule_part_counts": _part_counts(names, reads, tokens),
        "rule_width": arity_bound(program),
        "rule_parts_per_level": parts_per_level(program),
        "rule_item_width": 1 + max((len(i.dims) for i in program.items.values()), default=0),
        "rule_items": list(program.items),
        "rule_parts": [r.name for r in program.parts],
        "rule_small_tables": names.small,
        "rule_table_locals": table_locals,
    }


def _small_tables(model: CheckedModel, context: dict, tables: list[str]) -> tuple[list[str], list[str]]:
    """The tables all of whose axes are bounded by the structure's arguments (a transition matrix,
    a grammar's rules, a length distribution): prepare() writes their weights out once per E-step
    call. A table with a vocabulary axis (a state's words) may be large, and stepwise EM prepares
    once per mini-batch: it is read lazily; the second list holds those whose rows the arguments
    bound (an emission's states), read through a table_reader."""
    const = {label.split(":", 1)[1]: c for c, _index, label in context["meta"] if label.startswith("table:")}
    small, bounded_rows = [], []
    structure = model.structure
    for factor in model.tables():
        if const.get(factor.table) not in tables:
            continue
        bounded = [structure.is_bounded(s) for s in factor.context_spaces]
        if all(bounded) and all(structure.is_bounded(s) for s in factor.outcome_spaces):
            small.append(const[factor.table])
        elif all(bounded):
            bounded_rows.append(const[factor.table])
    return small, bounded_rows


def _level_binding(names: Names, rule: Rule) -> tuple[dict[str, str], list[Step]]:
    """Binds the head's level to `lev`: a head index that is one variable (plus a constant) is
    solved for it; any other becomes a condition."""
    program = names.program
    item = program.items[rule.head.name]
    args = rule.head.args
    pos = item.positions
    if not pos:
        return {}, [Step(f"lev == {level_code(names, rule.head, rule)}", set(), "if")]
    bound: dict[str, str] = {}
    steps: list[Step] = []
    last = args[pos[-1]]
    first = args[pos[0]]
    if program.kind == "last":
        solved = _solve(last, "(lev - 1)", names)
    else:  # width: last - first == lev - 1, solved for an end that is one variable, which neither
        # the other end nor that end's variables' ranges mention (they are looped before it is set)
        solved = None
        for end, other, value in ((last, first, f"({names.lin(first, rule)} + lev - 1)"),
                                  (first, last, f"({names.lin(last, rule)} - lev + 1)")):
            var = _solvable(end, names)
            if solved is None and var is not None and var not in other.names and not any(
                    var in bound.names for v in other.names if v in rule.bounds
                    for bound in rule.bounds[v][0] + rule.bounds[v][1]):
                solved = _solve(end, value, names)
    if solved is not None:
        bound[solved[0]] = solved[1]
    else:
        gap = names.lin(last, rule) if program.kind == "last" else f"{names.lin(last, rule)} - {names.lin(first, rule)}"
        steps.append(Step(f"{gap} == lev - 1", needs_of(gap), "if"))
    return bound, steps


def _solve(lin, value: str, names: Names) -> tuple[str, str] | None:
    """var = value - const, for an index that is one variable plus a constant."""
    var = _solvable(lin, names)
    if var is None:
        return None
    return var, f"{value} - {lin.const}" if lin.const else value


def _solvable(lin, names: Names) -> str | None:
    if len(lin.terms) == 1 and lin.terms[0][1] == 1 and lin.terms[0][0] != N and lin.terms[0][0] not in names.args:
        return lin.terms[0][0]
    return None


def _rules_by_head(program: Program, kinds: tuple[str, ...]) -> list[Rule]:
    return sorted((r for r in program.rules if r.kind in kinds), key=lambda r: program.type_order[r.head.name])


def _inside(names: Names, reads: dict, tokens: dict, preamble: list[str]) -> tuple[list[str], list[Function]]:
    """The inside pass's level loop, and when it is long the functions it calls for a level: the
    reference scale of its rules' firings, and their values, a few rules to a function (_chunks)."""
    reference, values, top, scale = _inside_pieces(names, reads, tokens, lanes=None)
    functions: list[Function] = []
    if sum(map(len, reference + values)) <= CHUNK_LINES:  # a short pass: one function compiles quicker
        scales, adds = _pad(sum(reference, [])), _pad(sum(values, []))
    else:
        scales, adds = [], []
        for c, chunk in enumerate(_chunks(reference)):
            functions.append(Function(f"_inside_scale_{c}", SCALE_ARGS, _with_preamble(
                preamble, ["ref = -np.inf", *chunk, "return ref"])))
            scales.append(f"    ref = max(ref, _inside_scale_{c}({SCALE_ARGS}))")
        for c, chunk in enumerate(_chunks(values)):
            # a table's reader (a division per row) is made once a pass, not once a level
            readers = sorted(set(re.findall(r"\brt\d+\b", "\n".join(chunk))), key=lambda name: int(name[2:]))
            params = ", ".join([VALUES_ARGS, *readers])
            functions.append(Function(f"_inside_values_{c}", params, _with_preamble(preamble, chunk)))
            adds.append(f"    _inside_values_{c}({params})")
    lines = ["for lev in range(n + 3):", "    ls[lev] = -np.inf", "    ref = -np.inf", *scales,
             "    if ref == -np.inf:", "        continue", "    ls[lev] = ref", *adds, *_pad(top),
             "    if top > 0.0:", *_pad(scale, 8), "        ls[lev] = ref - np.log(shrink)", "    else:",
             "        ls[lev] = -np.inf"]
    return lines, functions


@dataclass
class Function:
    """A function the template writes out before the pass that calls it."""

    name: str
    params: str
    lines: list[str]


# what the inside pass's functions are passed (besides the table readers the values read; the
# other locals they compute: _with_preamble)
SCALE_ARGS = "ex, ints, layout, meta, ls, lev"
VALUES_ARGS = "ex, ints, layout, meta, params, derived, semiring, chart, ls, lev, ref"
# Numba's compile time grows faster than a function's length: evg.em's inside pass took 11.8 s as
# one function and 6.5 s as three, its reference scales, its values and the rest. Smaller pieces
# than that gain nothing (each function costs a few tenths of a second; the outside pass, one
# kind of loop, took as long in three pieces as in one), so a level's rules are written up to
# CHUNK_LINES lines to a function.
CHUNK_LINES = 150
IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


def _chunks(pieces: list[list[str]]) -> list[list[str]]:
    """Consecutive pieces joined up to CHUNK_LINES lines (a longer piece alone)."""
    chunks: list[list[str]] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + len(piece) <= CHUNK_LINES:
            chunks[-1].extend(piece)
        else:
            chunks.append(list(piece))
    return chunks


def _with_preamble(preamble: list[str], body: list[str]) -> list[str]:
    """body after the preamble's assignments it reads (and those they read), in their order."""
    needed = set(IDENTIFIER.findall("\n".join(body)))
    kept = []
    for line in reversed(preamble):
        target, expr = line.split(" = ", 1)
        if target in needed:
            kept.append(line)
            needed |= set(IDENTIFIER.findall(expr))
    return [*reversed(kept), *body]


def _inside_pieces(names: Names, reads: dict, tokens: dict, lanes: Contractions | None) -> tuple[list, ...]:
    """A level's inside pass in four pieces: its reference scale `ref` (the largest body scale of
    any firing) and its items' values, as lists of lines a rule, then their largest (`top`) and the
    scaling by its inverse. For lanes (emc/structures/rules/lanes.py), no test skips a zero (the
    lanes share their loops), no rule takes two stages and a contraction's sum is a matrix product
    (contraction.py)."""
    program, batched = names.program, lanes is not None
    reference, values = [], []
    for rule in _rules_by_head(program, ("axiom", "part")):
        bound, steps = _level_binding(names, rule)
        loop_vars = _level_vars(names, rule, bound)
        nest = build_nest(names, rule, [], [], bound, "0.0", loop_vars=loop_vars)
        known = {names.var(rule, v) for v in [*loop_vars, *bound]}
        nest.steps = steps + [s for s in nest.steps if (s.kind == "if" and s.needs <= known)
                              or s.text.startswith("rf") or s.text.startswith("rv")]
        nest.steps = [Step(s.text.replace("rf = np.exp(", "rs = (", 1), s.needs, s.kind) if s.text.startswith("rf")
                      else s for s in nest.steps]
        reference.append(render_nest(nest, ["ref = max(ref, rs)"], 0, skip_zero=False))
    for rule in _rules_by_head(program, ("axiom", "part")):
        bound, steps = _level_binding(names, rule)
        nest = build_nest(names, rule, _reads(reads, rule), _tokens(tokens, rule), bound, "ref")
        nest.steps = steps + nest.steps
        contraction = None
        if batched:
            check_reads(nest, {read.local for read in _tokens(tokens, rule)})
            contraction = contraction_of(names, rule, nest, _reads(reads, rule), rule.index, lanes, inside=True)
        if contraction is not None:
            contract_inside(nest, contraction)
        target = f"chart[{nest.head_cell}]"
        staged = None if batched else two_stage_inside(nest, target, 0)
        values.append(staged or render_nest(nest, [], 0, accumulate=(target, nest.product), skip_zero=not batched))
    top = ["top = 0.0", *_level_cells(names, "top = max(top, chart[cell])", 0)]
    # one division a level, then products (a division per cell cost the chain's lanes 12%); capped
    # because 1 / top overflows when top is subnormal: ls records the scale applied, not log(top)
    scale = [f"shrink = min(1.0 / top, {SHRINK_MOST})", *_level_cells(names, "chart[cell] *= shrink", 0)]
    return reference, values, top, scale


def _pad(lines: list[str], pad: int = 4) -> list[str]:
    return [" " * pad + line for line in lines]


def _lanes(names: Names, reads: dict, tokens: dict) -> tuple[list[str], list[str], int] | None:
    """The batched E-step's inside and outside passes over lanes (emc/structures/rules/lanes.py)
    (each allocating the arrays over the lanes it uses), for a program whose levels are positions (a chain, a
    segmentation: its loops are short; a chart over spans already runs at its built-in twin's
    speed one example at a time), with the number of chart-sized parts `rsaved` holds (one a
    contraction); None for others, or when the lanes cannot share a pass."""
    if names.program.kind != "last":
        return None
    names = replace(names, given=False)  # an example whose structure is given goes one by one
    contractions = Contractions()
    try:
        products = ["rsaved"] + [f"rcm{rule.index}" for rule in names.program.parts]
        reference, values, top, scale = _inside_pieces(names, reads, tokens, contractions)
        inside, inside_arrays = lanes_inside(sum(reference, []), sum(values, []), top, scale, _goal(names), products)
        start, levels, close = _outside_pieces(names, reads, tokens, contractions)
        outside, outside_arrays = lanes_outside(start, levels, contractions.close() + close, products)
    except NotLaneable:
        return None
    stride = f"{STRIDE} = lane_stride({WIDTH})"
    return ([stride, *contractions.setup(True), *_lane_arrays(inside_arrays), *inside],
            [stride, *contractions.setup(False), *_lane_arrays(outside_arrays), *outside],
            len(contractions.found))


def _lane_arrays(names: list[str]) -> list[str]:
    return [f"rl_{name} = np.empty(ln, {dtype(name)})" for name in names]


def _level_vars(names: Names, rule: Rule, bound: dict[str, str]) -> list[str]:
    """The variables the levels of a firing depend on, with what their ranges need."""
    wanted = set()
    for ref in (rule.head, *rule.body):
        item = names.program.items[ref.name]
        for d in item.positions:
            wanted |= {v for v in ref.args[d].names if v in rule.bounds}
    for code in bound.values():
        wanted |= {rule.order[int(v[2:])] for v in needs_of(code)}
    return closure(rule, wanted)


def _level_cells(names: Names, action: str, indent: int) -> list[str]:
    """Loops over every cell of every item on level `lev`, doing `action` with `cell`."""
    program = names.program
    lines = []
    for k, item in enumerate(program.items.values()):
        pad = indent
        pos = item.positions
        values = []
        out = []
        if not pos:
            out.append(" " * pad + f"if lev == {level_code(names, _ref(item.name, []), None, [])}:")
            pad += 4
        for d, dim in enumerate(item.dims):
            local = f"rc{d}"
            values.append(local)
            if pos and d == pos[-1]:
                value = "lev - 1" if program.kind == "last" else f"rc{pos[0]} + lev - 1"
                out.append(" " * pad + f"{local} = {value}")
                out.append(" " * pad + f"if lo{k}_{d} <= {local} < lo{k}_{d} + z{k}_{d}:")
            else:
                out.append(" " * pad + f"for {local} in range(lo{k}_{d}, lo{k}_{d} + z{k}_{d}):")
            pad += 4
        cell = " + ".join([f"b{k}"] + [f"({v} - lo{k}_{d}) * s{k}_{d}" for d, v in enumerate(values)])
        out.append(" " * pad + f"cell = {cell}")
        out.append(" " * pad + action)
        lines += out
    return lines


def _ref(name: str, args: list):
    from emc.spec import ir
    return ir.ItemRef(name, tuple(args), ir.Pos.unknown())


def _reads(reads: dict, rule: Rule) -> list:
    return list(reads.get(rule.name, [])) if rule.kind == "part" else []


def _tokens(tokens: dict, rule: Rule) -> list:
    return list(tokens.get(rule.name, [])) if rule.kind == "part" else []


def _goal(names: Names) -> list[str]:
    """total: (+) of the goal items' values (all on level glev)."""
    lines = ["total = 0.0", "glev = 0"]
    for rule in names.program.goals:
        nest = build_nest(names, rule, [], [], {}, "0.0")
        nest.steps = [s for s in nest.steps if not s.text.startswith(("rf", "ru"))]
        lines += render_nest(nest, [f"total = plus(semiring, total, chart[{nest.head_cell}])",
                                    f"glev = {level_code(names, rule.head, rule)}"], 0)
    return lines


def _outside(names: Names, reads: dict, tokens: dict) -> list[str]:
    start, levels, close = _outside_pieces(names, reads, tokens, lanes=None)
    return [*start, "for lev in range(n + 2, -1, -1):", "    if ls[lev] == -np.inf:", "        continue", *_pad(levels),
            *close]


def _outside_pieces(names: Names, reads: dict, tokens: dict, lanes: Contractions | None) -> tuple[list[str], ...]:
    """The outside pass in three pieces: the goal's outside, a level's part marginals (into the
    counts and the posteriors) and the small tables' counts. For lanes (emc/structures/rules/
    lanes.py): no posteriors, no test skips a zero, no rule takes two stages, and the example's
    weight multiplies the goal's outside (so every count holds it) instead of each count."""
    program, batched = names.program, lanes is not None
    weight = "" if batched else " * weight"
    lines = ["posting = post.shape[0] > 0"] if not batched else []
    lines += ["counting = dense.shape[0] > 0"]
    local_counts = _local_count_tables(names, reads)
    lines += [f"rsc{q} = np.zeros(rr{q} * meta[{names.tables[q]} + TABLE_OUTCOMES])" for q in local_counts]
    for rule in program.goals:
        nest = build_nest(names, rule, [], [], {}, "0.0")
        nest.steps = [s for s in nest.steps if not s.text.startswith(("rf", "ru"))]
        goal = f"np.exp(ls[{level_code(names, rule.head, rule)}] - log_z)"
        lines += render_nest(nest, [f"out[{nest.head_cell}] = {'weight * ' if batched else ''}{goal}"], 0)
    start, lines = lines, []
    for rule in reversed(_rules_by_head(program, ("part",))):
        rule_reads = _reads(reads, rule)
        bound, steps = _level_binding(names, rule)
        nest = build_nest(names, rule, rule_reads, _tokens(tokens, rule), bound, "ls[lev]")
        nest.steps = steps + nest.steps + [Step(f"roh = out[{nest.head_cell}]", needs_of(nest.head_cell), "let")]
        if not batched and (not nest.loops or nest.loops[-1][0] not in needs_of(nest.head_cell)):
            # a zero outside skips the loops below it; inside the innermost loop the test would
            # only keep LLVM from vectorising it
            nest.steps.append(Step("roh != 0.0", needs_of(nest.head_cell) | {"roh"}, "if"))
        contraction = contraction_of(names, rule, nest, rule_reads, rule.index, lanes, inside=False) if batched else None
        # a factor's count sums the marginals of the firings that share its entry, in a local,
        # over the loops deeper than the factor's read (an emission's over the previous states)
        learned = [(q, read) for q, read in enumerate(rule_reads)
                   if read.learned and (contraction is None or q != contraction.read)]
        store, sums = [], []
        if contraction is not None:
            store, after = contract_outside(nest, contraction, needs_sum=bool(learned))
            sums.append(after)
        # each summed value's term: the head's outside times the firing's factors, leaving out a
        # body's own inside (its outside) and a small table's own weight (its local counts hold
        # marginal / weight; the weight multiplies them once, when they are added to the counts)
        factors = ["roh"] + nest.product
        terms = {f"rm{q}": [f for f in factors if f != f"rw{q}" or read.table not in names.small]
                 for q, read in learned}
        sums += [Sum(f"rm{q}", _read_needs(nest, q), _outside_count(names, read, f"rm{q}", weight)) for q, read in learned]

        # what the part labels (a token's or a span's label, a dependent's head) sums its
        # marginals the same way, into the posteriors `post` (posterior_example's; empty otherwise)
        posting = None if batched else _posterior_lines(names, rule)
        counts = [(f"rw{q}" if read.table in names.small else "", lambda value, read=read: _outside_count(names, read, value))
                  for q, read in learned]
        staged = None if batched else two_stage_outside(nest, counts, 0, posting)
        if staged is not None:
            lines += staged
            continue
        if posting is not None:
            terms["rp"] = factors
            sums.append(Sum("rp", posting[0], ["if posting:"] + ["    " + line for line in posting[1]]))

        # a body item's outside that the innermost loop does not change is summed in a local
        # there and added once after it (a CKY rule's children, when the loop runs over the parent)
        for q, cell in enumerate(nest.body_cells):
            terms[f"rb{q}"] = [f for f in factors if f != f"ru{q}"]
            sums.append(Sum(f"rb{q}", needs_of(cell), [f"out[{cell}] += rb{q}"]))
        sums += _moving_sum(nest, terms, [s for s in sums if s.name])

        def inner(hoisted: set[str], nest=nest, learned=learned, posting=posting, terms=terms, store=store) -> list[str]:
            moving = split_product(nest, factors)[1]
            lines = [f"rg += {product(moving)}"] if "rg" in hoisted else []
            lines += store
            for q, read in learned:
                if f"rm{q}" not in hoisted:
                    lines += _outside_count(names, read, ordered_product(nest, terms[f"rm{q}"]), weight)
            if posting is not None and "rp" not in hoisted:
                lines += ["if posting:", f"    rp = {ordered_product(nest, factors)}"] + [
                    "    " + line for line in posting[1]]
            for q, cell in enumerate(nest.body_cells):
                if f"rb{q}" not in hoisted:
                    lines.append(f"out[{cell}] += {ordered_product(nest, terms[f'rb{q}'])}")
            return lines

        lines += render_nest(nest, inner, 0, sums=sums, skip_zero=not batched)
    levels, close = lines, []
    for q in local_counts:
        close += ["if counting:", f"    for rsq in range(rsc{q}.shape[0]):", f"        if rsc{q}[rsq] != 0.0:"]
        close += ["            " + line for line in _count_lines(f"ro{q} + rsq", f"rsc{q}[rsq] * derived[rd{q} + rsq]{weight}",
                                                               guarded=False)]
    return start, levels, close


def _moving_sum(nest: Nest, terms: dict[str, list[str]], sums: list[Sum]) -> list[Sum]:
    """rg: the product of a firing's factors that the innermost loop changes, summed over that
    loop, when some of the sums is summed in a local above it (its needs do not change in that
    loop). Such a sum is then rg times its factors that the loop does not change (terms: each
    sum's factors), added once after the loop: one add per firing instead of one multiply-add
    per summed value (a CKY rule's child outsides and rule counts)."""
    moving = moving_locals(nest)
    if not any(s.needs.isdisjoint(moving) for s in sums) or not nest.loops:
        return []

    def close(hoisted: set[str]) -> list[str]:
        return [f"{name} += rg * {product([f for f in factors if f not in moving])}"
                for name, factors in terms.items() if name in hoisted]
    return [Sum("rg", {local for local, _, _ in nest.loops[:-1]}, close)]


def _local_count_tables(names: Names, reads: dict) -> list[int]:
    """The small tables (written out by prepare) whose counts the outside pass sums in a local
    array (rsc<q>, laid out as the table) and adds to the counts once per example: a store to the
    shared counts, with its check for being listed, per firing kept the innermost loop from
    vectorising (a transition's count is one entry of a K x K table per pair of states)."""
    learned = {read.table for slot in reads.values() for read in slot if read.learned}
    return [names.tables.index(t) for t in names.small if t in learned]


def _outside_count(names: Names, read, value: str, weight: str = " * weight") -> list[str]:
    """A factor's count `value` (a marginal, not yet weighted: `weight` does that): into the local
    array of a small table, else into the counts."""
    q = names.tables.index(read.table)
    if read.table in names.small:
        return [f"rsc{q}[{index(f'({read.outcome}) * rr{q} + {read.row}')}] += {value}"]
    return _count_lines(_cell(names, read), f"{value}{weight}")


def _posterior_lines(names: Names, rule: Rule) -> tuple[set[str], list[str]] | None:
    """What a part's marginal `rp` adds to the posteriors, at its place (emit.part_place); None for
    a part that has none; else the locals the lines need and the lines."""
    place = part_place(names, rule)
    if place is None:
        return None
    if place.over is not None:
        return place.needs, [f"for rq in {place.over}:", f"    post[{place.index}] += rp"]
    return place.needs, [f"post[{place.index}] += rp"]


def posterior_width_code(names: Names) -> str:
    """The posteriors' values per token (rpw): a label's range, or every head (the root first); 0
    where they are not per token."""
    kind = posterior_kind(names.program)
    if kind == "attaches":
        return "n + 1"
    if kind in (None, "spans", "segments"):
        return "0"
    return _max_code([f"{names.lin(bound, None)} + 1" for bound in label_bounds(names.program)])


def _max_code(codes: list[str]) -> str:
    out = codes[0]
    for code in codes[1:]:
        out = f"max({out}, {code})"
    return out


def _read_needs(nest: Nest, q: int) -> set[str]:
    """What factor q's read (rw<q>) needs bound, the token locals it reads included."""
    return next(s.needs for s in nest.steps if s.text.startswith(f"rw{q} = "))


def _count_lines(index: str, value: str, guarded: bool = True) -> list[str]:
    """The _counts.j2 `add` macro, inline; guarded, only when counting (the outside pass serves
    posterior_example too, which passes no counts). The untracked path (batch EM) has no test of
    its own."""
    lines = [f"cell = {index}", f"dense[cell] += {value}", "if tracked and mark[cell] == 0:", "    mark[cell] = 1",
             "    listed += 1", "    touched[listed] = cell"]
    return ["if counting:"] + ["    " + line for line in lines] if guarded else lines


def _cell(names: Names, read) -> str:
    q = names.tables.index(read.table)
    return f"ro{q} + ({read.outcome}) * rr{q} + {read.row}"


def _readback(names: Names, reads: dict, tokens: dict) -> dict:
    """The code choosing the goal item, and for each item type the code choosing one firing that
    builds a given item (argmax, or a draw in proportion to its term)."""
    program = names.program
    goal_lines = ["best = -1.0", "u = np.random.random() * total if sampling else 0.0"]
    for rule in program.goals:
        nest = build_nest(names, rule, [], [], {}, "0.0")
        nest.steps = [s for s in nest.steps if not s.text.startswith(("rf", "ru"))]
        head = program.items[rule.head.name]
        keep = [f"stack[0, {1 + d}] = {names.lin(a, rule)}" for d, a in enumerate(rule.head.args)]
        inner = [f"term = chart[{nest.head_cell}]", "if _better(sampling, term, best, u):", "    best = term",
                 "    u -= term if sampling else 0.0", f"    stack[0, 0] = {names.item(head.name)}"]
        inner += ["    " + k for k in keep]
        inner += ["elif sampling and term > 0.0:", "    u -= term"]
        lines = render_nest(nest, inner, 0)
        goal_lines += lines
    by_item = {}
    for name in program.items:
        rules = [r for r in program.rules if r.kind in ("axiom", "part") and r.head.name == name]
        by_item[name] = _choose_item(names, name, rules, reads, tokens)
    return {"goal": goal_lines, "items": by_item}


def _choose_item(names: Names, name: str, rules: list[Rule], reads: dict, tokens: dict) -> list[str]:
    program = names.program
    item = program.items[name]
    hvals = [f"stack[top, {1 + d}]" for d in range(len(item.dims))]
    lines = [f"rh{d} = {v}" for d, v in enumerate(hvals)]
    head_level = level_code(names, _ref(name, []), None, [f"rh{d}" for d in range(len(item.dims))])
    lines += [f"hl = {head_level}", f"u = np.random.random() * chart[{cell_code(names, _ref(name, []), None, [f'rh{d}' for d in range(len(item.dims))])}] if sampling else 0.0",
              "best = -1.0", "chosen = -1"]
    for number, rule in enumerate(rules):
        bound, steps = {}, []
        for d, arg in enumerate(rule.head.args):
            var = _solvable(arg, names)
            if var is not None and var not in bound:
                bound[var] = f"rh{d} - {arg.const}" if arg.const else f"rh{d}"
        for d, arg in enumerate(rule.head.args):
            var = _solvable(arg, names)
            if var is None or bound[var] != (f"rh{d} - {arg.const}" if arg.const else f"rh{d}"):
                code = names.lin(arg, rule)
                steps.append(Step(f"{code} == rh{d}", needs_of(code), "if"))
        nest = build_nest(names, rule, _reads(reads, rule), _tokens(tokens, rule), bound, "ls[hl]")
        nest.steps = steps + nest.steps
        keep = [f"    pick[{q}] = {names.var(rule, v)}" for q, v in enumerate(rule.order)]
        inner = [f"term = {product(nest.product)}", "if _better(sampling, term, best, u):", "    best = term",
                 "    u -= term if sampling else 0.0", f"    chosen = {number}"] + keep
        inner += ["elif sampling and term > 0.0:", "    u -= term"]
        lines += render_nest(nest, inner, 0)
    lines += ["if chosen < 0:", "    return -1"]
    for number, rule in enumerate(rules):
        lines += [f"{'if' if number == 0 else 'elif'} chosen == {number}:"]
        body = [f"{names.var(rule, v)} = pick[{q}]" for q, v in enumerate(rule.order)]
        if rule.kind == "part":
            body += ["if count >= parts.shape[0]:", "    return -1",
                     f"parts[count, 0] = {rule.index}"]
            body += [f"parts[count, {1 + q}] = {names.var(rule, v)}" for q, v in enumerate(rule.params)]
            body += ["count += 1"]
        for ref in rule.body:
            body += ["if top >= stack.shape[0]:", "    return -1", f"stack[top, 0] = {names.item(ref.name)}"]
            body += [f"stack[top, {1 + d}] = {names.lin(a, rule)}" for d, a in enumerate(ref.args)]
            body += ["top += 1"]
        lines += ["    " + b for b in (body or ["pass"])]
    return lines


def _part_counts(names: Names, reads: dict, tokens: dict) -> list[str]:
    """Adds `value` for each learned factor of each listed part."""
    lines = []
    for number, rule in enumerate(names.program.parts):
        lines.append(f"{'if' if number == 0 else 'elif'} parts[q, 0] == {rule.index}:")
        body = [f"{names.var(rule, v)} = parts[q, {1 + p}]" for p, v in enumerate(rule.params)]
        body += [f"{t.local} = {t.expr}" for t in _tokens(tokens, rule)]
        for read in _reads(reads, rule):
            if read.learned:
                body += _count_lines(_cell(names, read), "value", guarded=False)
        lines += ["    " + b for b in (body or ["pass"])]
    return lines
