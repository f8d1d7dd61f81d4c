"""Built-in structures whose dynamic program is a rule program: the checked model restated over
the program's parts (emc/spec/structure.py: Restatement).

Such a built-in keeps its front end and its data side: a spec's blocks are checked against the
built-in's attributes and slots, its corpora read, its structures printed in the field's format.
Only the code differs: `restate` maps each factor of a slot onto the parts of the program that
slot's firings are (a factor of a slot several parts fire scores each of them from one table,
so their counts pool), and the code generator reads the restated model (CheckedModel.code_model):
the chart passes derived from the program, as for a structure a spec writes as rules.
"""
from __future__ import annotations

import functools
from dataclasses import replace

from emc.spec.model import CheckedModel, Factor, ResolvedAttr
from emc.spec.parse import parse_text
from emc.spec.structure import Attribute, Binding, Restatement
from emc.structures.rules import make_structure
from emc.structures.rules.program import Program, check_program


def restate(model: CheckedModel, descriptor) -> CheckedModel:
    """The model with its restated twin (`restated`), when its structure's DP is a rule program
    for this binding; else the model itself. `descriptor` is the rules' code-generation one."""
    restatement = model.structure.restated(model.binding)
    if restatement is None:
        return model
    built_in = model.structure
    structure = replace(make_structure(_program(built_in.name, restatement.program)), name=built_in.name,
                        help=built_in.help, signature=built_in.signature, example=built_in.example,
                        args=built_in.args, package=built_in.package, bounded_spaces=restatement.bounded_spaces)
    binding = Binding(structure, model.binding.latent, model.binding.observed, model.binding.args)
    attributes = structure.attributes(binding)
    factors = [part for factor in model.factors for part in _parts(factor, restatement, model.binding, attributes)]
    restated = replace(model, binding=binding, factors=factors, codegen=descriptor, restated=None)
    return replace(model, codegen=descriptor, restated=restated)


@functools.cache
def _program(name: str, text: str) -> Program:
    """A built-in's program, checked once per process; a problem in it is emc's own bug."""
    spec = parse_text(text, f"<the {name} structure's program>")

    def error(pos, message: str, hint: str | None = None) -> None:
        raise AssertionError(f"the {name} structure's program, line {pos.line}: {message}")

    return check_program(spec.structures[0], error)


def _parts(factor: Factor, restatement: Restatement, binding: Binding,
           attributes: dict[str, Attribute]) -> list[Factor]:
    """The factor once per part its slot's firings are, its attributes those parts'."""
    roles = {name: role for role, name in binding.observed.items()}
    prefix = binding.latent + "."

    def key(attr: ResolvedAttr) -> str:
        path = attr.attribute.path
        return path[len(prefix):] if path.startswith(prefix) else roles[attr.attribute.tokens_of]

    out = []
    for part, names in restatement.parts[factor.slot]:
        def on_part(attr: ResolvedAttr, part=part, names=names) -> ResolvedAttr:
            return replace(attr, attribute=attributes[f"{prefix}{part}.{names[key(attr)]}"])

        out.append(replace(factor, slot=part, outcome=tuple(map(on_part, factor.outcome)),
                           context=tuple(map(on_part, factor.context))))
    return out
