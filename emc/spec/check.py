"""Semantic checks over the IR, with positions: a separate pass after parsing.

`check(spec)` resolves every name against the structure's declared attributes and the view
registry, assigns every block to a slot of the structure's DP, evaluates option arguments, and
returns a `CheckedModel`; or raises one SpecError listing every problem with file:line:column,
the line, a caret and a did-you-mean hint.

The passes live in emc/spec/checks/, one module a concern, each a class the checker here
composes: the header (observed variables, params, the latent structure and its arguments:
header.py), attribute references and slots (attributes.py), blocks and their options (blocks.py),
their features (features.py), weights (weights.py, their expressions: expressions.py) and
corpus-level constraints (constraints.py).
"""
from __future__ import annotations

import os
from typing import Any

from emc.spec import ir
from emc.spec.checks.blocks import BlockChecks
from emc.spec.checks.constraints import ConstraintChecks
from emc.spec.checks.header import HeaderChecks
from emc.spec.errors import EmcError, one_of
from emc.spec.model import CheckedModel, ExampleConstraint, Factor, SparsityConstraint
from emc.structures.registry import codegen_for, restate


def check(spec: ir.Spec, overrides: dict[str, Any] | None = None, base_dir: str | None = None) -> CheckedModel:
    """Check a parsed spec. `overrides` replace structure arguments or `param` values by name
    (the CLI's --states / --set); a bad override is reported like a bad literal. A file the spec
    names (`x.vectors("file")`) is relative to `base_dir` (default: the working directory; a
    saved run's is the one it was fitted in), and the checked model holds its absolute path."""
    return _Checker(spec, overrides or {}, base_dir or os.getcwd()).run()


class _Checker(HeaderChecks, BlockChecks, ConstraintChecks):
    """Every pass over one spec (emc/spec/checks/), in the order `run` calls them."""

    def run(self) -> CheckedModel:
        spec = self.spec
        if spec.model is None:
            self.error(ir.Pos(1, 1, 1, 2), "a spec starts by naming its model", "write `model NAME` on the first line")
        self._finite_numbers()
        observed = self._observed()
        self._params()
        binding = self._latent(observed)
        factors: list[Factor] = []
        example_constraints: list[ExampleConstraint] = []
        symmetric = None
        sparsity: list[SparsityConstraint] = []
        if binding is not None:
            attributes = binding.structure.attributes(binding)
            factors = self._blocks(binding, attributes) + self._weights(binding, attributes)
            factors += self._constraints(binding, attributes, {f.name for f in factors})
            example_constraints = self._example_constraints(binding, attributes, {f.name for f in factors})
            symmetric = self._symmetric_constraint(binding, {f.name for f in factors} | {c.name for c in example_constraints})
            others = bool(example_constraints) or any(f.kind == "constraint" for f in factors)
            sparsity = self._sparsity_constraints(
                binding, attributes, {f.name for f in factors} | {c.name for c in example_constraints}, others)
            if not any(f.kind == "learned" for f in factors) and not self.sink.diagnostics:
                pos = spec.latents[0].pos
                self.error(pos, "the model has no learned block, so EM has nothing to estimate",
                           "add one, e.g. `multinomial emit : P(x | z)`")
        self.sink.raise_if_any()
        if self.overrides:
            names = [a.name for a in binding.structure.args] + list(self.params)
            raise EmcError(f"--set {sorted(self.overrides)[0]}: the spec has no structure argument or param of that "
                           f"name (it has {one_of(names) if names else 'none'})")
        return restate(CheckedModel(spec, binding, observed, factors, codegen_for(binding.structure.name, binding),
                                    self.params, self.base_dir, example_constraints, sparsity, symmetric=symmetric))
