"""The names of the packed arrays and meta slots a model's generated code reads.

Both the code generator (which turns them into constants) and the runtime (which fills them from
the data) derive them from the checked model with these functions, so the two always agree.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from emc.codegen.abi import TABLE_META_SIZE
from emc.io.views import view_key
from emc.spec.model import CheckedModel, ResolvedAttr


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
    """The structure's arrays, then the token arrays in the order the factors first read them (an
    order of positions, not of names: renaming a spec's variables leaves the generated code as is)."""
    structural = model.codegen.arrays(model.binding)
    return structural + [token_array_name(a) for a in token_attributes(model)]


def table_spaces(model: CheckedModel) -> list[str]:
    spaces: list[str] = []
    for factor in model.tables():
        for space in factor.context_spaces + factor.outcome_spaces:
            if space not in spaces:
                spaces.append(space)
    return spaces


@dataclass(frozen=True)
class MetaSlot:
    """Where the meta array holds one value the generated code reads: a structure argument
    (kind "arg"), a value space's size ("size") or a table's TABLE_META_SIZE values ("table":
    offset, row offset, rows, outcomes, index; emc/codegen/abi.py)."""

    kind: Literal["arg", "size", "table"]
    name: str  # the argument's, the space's or the table's
    index: int  # the position of its (first) value in meta
    width: int = 1  # how many values it takes

    @property
    def label(self) -> str:
        """As the generated code's comments name it: `arg:states`, `size:vocab:x`, `table:emit`."""
        return f"{self.kind}:{self.name}"


def meta_slots(model: CheckedModel) -> list[MetaSlot]:
    """Meta slots: structure arguments, space sizes, then one slot of TABLE_META_SIZE values per table."""
    groups = [("arg", [a.name for a in model.structure.args], 1), ("size", table_spaces(model), 1),
              ("table", [factor.table for factor in model.tables()], TABLE_META_SIZE)]
    slots: list[MetaSlot] = []
    index = 0
    for kind, names, width in groups:
        for name in names:
            slots.append(MetaSlot(kind, name, index, width))
            index += width
    return slots


def meta_size(slots: list[MetaSlot]) -> int:
    return sum(slot.width for slot in slots)
