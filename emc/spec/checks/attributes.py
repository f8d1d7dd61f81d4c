"""Checks of attribute references: each name resolved against the structure's attributes and the
view registry (with the argument that would enable a missing attribute), and the DP slot a factor fills."""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from emc.io.views import DENSE_VIEW, MAX_VIEW_LENGTH, VIEWS
from emc.spec import ir
from emc.spec.checks.base import CheckerBase
from emc.spec.errors import did_you_mean, one_of
from emc.spec.model import ResolvedAttr
from emc.spec.structure import Attribute, Binding, SlotError

# where an attribute no built-in structure has comes from: a structure written in the spec as rules
WRITE_A_STRUCTURE = ("a structure with other attributes can be written in the spec as rules (docs/writing-models.md, "
                     "'Writing your own structure')")


def enabling_argument(binding: Binding, wanted: str) -> str | None:
    """`NAME=VALUE` of the structure argument that would give the binding attribute `wanted`
    (a.jump: jump=yes; z.prev2: order=2), or None when none does."""
    for arg in binding.structure.args:
        current = binding.args.get(arg.name)
        if arg.kind == "bool":
            values: list[Any] = [True, False]
        elif arg.choices:
            values = list(arg.choices)
        elif arg.kind == "int":
            low = int(arg.low) if arg.low is not None else 1
            values = [*arg.listed_values, *range(low, low + 4)]
        else:
            continue
        for value in values:
            if value == current or (arg.high is not None and not isinstance(value, bool) and value > arg.high):
                continue
            try:
                found = binding.structure.attributes(replace(binding, args={**binding.args, arg.name: value}))
            except (KeyError, TypeError, ValueError):  # a structure may reject a combination of arguments
                continue
            if wanted in found:
                return f"{arg.name}={'yes' if value is True else 'no' if value is False else value}"
    return None


