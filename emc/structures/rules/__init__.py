"""Structures written as rules: a weighted-deduction program in the spec, compiled like a built-in.

    structure chunks(x, classes=3, maxlen=4)
      item  end(i in 0..n, c in 0..classes)                # classes: the start symbol
      item  open(i in 0..n, c in 0..classes-1, l in 1..maxlen)
      axiom end(0, classes)
      part  start(i, b, c) : open(i+1, c, 1) += end(i, b) for c in 0..classes-1 where w = x[i]
      ...
      goal  end(n, c) for c in 0..classes-1
    latent s : chunks(x)

Each `part` is a slot of the structure: its firings are the parts, its variables and `where`
attributes are their attributes (`s.c`, or `s.start.c` where several parts have a `c`). The
checked program is in program.py, the loop nests it compiles to in emit.py and codegen.py, the
data side in data.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from emc.spec.structure import ArgSpec, Attribute, Binding, Slot, SlotError, Structure
from emc.structures.rules.program import Program, evaluate
from emc.structures.rules.spans import SPANS, longest_span, span_attributes

POSITION = "rules:position"


@dataclass
class RuleStructure(Structure):
    """A Structure whose description comes from a checked rule program."""

    program: Program | None = None
    # spaces other than the program's own bounded ones (`rules:upto:...`) whose sizes the arguments
    # bound: a built-in's restated over its program keeps its attributes' spaces (restate.py)
    bounded_spaces: frozenset[str] = frozenset()

    def is_bounded(self, space: str) -> bool:
        """Whether the arguments bound the size of a value space (not a vocabulary, not a position)."""
        return space.startswith("rules:upto:") or space in self.bounded_spaces


def space_of(program: Program, rule, name: str) -> tuple[str, object]:
    """The value space of a part attribute and the bound it is sized by: `rules:upto:<bound>` for
    one bounded by the arguments (its size is the bound + 1), POSITION for one bounded only by the
    length, "token" for a token."""
    where = next((a for a in rule.where if a.name == name), None)
    if where is not None:
        if where.kind == "token":
            return "token", None
        if where.kind == "span":
            return SPANS, None
        ends = [where.range.hi]
    else:
        ends = rule.bounds[name][1]
    static = [e for e in ends if all(v in program.defaults for v in e.names)]
    if not static:
        return POSITION, None
    bound = min(static, key=lambda e: (evaluate(e, program.defaults), e.text))  # the tightest
    return "rules:upto:" + bound.text, bound


def space_sizes(program: Program, args: dict[str, int]) -> dict[str, int]:
    """Every bounded attribute's space and its size under the arguments."""
    sizes = {}
    for rule in program.parts:
        for name in list(rule.params) + [a.name for a in rule.where]:
            space, bound = space_of(program, rule, name)
            if bound is not None:
                sizes[space] = max(1, evaluate(bound, args) + 1)
    return sizes


def posterior_kind(program: Program) -> str | None:
    """What `emc decode --posteriors` prints for a program: "labels" (each token's distribution
    over the labels its parts give it, `labels x[i] as k` or `labels x[i:j] as c`), "attaches"
    (each token's distribution over its heads), "spans" for a program built by span width whose
    parts do neither (each span's probability of being built: a constituent of CKY), "segments"
    for one built by position whose parts read spans of tokens as words (`w = x[i:j]`: each
    span's probability of being a part's word, a segmentation's words), or None when its parts
    do none of these or a label is not bounded by the arguments."""
    if any(rule.label is not None for rule in program.parts):
        return "labels" if all(bound is not None for bound in label_bounds(program)) else None
    if any(rule.attach is not None for rule in program.parts):
        return "attaches"
    if program.kind == "width":
        return "spans"
    return "segments" if span_attributes(program) else None


def takes_given(program: Program) -> bool:
    """Whether an example may come with its structure given (--labeled, semi-supervised EM): the
    structure is then read from the gold the input carries, through what the parts declare
    (emc/structures/rules/given.py): each token's tag, each dependent's head, the brackets a
    tree's spans may not cross, or the words of a segmentation."""
    kind = posterior_kind(program)
    return kind in ("attaches", "spans", "segments") or (kind == "labels" and tag_argument(program) is not None)


