"""Structure name -> its front-end description. A new structure adds one line here."""
from __future__ import annotations

import functools
import importlib
from types import ModuleType

from emc.structures.alignment import ALIGNMENT
from emc.spec.model import CheckedModel
from emc.spec.structure import Binding, Structure
from emc.structures.chain import CHAIN
from emc.structures.deptree import DEPTREE
from emc.structures.hooks import StructureData
from emc.structures.label import LABEL
from emc.structures.rules.restate import restate as restated_model
from emc.structures.segmentation import SEGMENTATION
from emc.structures.spantree import SPANTREE

STRUCTURES: dict[str, Structure] = {s.name: s for s in (CHAIN, SEGMENTATION, ALIGNMENT, SPANTREE, LABEL, DEPTREE)}


def package_for(name: str, binding: Binding | None = None) -> str:
    """The package under emc/structures/ holding the structure's code: its own, or the one its
    binding's settings select (Structure.package: a span tree with labels is a PCFG)."""
    structure = binding.structure if binding is not None else STRUCTURES.get(name)
    if binding is not None and structure.package is not None:
        return structure.package(binding)
    return name


def codegen_for(name: str, binding: Binding | None = None) -> ModuleType:
    """The structure's code-generation descriptor (emc/structures/NAME/codegen.py): its template,
    its packed arrays, and how the glue names each attribute inside a slot's loops; the rules'
    for a built-in whose DP is a rule program."""
    if binding is not None and binding.structure.restated(binding) is not None:
        return importlib.import_module("emc.structures.rules.codegen")
    return importlib.import_module(f"emc.structures.{package_for(name, binding)}.codegen")


def restate(model: CheckedModel) -> CheckedModel:
    """The checked model, with its restated twin when its structure's DP is a rule program
    (emc/structures/rules/restate.py)."""
    return restated_model(model, codegen_for(model.structure.name, model.binding))


def data_for(name: str, binding: Binding | None = None) -> StructureData:
    """The structure's data side (emc/structures/NAME/data.py, typed by emc/structures/hooks.py):
    packing a corpus into arrays, reading decoded structures back, and the task's output format.
    Without a binding, the structure's own package (its formats and options)."""
    return _data_of_package(package_for(name, binding))


@functools.cache
def _data_of_package(package: str) -> StructureData:
    return StructureData.from_module(package, importlib.import_module(f"emc.structures.{package}.data"))
