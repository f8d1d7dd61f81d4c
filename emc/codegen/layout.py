"""The names of the packed arrays and meta slots a model's generated code reads.

Both the code generator (which turns them into constants) and the runtime (which fills them from
the data) read them from one CodeLayout, derived once from the checked model, so the two always
agree and neither derives them again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from emc.codegen.abi import TABLE_META_SIZE
from emc.io.views import view_key
from emc.spec.model import CheckedModel, ResolvedAttr


def _token_attributes(model: CheckedModel) -> list[ResolvedAttr]:
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


def _table_spaces(model: CheckedModel) -> list[str]:
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


def _meta_slots(model: CheckedModel, spaces: tuple[str, ...]) -> list[MetaSlot]:
    """Meta slots: structure arguments, space sizes, then one slot of TABLE_META_SIZE values per table."""
    groups = [("arg", [a.name for a in model.structure.args], 1), ("size", list(spaces), 1),
              ("table", [factor.table for factor in model.tables()], TABLE_META_SIZE)]
    slots: list[MetaSlot] = []
    index = 0
    for kind, names, width in groups:
        for name in names:
            slots.append(MetaSlot(kind, name, index, width))
            index += width
    return slots


@dataclass(frozen=True)
class CodeLayout:
    """Where a model's generated code finds its data, derived once from the checked model
    (`CodeLayout.of`; emc.runtime.problem.Model keeps it beside the compiled module): the render
    turns it into constants, the runtime packs the data and fills meta by it."""

    tokens: tuple[ResolvedAttr, ...]  # one attribute per token space the factors read, first read first
    # the structure's arrays, then the token arrays in the order the factors first read them (an
    # order of positions, not of names: renaming a spec's variables leaves the generated code as is)
    arrays: tuple[str, ...]
    spaces: tuple[str, ...]  # the value spaces of the tables' axes, first use first
    meta: tuple[MetaSlot, ...]

    @staticmethod
    def of(model: CheckedModel) -> CodeLayout:
        model = model.code_model  # a built-in whose DP is a rule program: the arrays of its restated model
        tokens = tuple(_token_attributes(model))
        spaces = tuple(_table_spaces(model))
        arrays = tuple(model.codegen.arrays(model.binding)) + tuple(token_array_name(a) for a in tokens)
        return CodeLayout(tokens, arrays, spaces, tuple(_meta_slots(model, spaces)))

    @property
    def meta_size(self) -> int:
        return sum(slot.width for slot in self.meta)