def tag_argument(program: Program) -> str | None:
    """The argument that counts the labels, when every labeling part labels one token with a
    variable ranging over 0..A-1 for one argument A (`states` of a chain): a corpus's tags can
    then name the labels, A becoming their number, as a tag dictionary names a chain's states."""
    parts = [rule for rule in program.parts if rule.label is not None]
    if not parts or any(rule.label[2] is not None for rule in parts):
        return None
    bounds = {(bound.terms, bound.const) if bound is not None else None for bound in label_bounds(program)}
    if len(bounds) != 1 or None in bounds:
        return None
    terms, const = bounds.pop()
    if const != -1 or len(terms) != 1 or terms[0][1] != 1 or terms[0][0] not in program.defaults:
        return None
    return terms[0][0]


def label_bounds(program: Program) -> list:
    """The largest label (an expression in the arguments; None if unbounded) of each labeling part."""
    return [space_of(program, rule, rule.label[3])[1] for rule in program.parts if rule.label is not None]


def posterior_width(program: Program, args: dict[str, int], n: int) -> int:
    """The posteriors' values per token: every label, or every head (the root first); 0 for spans."""
    kind = posterior_kind(program)
    if kind == "attaches":
        return n + 1
    return max(evaluate(bound, args) + 1 for bound in label_bounds(program)) if kind == "labels" else 0


def posterior_size(program: Program, args: dict[str, int], n: int) -> int:
    """The posteriors' values for an example of n tokens: per token its width, one per non-empty
    span, or per token one per length of a word starting there (up to the longest span)."""
    kind = posterior_kind(program)
    if kind == "spans":
        return n * (n + 1) // 2
    if kind == "segments":
        return n * max(1, longest_span(program, args))
    return n * posterior_width(program, args, n)


def _attributes(binding: Binding) -> dict[str, Attribute]:
    structure: RuleStructure = binding.structure
    program = structure.program
    s = binding.latent
    out: dict[str, Attribute] = {}
    counts: dict[str, int] = {}
    for rule in program.parts:
        for name in list(rule.params) + [a.name for a in rule.where]:
            counts[name] = counts.get(name, 0) + 1
    for rule in program.parts:
        for name in list(rule.params) + [a.name for a in rule.where]:
            where = next((a for a in rule.where if a.name == name), None)
            if where is not None and where.kind == "span":
                attr = dict(role="latent", space=SPANS, help=f"the tokens {where.observed}[{where.index.text}:"
                            f"{where.end.text}] as one word", slot=rule.name, feature_views=True)
            elif where is not None and where.kind == "token":
                observed = binding.observed[where.observed]
                attr = dict(role="latent", space=f"vocab:{observed}", help=f"the token of {observed} at "
                            f"{where.index.text}", slot=rule.name, tokens_of=observed)
            else:
                what = f"{where.index.text}" if where is not None else "its variable"
                attr = dict(role="latent", space=space_of(program, rule, name)[0], help=f"part {rule.name}: {what}",
                            slot=rule.name, numeric=True)
            out[f"{s}.{rule.name}.{name}"] = Attribute(f"{s}.{rule.name}.{name}", **attr)
            if counts[name] == 1:
                out[f"{s}.{name}"] = Attribute(f"{s}.{name}", **attr)
    return out


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    attrs = outcome + context
    slots = {a.slot for a in attrs}
    if len(slots) > 1:
        raise SlotError(f"a block scores one kind of part, but these attributes belong to parts {', '.join(sorted(slots))}",
                        "write one block per part")
    for attr in attrs:
        if attr.space == POSITION:
            raise SlotError(f"'{attr.path}' is a position, whose range grows with the input: a table cannot have "
                            "an axis for it", "give it a bounded attribute instead, e.g. `where d = j - i in 0..maxlen`")
    return slots.pop()


def make_structure(program: Program) -> RuleStructure:
    """The front-end description of a checked rule program."""
    args = tuple(ArgSpec(name, "int", value, f"argument of {program.name}", low=0) for name, value in program.defaults.items())
    signature = f"{program.name}({', '.join([*program.observed, *(f'{a}={v}' for a, v in program.defaults.items())])})"
    return RuleStructure(
        name=program.name,
        help=f"a structure written as rules in the spec ({len(program.parts)} parts)",
        signature=signature,
        example=f"latent s : {signature}",
        observed_roles=program.observed,
        input_kinds=("tokens", "symbols"),
        args=args,
        slots=tuple(Slot(rule.name, f"part {rule.name}") for rule in program.parts),
        attributes=_attributes,
        slot_rule=_slot_rule,
        dp=f"a weighted-deduction program over a chart, built by {'position' if program.kind == 'last' else 'span width'}",
        cost=lambda args: "the rules' loops per example (see the generated module)",
        package=lambda binding: "rules",
        program=program,
    )


