"""Structure name -> its front-end description. A new structure adds one line here."""
from __future__ import annotations

import importlib
from types import ModuleType

from emc.structures.alignment import ALIGNMENT
from emc.structures.base import Structure
from emc.structures.chain import CHAIN
from emc.structures.deptree import DEPTREE
from emc.structures.label import LABEL
from emc.structures.segmentation import SEGMENTATION
from emc.structures.spantree import SPANTREE

STRUCTURES: dict[str, Structure] = {s.name: s for s in (CHAIN, SEGMENTATION, ALIGNMENT, SPANTREE, LABEL, DEPTREE)}


def codegen_for(name: str) -> ModuleType:
    """The structure's code-generation descriptor (emc/structures/NAME/codegen.py): its template,
    its packed arrays, and how the glue names each attribute inside a slot's loops."""
    return importlib.import_module(f"emc.structures.{name}.codegen")


def data_for(name: str) -> ModuleType:
    """The structure's data module (emc/structures/NAME/data.py): packing a corpus into arrays,
    reading decoded structures back, and the task's output format."""
    return importlib.import_module(f"emc.structures.{name}.data")
