"""The names of the packed arrays and meta slots a model's generated code reads.

Both the code generator (which turns them into constants) and the runtime (which fills them from
the data) derive them from the checked model with these functions, so the two always agree.
"""
from __future__ import annotations

from emc.codegen.abi import TABLE_META_SIZE
from emc.io.views import view_key
from emc.spec.check import CheckedModel, ResolvedAttr
from emc.structures.registry import codegen_for


def token_attributes(model: CheckedModel) -> list[ResolvedAttr]:
    """One representative per distinct token space read by the model's factors (x, x.suffix(3))."""
    seen: dict[str, ResolvedAttr] = {}
    for factor in model.factors:
        for attr in factor.outcome + factor.context:
            if attr.attribute.tokens_of is not None:
                seen.setdefault(token_array_name(attr), attr)
    return list(seen.values())


def token_array_name(attr: ResolvedAttr) -> str:
    """The packed array holding an attribute's token ids, one per token of its observed variable."""
    return f"tokens:{attr.attribute.tokens_of}{view_key(attr.views)}"


def array_names(model: CheckedModel) -> list[str]:
    structural = codegen_for(model.structure.name, model.binding).arrays(model.binding)
    return structural + sorted({token_array_name(a) for a in token_attributes(model)})


def table_spaces(model: CheckedModel) -> list[str]:
    spaces: list[str] = []
    for factor in model.tables():
        for space in factor.context_spaces + factor.outcome_spaces:
            if space not in spaces:
                spaces.append(space)
    return spaces


def meta_names(model: CheckedModel) -> list[str]:
    """Meta slots: structure arguments, space sizes, then TABLE_META_SIZE slots per table."""
    names = [f"arg:{a.name}" for a in model.structure.args]
    names += [f"size:{space}" for space in table_spaces(model)]
    for factor in model.tables():
        names += [f"table:{factor.table}"] + [f"table:{factor.table}#{i}" for i in range(1, TABLE_META_SIZE)]
    return names
