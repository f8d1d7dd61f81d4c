"""IR -> generated/<model>.py: the model's glue around its structure's DP, from a jinja2 template.

The code generator is structure-agnostic: each structure's codegen descriptor names its template,
its packed arrays and the code for each attribute inside a slot's loops; this module turns every
factor into a `read(params, meta, TABLE, row, outcome)` whose row and outcome are mixed-radix
combinations of those attribute codes, and hands the template one list of reads per slot.

Nothing from a spec becomes code. Every identifier of the generated module is the template's own,
the structure's (its arrays, arguments and attribute codes) or numbered by position (`T_0` the
first table, `M_SIZE_1` the second value space, `token_0` the first token space read); the spec's
names (observed and latent variables, blocks, params, the model) reach the output only inside
comments, made one printable line, and string literals, written by `repr`. So a name that is a
Python keyword, a builtin or a local of the template (`k`, `t`, `score`) cannot change the code.
Numbers (smoothing, weights, sizes) travel as data in `meta` and the parameter tables.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from emc.codegen.cache import cache_dir
from emc.version import __version__
from emc.codegen.layout import CodeLayout, token_array_name
from emc.spec.model import CheckedModel, Factor


@dataclass
class FactorRead:
    """One factor's contribution to a part score (and, when learned, its expected count). Its name
    from the spec is only in `comment`, escaped."""

    comment: str
    table: str  # the constant naming its table's meta slots
    row: str
    outcome: str
    learned: bool


@dataclass
class TokenRead:
    local: str
    expr: str


def _array_const(name: str, numbered: dict[str, int]) -> str:
    """A packed array's constant: a structure's own array by its name (`offsets` -> A_OFFSETS); an
    array named after the spec (`tokens:x`, a tuple's `offsets:v`) by its kind and position among
    that kind's (A_TOKENS_0, A_OFFSETS_1)."""
    kind, per_spec, _ = name.partition(":")
    if not re.fullmatch(r"[a-z][a-z_]*", kind):
        raise ValueError(f"array {name!r}: a structure's arrays are named by lower-case identifiers")
    if not per_spec:
        return f"A_{kind.upper()}"
    numbered[kind] = numbered.get(kind, -1) + 1
    return f"A_{kind.upper()}_{numbered[kind]}"


def _meta_const(kind: str, name: str, position: int, arguments_from_spec: bool) -> str:
    """A meta slot's constant: a built-in structure's argument by its name (M_STATES, which its
    template reads); a value space's, a table's and the argument of a structure the spec writes
    (rules), whose names come from the spec, by position (M_SIZE_0, T_0, M_0)."""
    if kind == "arg" and not arguments_from_spec:
        if not re.fullmatch(r"[a-z][a-z_0-9]*", name):
            raise ValueError(f"structure argument {name!r}: arguments are named by lower-case identifiers")
        return f"M_{name.upper()}"
    return {"arg": "M_", "size": "M_SIZE_", "table": "T_"}[kind] + str(position)


def comment_text(text: str) -> str:
    """Text from the spec as it may stand in a comment of the generated code: one line of printable
    characters (a newline, NUL, a lone surrogate or a line separator written as its escape)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


def _mixed_radix(codes: list[str], sizes: list[str]) -> str:
    """((c0 * n1 + c1) * n2 + c2): the flat index of a tuple of attribute values."""
    if not codes:
        return "0"
    expr = codes[0]
    for code, size in zip(codes[1:], sizes[1:]):
        expr = f"({expr}) * {size} + {code}"
    return expr


def render_context(model: CheckedModel, layout: CodeLayout) -> dict:
    descriptor = model.codegen
    binding = model.binding
    numbered: dict[str, int] = {}
    array_const = {name: _array_const(name, numbered) for name in layout.arrays}
    arrays = [(const, repr(name), comment_text(name)) for name, const in array_const.items()]

    meta = []
    table_const: dict[str, str] = {}
    size_const: dict[str, str] = {}
    size_local: dict[str, str] = {}
    positions = {"arg": 0, "size": 0, "table": 0}
    for slot in layout.meta:
        position = positions[slot.kind]
        positions[slot.kind] += 1
        const = _meta_const(slot.kind, slot.name, position, getattr(descriptor, "ARGUMENTS_FROM_SPEC", False))
        meta.append((const, slot.index, comment_text(slot.label)))
        if slot.kind == "table":
            table_const[slot.name] = const
        elif slot.kind == "size":
            size_const[slot.name] = const
            size_local[slot.name] = f"size_{position}"

    # token_i: the id of the current token in the token space of array A_TOKENS_i, read from tokens_i
    token_number: dict[str, str] = {}
    token_arrays = []
    for attr in layout.tokens:
        array = token_array_name(attr)
        token_number[array] = array_const[array][len("A_TOKENS_"):]
        token_arrays.append((f"tokens_{token_number[array]}", array_const[array], comment_text(array)))

    slots: dict[str, list[FactorRead]] = {slot.name: [] for slot in model.structure.slots}
    token_reads: dict[str, list[TokenRead]] = {slot.name: [] for slot in model.structure.slots}
    for factor in model.factors:
        codes = {}
        for attr in factor.outcome + factor.context:
            if attr.attribute.tokens_of is not None:
                number = token_number[token_array_name(attr)]
                expr = descriptor.token_expr(binding, attr, factor.slot, f"tokens_{number}")
                # one local per token read: a part may read one token space at two places (a
                # dependency's head and dependent, both x[...]), which then need two locals
                same = [r for r in token_reads[factor.slot] if r.expr == expr]
                if not same:
                    taken = {r.local for r in token_reads[factor.slot]}
                    local = f"token_{number}"
                    k = 1
                    while local in taken:
                        local, k = f"token_{number}_{k}", k + 1
                    same = [TokenRead(local, expr)]
                    token_reads[factor.slot].append(same[0])
                codes[attr.text] = same[0].local
            else:
                codes[attr.text] = descriptor.attribute_expr(binding, attr, factor.slot)
        slots[factor.slot].append(FactorRead(
            comment=_comment(factor),
            table=table_const[factor.table],
            row=_mixed_radix([codes[a.text] for a in factor.context], [size_local[s] for s in factor.context_spaces]),
            outcome=_mixed_radix([codes[a.text] for a in factor.outcome], [size_local[s] for s in factor.outcome_spaces]),
            # a constraint's counts are the expectations its projection needs (never normalised)
            learned=factor.kind in ("learned", "constraint"),
        ))

    used = " ".join(f"{r.row} {r.outcome}" for reads in slots.values() for r in reads)
    sizes = [(size_local[s], size_const[s], comment_text(s)) for s in layout.spaces
             if re.search(rf"\b{size_local[s]}\b", used)]
    return {
        "model": comment_text(model.name),
        "source": comment_text(Path(model.spec.path).name),
        "version": __version__,
        "structure": model.structure.name,
        "args": binding.args,
        "arrays": arrays,
        "meta": meta,
        "meta_size": layout.meta_size,
        "sizes": sizes,
        "token_arrays": token_arrays,
        "token_reads": token_reads,
        "slots": slots,
        "factors": [(comment_text(f.name), f.kind, comment_text(f.signature), comment_text(f.slot))
                    for f in model.factors],
        # per-example constraints (at most one; the checker allows them where the glue projects)
        "example_constraints": [(comment_text(c.name), comment_text(c.signature)) for c in model.example_constraints],
        # the symmetry constraint (`E[a] agree`): the alignment's glue shifts link scores by its duals
        "symmetric": model.symmetric is not None,
        # posterior sparsity (at most one; a chain's glue shifts token scores by its duals)
        "sparsity": [(comment_text(c.name), comment_text(c.signature)) for c in model.sparsity],
    }


def _comment(factor: Factor) -> str:
    kind = {"learned": "", "fixed": " (fixed)", "weight": " (fixed weight)", "constraint": " (constraint)"}[factor.kind]
    return comment_text(f"{factor.name}: {factor.signature}{kind}")


@functools.cache
def _environment() -> jinja2.Environment:
    """One environment per process: it keeps the compiled templates (building them is most of a render),
    and jinja keeps their bytecode in emc's cache folder (keyed by each template's checksum), so a
    warm start renders without compiling them again (0.1 s of it)."""
    loader = jinja2.FunctionLoader(
        lambda name: resources.files("emc.codegen").joinpath("templates", name).read_text(encoding="utf-8"))
    folder = cache_dir() / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        bytecode = jinja2.FileSystemBytecodeCache(str(folder))
    except OSError:  # a read-only cache only costs compiling the templates
        bytecode = None
    environment = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                     trim_blocks=True, lstrip_blocks=True, bytecode_cache=bytecode)
    environment.filters["comment"] = comment_text  # for a structure's own names from the spec (rules)
    return environment


def render(model: CheckedModel, layout: CodeLayout | None = None) -> str:
    """The generated module's source text for a checked model (laid out by `layout`, the model's
    CodeLayout when the caller keeps one; else derived here): a built-in whose DP is a rule
    program is written as its restated model (CheckedModel.code_model)."""
    model = model.code_model
    descriptor = model.codegen
    context = render_context(model, layout or CodeLayout.of(model))
    extra_context = getattr(descriptor, "extra_context", None)  # a structure whose DP is generated too
    if extra_context is not None:
        context.update(extra_context(model, context))
    return _environment().get_template(descriptor.TEMPLATE).render(**context)
