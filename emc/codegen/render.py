"""IR -> generated/<model>.py: the model's glue around its structure's DP, from a jinja2 template.

The code generator is structure-agnostic: each structure's codegen descriptor names its template,
its packed arrays and the code for each attribute inside a slot's loops; this module turns every
factor into a `read(params, meta, TABLE, row, outcome)` whose row and outcome are mixed-radix
combinations of those attribute codes, and hands the template one list of reads per slot.

Nothing from a spec becomes code: names in the spec are checked identifiers and reach the output
only as constant names (upper-cased, prefixed) and comments; numbers (smoothing, weights, sizes)
travel as data in `meta` and the parameter tables.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from emc.version import __version__
from emc.codegen.layout import array_names, meta_size, meta_slots, table_spaces, token_array_name, token_attributes
from emc.spec.model import CheckedModel, Factor


@dataclass
class FactorRead:
    """One factor's contribution to a part score (and, when learned, its expected count)."""

    name: str
    comment: str
    table: str  # the constant naming its table's meta slots
    row: str
    outcome: str
    learned: bool


@dataclass
class TokenRead:
    local: str
    expr: str


def _const(prefix: str, name: str, taken: set[str]) -> str:
    base = prefix + re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").upper()
    const, n = base, 2
    while const in taken:
        const, n = f"{base}_{n}", n + 1
    taken.add(const)
    return const


def _mixed_radix(codes: list[str], sizes: list[str]) -> str:
    """((c0 * n1 + c1) * n2 + c2): the flat index of a tuple of attribute values."""
    if not codes:
        return "0"
    expr = codes[0]
    for code, size in zip(codes[1:], sizes[1:]):
        expr = f"({expr}) * {size} + {code}"
    return expr


def render_context(model: CheckedModel) -> dict:
    descriptor = model.codegen
    binding = model.binding
    taken: set[str] = set()
    arrays = [(_const("A_", name, taken), name) for name in array_names(model)]
    array_const = dict((name, const) for const, name in arrays)

    meta = []
    table_const: dict[str, str] = {}
    size_const: dict[str, str] = {}
    size_local: dict[str, str] = {}
    slots_of_meta = meta_slots(model)
    for slot in slots_of_meta:
        const = _const({"arg": "M_", "size": "M_SIZE_", "table": "T_"}[slot.kind], slot.name, taken)
        meta.append((const, slot.index, slot.label))
        if slot.kind == "table":
            table_const[slot.name] = const
        elif slot.kind == "size":
            size_const[slot.name] = const
            size_local[slot.name] = "size_" + const[len("M_SIZE_"):].lower()

    token_locals: dict[str, str] = {}
    token_arrays = []
    for attr in token_attributes(model):
        array = token_array_name(attr)
        local = array_const[array][len("A_TOKENS_"):].lower() + "_ids"
        token_arrays.append((local, array_const[array], array))
        token_locals[array] = local

    slots: dict[str, list[FactorRead]] = {slot.name: [] for slot in model.structure.slots}
    token_reads: dict[str, list[TokenRead]] = {slot.name: [] for slot in model.structure.slots}
    for factor in model.factors:
        codes = {}
        for attr in factor.outcome + factor.context:
            if attr.attribute.tokens_of is not None:
                array = token_array_name(attr)
                local = token_locals[array][:-len("_ids")]
                if all(r.local != local for r in token_reads[factor.slot]):
                    expr = descriptor.token_expr(binding, attr, factor.slot, token_locals[array])
                    token_reads[factor.slot].append(TokenRead(local, expr))
                codes[attr.text] = local
            else:
                codes[attr.text] = descriptor.attribute_expr(binding, attr, factor.slot)
        slots[factor.slot].append(FactorRead(
            name=factor.name,
            comment=_comment(factor),
            table=table_const[factor.table],
            row=_mixed_radix([codes[a.text] for a in factor.context], [size_local[s] for s in factor.context_spaces]),
            outcome=_mixed_radix([codes[a.text] for a in factor.outcome], [size_local[s] for s in factor.outcome_spaces]),
            learned=factor.kind == "learned",
        ))

    used = " ".join(f"{r.row} {r.outcome}" for reads in slots.values() for r in reads)
    sizes = [(size_local[s], size_const[s], s) for s in table_spaces(model) if re.search(rf"\b{size_local[s]}\b", used)]
    return {
        "model": model.name,
        "source": Path(model.spec.path).name,
        "version": __version__,
        "structure": model.structure.name,
        "args": binding.args,
        "arrays": arrays,
        "meta": meta,
        "meta_size": meta_size(slots_of_meta),
        "sizes": sizes,
        "token_arrays": token_arrays,
        "token_reads": token_reads,
        "slots": slots,
        "factors": [(f.name, f.kind, f.signature, f.slot) for f in model.factors],
        "tables": [(table_const[f.table], f.table, f.signature) for f in model.tables()],
    }


def _comment(factor: Factor) -> str:
    kind = {"learned": "", "fixed": " (fixed)", "weight": " (fixed weight)"}[factor.kind]
    return f"{factor.name}: {factor.signature}{kind}"


def _environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(
        lambda name: resources.files("emc.codegen").joinpath("templates", name).read_text(encoding="utf-8"))
    return jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)


def render(model: CheckedModel) -> str:
    """The generated module's source text for a checked model."""
    descriptor = model.codegen
    context = render_context(model)
    extra_context = getattr(descriptor, "extra_context", None)  # a structure whose DP is generated too
    if extra_context is not None:
        context.update(extra_context(model.binding, context))
    return _environment().get_template(descriptor.TEMPLATE).render(**context)
