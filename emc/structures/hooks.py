"""A structure's data side as one typed object: what the runtime calls on it, with the defaults of
the optional hooks written down here once, so the runtime never probes a module with hasattr.

`StructureData.from_module` builds it from the structure's data module (emc/structures/NAME/data.py;
docs/adding-a-structure.md says what each hook does) and names any required hook it lacks."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

REQUIRED = ("FORMATS", "FORMAT_HELP", "read", "space_sizes", "pack", "decoded_length", "posterior_length",
            "format_decoded", "format_posterior")


@dataclass(frozen=True)
class StructureData:
    name: str
    module: ModuleType  # the data module itself, for what is particular to one structure
    FORMATS: Sequence[str]
    FORMAT_HELP: Mapping[str, str]
    read: Callable
    space_sizes: Callable
    pack: Callable
    decoded_length: Callable
    posterior_length: Callable
    format_decoded: Callable
    format_posterior: Callable
    evaluate: Callable | None = None  # scores against gold; None: the structure has no metric
    named_values: Callable | None = None  # argument -> value names known from the data or options
    numeric_values: Callable | None = None  # index -> value of a numeric space, when they differ
    summary: Callable | None = None  # `emc info RUN`: the parameters in words (a label over fields)
    read_fixed: Callable | None = None  # fixed blocks read from a file
    complete_corpus: Callable | None = None  # a pass over the whole corpus before packing
    INITIALIZERS: Mapping[str, Callable] = field(default_factory=dict)  # --init NAME from the data alone
    DEFAULT_INIT: str = "random"  # what --init default means when no example is labeled
    FIT_OPTIONS: Sequence[tuple] = ()  # extra flags: (flags, argparse keyword arguments)
    DECODE_OPTIONS: Sequence[tuple] = ()
    INPUT_OPTIONS: Sequence[str] = ()  # options naming input files, never inherited by decoding
    DATA_FROM_OPTIONS: bool = False  # the data may come from options (DATA may be omitted)
    ONLINE_START_MASS: str = "entry"  # what the start weighs in the online variants: "entry" or "row"
    ONLINE_INIT_NOISE: float = 1.0  # the online variants' --init-noise when none is given

    @staticmethod
    def from_module(name: str, module: ModuleType) -> "StructureData":
        missing = [hook for hook in REQUIRED if not hasattr(module, hook)]
        if missing:
            raise TypeError(f"structure {name}: its data module {module.__name__} lacks {', '.join(missing)} "
                            f"(see docs/adding-a-structure.md)")
        hooks: dict[str, Any] = {f.name: getattr(module, f.name) for f in fields(StructureData)
                                 if f.name not in ("name", "module") and hasattr(module, f.name)}
        return StructureData(name=name, module=module, **hooks)
