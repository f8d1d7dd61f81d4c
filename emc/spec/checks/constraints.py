"""Checks of corpus-level constraints (posterior regularization), compiled like fixed blocks."""
from __future__ import annotations

import math
import os

from emc.io.views import view_key
from emc.spec import ir
from emc.spec.checks.attributes import AttributeChecks
from emc.spec.model import Bound, Factor
from emc.spec.structure import Attribute, Binding


class ConstraintChecks(AttributeChecks):
    """`constraint NAME : E[attrs in "FILE"] >= b` (posterior regularization)."""

    def _constraints(self, binding: Binding, attributes: dict[str, Attribute], taken: set[str]) -> list[Factor]:
        """Each `constraint NAME : E[attrs in "FILE"] >= b` as a factor of kind "constraint": a table
        over its attributes' values (laid out as a block's outcome) in the slot they belong to."""
        factors = []
        for c in self.spec.constraints:
            if c.name in taken or c.name in (binding.latent, *binding.observed.values()):
                self.error(c.name_pos, f"the name '{c.name}' is already used", "give the constraint a name of its own")
                continue
            taken.add(c.name)
            bound_ok = math.isfinite(c.bound) and 0.0 <= c.bound <= 1.0
            if not bound_ok:
                self.error(c.bound_pos, f"the bound {c.bound:g} is not a share of parts",
                           "a constraint bounds the expected share of the parts whose values are listed: "
                           "give a number from 0 to 1")
            path = os.path.abspath(os.path.join(self.base_dir, c.path))
            if not os.path.isfile(path):
                self.error(c.path_pos, f"no such file of listed values: '{c.path}' ({path})",
                           "a path is relative to the directory emc runs in (a saved model's: the one it was "
                           "fitted in), as a fixed block's file is")
                path = None
            attrs = self._resolve_all(c.attrs, attributes, binding)
            if attrs is None or not self._distinct(attrs):
                continue
            block = ir.Block(c.name, c.attrs, (), (), c.pos, c.name_pos)  # the slot is found as a block's is
            slot = self._slot(binding, block, attrs, ())
            if slot is None or path is None or not bound_ok:
                continue
            spaces = tuple(binding.structure.table_space(binding, a.attribute, slot, True) + view_key(a.views)
                           for a in attrs)
            factors.append(Factor(name=c.name, kind="constraint", table=c.name, slot=slot, outcome=attrs, context=(),
                                  outcome_spaces=spaces, context_spaces=(), pos=c.pos,
                                  bound=Bound(path, c.op, c.bound, c.path)))
        return factors