class AttributeChecks(CheckerBase):
    """Attribute references (a.b.view(...)) resolved against the structure's attributes and
    the view registry, and the slot of the structure's DP a factor fills."""

    def _resolve_all(self, refs, attributes, binding) -> tuple[ResolvedAttr, ...] | None:
        out = [self._resolve(ref, attributes, binding) for ref in refs]
        return None if any(r is None for r in out) else tuple(out)

    def _resolve(self, ref: ir.AttrRef, attributes: dict[str, Attribute], binding: Binding,
                 in_features: bool = False) -> ResolvedAttr | None:
        """An attribute reference with its views; `in_features` also lets views apply to an
        attribute whose views are features only (a segment's word)."""
        steps = list(ref.steps)
        path = ref.base
        if ref.base not in attributes and not any(k.startswith(ref.base + ".") for k in attributes):
            if ref.base in {lat.name for lat in self.spec.latents[1:]}:
                return None  # a second latent variable: reported once where it is declared
            names = [binding.latent, *binding.observed.values()]
            hint = did_you_mean(ref.base, names + list(attributes)) or f"the model's variables are {one_of(names)}"
            if ref.base in self.params:
                self.error(ref.pos, f"'{ref.base}' is a param (a number), not an attribute of the structure")
            elif ref.base in names:  # declared, but this structure reads it only through its parts' attributes
                own = [k for k in attributes if k.startswith(binding.latent + ".")]
                self.error(ref.pos, f"'{ref.base}' is not an attribute of the {binding.structure.name} structure",
                           f"it reads '{ref.base}' through {one_of(own)}")
            else:
                self.error(ref.pos, f"unknown variable '{ref.base}'", hint)
            return None
        while steps and steps[0].arg is None and (f"{path}.{steps[0].name}" in attributes or any(
                k.startswith(f"{path}.{steps[0].name}.") for k in attributes)):  # a part's name, then its attribute
            path = f"{path}.{steps.pop(0).name}"
        if path not in attributes:
            bad = steps[0] if steps else None
            options = [k for k in attributes if k.startswith(ref.base)]
            wanted = f"{path}.{bad.name}" if bad else path
            same_name = [k for k in options if k.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1] and k != wanted]
            enabling = enabling_argument(binding, wanted)
            hint = (f"several parts have it: write {' or '.join(same_name)}" if len(same_name) > 1 else
                    f"{binding.structure.name} has it with {enabling}: write {binding.latent} : "
                    f"{binding.structure.name}(..., {enabling})" if enabling else
                    did_you_mean(wanted, options) or f"the attributes are {one_of(options)}; {WRITE_A_STRUCTURE}")
            self.error(bad.pos if bad else ref.pos, f"unknown attribute '{wanted}'", hint)
            return None
        attribute = attributes[path]
        views: list[tuple[str, int | None]] = []
        for step in steps:
            if attribute.tokens_of is None and not (in_features and attribute.feature_views):
                wanted = f"{path}.{step.name}"
                enabling = enabling_argument(binding, wanted)
                own = [k for k in attributes if k.startswith(binding.latent)]
                hint = (f"views of '{path}' are features only: use them inside features(...)" if attribute.feature_views
                        else f"{binding.structure.name} has it with {enabling}: write {binding.latent} : "
                             f"{binding.structure.name}(..., {enabling})" if enabling
                        else did_you_mean(wanted, attributes) or
                        f"views apply to observed tokens, and {binding.structure.name}'s attributes are {one_of(own)}; "
                        f"{WRITE_A_STRUCTURE}")
                self.error(step.pos, f"unknown attribute '{wanted}'", hint)
                return None
            if step.name == DENSE_VIEW:
                vectors = self._vectors_file(step, path, in_features, last=step is steps[-1])
                if vectors is None:
                    return None
                views.append((DENSE_VIEW, vectors))
                continue
            view = VIEWS.get(step.name)
            if view is None:
                names = [*VIEWS, DENSE_VIEW] if in_features else VIEWS
                self.error(step.pos, f"unknown view '{step.name}' of '{path}'",
                           did_you_mean(step.name, names) or f"the views are {one_of(names)}")
                return None
            n = self._view_length(step, path, view.takes_length)
            if n is False:
                return None
            views.append((step.name, n))
        return ResolvedAttr(ref.text, attribute, tuple(views), ref.pos)

    def _vectors_file(self, step: ir.AttrStep, path: str, in_features: bool, last: bool) -> str | None:
        """The file of `x.vectors("file")`: word vectors as real-valued features (emc/io/vectors.py)."""
        example = f'{path}.{DENSE_VIEW}("vectors.txt")'
        if not in_features:
            self.error(step.pos, f"'{DENSE_VIEW}' gives each word a vector of numbers, which only a feature can be",
                       f"use it inside features(...), e.g. features({path}, {example})")
        elif not last:
            self.error(step.pos, f"nothing can follow '.{DENSE_VIEW}(...)': it gives numbers, not a word",
                       f"put the views of the word before it, e.g. {path}.lower.{DENSE_VIEW}(\"vectors.txt\")")
        elif not isinstance(step.arg, str):
            self.error(step.pos, f"the view '{DENSE_VIEW}' takes a file name", f"write {example}")
        elif not os.path.isfile(os.path.join(self.base_dir, step.arg)):
            where = os.path.abspath(os.path.join(self.base_dir, step.arg))
            self.error(step.pos, f"no such file of word vectors: '{step.arg}' ({where})",
                       "a path is relative to the directory emc runs in (a saved model's: the one it was "
                       "fitted in), as a fixed block's file is")
        else:
            return os.path.abspath(os.path.join(self.base_dir, step.arg))
        return None

    def _view_length(self, step: ir.AttrStep, path: str, takes_length: bool) -> int | None | bool:
        """A view's length argument: n, None for a view without one, False after an error."""
        if isinstance(step.arg, str):
            self.error(step.pos, f"the view '{step.name}' takes {'a number' if takes_length else 'no argument'}, "
                                 "not a file name", f"write {path}.{step.name}" + ("(3)" if takes_length else ""))
            return False
        if takes_length:
            if step.arg is None:
                self.error(step.pos, f"the view '{step.name}' takes a length", f"write {path}.{step.name}(3)")
                return False
            if not float(step.arg).is_integer() or not 1 <= step.arg <= MAX_VIEW_LENGTH:
                self.error(step.pos, f"the length of '{step.name}' must be a whole number from 1 to {MAX_VIEW_LENGTH}")
                return False
            return int(step.arg)
        if step.arg is not None:
            self.error(step.pos, f"the view '{step.name}' takes no argument", f"write {path}.{step.name}")
            return False
        return None

    def _distinct(self, attrs: tuple[ResolvedAttr, ...]) -> bool:
        seen: dict[str, ResolvedAttr] = {}
        for a in attrs:
            if a.text in seen:
                self.error(a.pos, f"'{a.text}' appears twice in this block",
                           "a block's outcome and context are different attributes")
                return False
            seen[a.text] = a
        return True

    def _slot(self, binding, block: ir.Block, outcome, context) -> str | None:
        if not any(a.attribute.role == "latent" for a in outcome + context):
            latent_attrs = [p for p, a in binding.structure.attributes(binding).items() if a.role == "latent"]
            self.error(block.pos, "this block does not involve the latent structure, so it cannot change the posterior",
                       f"use one of {one_of(latent_attrs)} in it")
            return None
        try:
            return binding.structure.slot_rule(binding, [a.attribute for a in outcome], [a.attribute for a in context])
        except SlotError as err:
            self.error(block.pos, err.message, err.hint)
            return None
