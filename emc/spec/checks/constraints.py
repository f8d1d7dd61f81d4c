"""Checks of constraints on the posterior (posterior regularization): corpus-level ones, compiled like
fixed blocks, and per-example ones, which a structure's glue projects."""
from __future__ import annotations

import math
import os

from emc.io.views import view_key
from emc.spec import ir
from emc.spec.checks.attributes import AttributeChecks
from emc.spec.errors import one_of
from emc.spec.model import Bound, ExampleConstraint, Factor, SymmetricConstraint, SparsityConstraint
from emc.spec.structure import Attribute, Binding


class ConstraintChecks(AttributeChecks):
    """`constraint NAME : E[attrs in "FILE"] >= b` and `constraint NAME : E[count per a.source] <= b`
    (posterior regularization)."""

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

    def _example_constraints(self, binding: Binding, attributes: dict[str, Attribute],
                             taken: set[str]) -> list[ExampleConstraint]:
        """Each `constraint NAME : E[count per a.source] <= b`: an attribute whose positions the
        structure's glue can group parts by (Structure.per_position), a bound of 0 or more; one
        per spec (the glue compiles one projection)."""
        out = []
        allowed = [f"{binding.latent}.{name}" for name in binding.structure.per_position]
        for c in self.spec.example_constraints:
            if c.name in taken or c.name in (binding.latent, *binding.observed.values()):
                self.error(c.name_pos, f"the name '{c.name}' is already used", "give the constraint a name of its own")
                continue
            taken.add(c.name)
            if not (math.isfinite(c.bound) and c.bound >= 0.0):
                self.error(c.bound_pos, f"the bound {c.bound:g} is not a number of parts",
                           "a per-example constraint bounds the expected number of parts at each position: "
                           "give a number of 0 or more")
                continue
            if c.attr.text not in allowed:
                where = f"only {one_of(allowed)}" if allowed else "none of its attributes"
                self.error(c.attr.pos, f"a per-example constraint cannot group the parts of a "
                                       f"{binding.structure.name} by the positions of '{c.attr.text}'",
                           f"the {binding.structure.name} structure compiles the projection for {where}")
                continue
            if out:
                self.error(c.pos, f"a spec has one per-example constraint ('{out[0].name}' is one)",
                           "the generated E-step projects onto one")
                continue
            attr = self._resolve(c.attr, attributes, binding)
            if attr is not None:
                out.append(ExampleConstraint(c.name, attr, c.op, c.bound, c.pos))
        return out

    def _symmetric_constraint(self, binding: Binding, taken: set[str]) -> SymmetricConstraint | None:
        """`constraint NAME : E[a] agree`: `a` the latent, of a structure with two directions
        (Structure.symmetric); one per spec."""
        out = None
        for c in self.spec.symmetric_constraints:
            if c.name in taken or c.name in (binding.latent, *binding.observed.values()):
                self.error(c.name_pos, f"the name '{c.name}' is already used", "give the constraint a name of its own")
                continue
            taken.add(c.name)
            if c.latent != binding.latent:
                self.error(c.latent_pos, f"'{c.latent}' is not the latent structure",
                           f"the directions' posteriors of the latent agree: write E[{binding.latent}] agree")
                continue
            if not binding.structure.symmetric:
                self.error(c.pos, f"a {binding.structure.name} has no two directions whose posteriors could agree",
                           "E[a] agree is for an alignment (trained source->target and target->source)")
                continue
            if out is not None:
                self.error(c.pos, f"a spec has one symmetry constraint ('{out.name}' is one)", "keep one statement")
                continue
            out = SymmetricConstraint(c.name, c.pos)
        return out

    def _sparsity_constraints(self, binding: Binding, attributes: dict[str, Attribute], taken: set[str],
                              others: bool) -> list[SparsityConstraint]:
        """Each `constraint NAME : E[max z per x] penalty s`: the (state, token) attributes the
        structure's glue compiles posterior sparsity for (Structure.per_type), a penalty of 0 or
        more; one per spec, and no other constraint beside it (`others`: the spec has one)."""
        out = []
        pair = binding.structure.per_type(binding)
        for c in self.spec.sparsity_constraints:
            if c.name in taken or c.name in (binding.latent, *binding.observed.values()):
                self.error(c.name_pos, f"the name '{c.name}' is already used", "give the constraint a name of its own")
                continue
            taken.add(c.name)
            if not (math.isfinite(c.penalty) and c.penalty >= 0.0):
                self.error(c.penalty_pos, f"the penalty {c.penalty:g} is not a weight",
                           "posterior sparsity adds penalty times the summed largest posteriors: give a number of 0 "
                           "or more (0 is plain EM)")
                continue
            if pair is None:
                self.error(c.pos, f"the {binding.structure.name} structure {self._structure_args(binding)}does not "
                                  "compile posterior sparsity",
                           "E[max z per x] is compiled for a first-order chain (chain(x, states=K))")
                continue
            bad = [(ref, want) for ref, want in ((c.state, pair[0]), (c.word, pair[1])) if ref.text != want]
            if bad:
                ref, want = bad[0]
                self.error(ref.pos, f"posterior sparsity of a {binding.structure.name} is written "
                                    f"E[max {pair[0]} per {pair[1]}], not with '{ref.text}'", f"write '{want}' here")
                continue
            if out or others:
                self.error(c.pos, "posterior sparsity is a spec's only constraint",
                           "the E-step projects onto one sparsity constraint and nothing else: keep one statement")
                continue
            state, word = self._resolve(c.state, attributes, binding), self._resolve(c.word, attributes, binding)
            if state is not None and word is not None:
                out.append(SparsityConstraint(c.name, state, word, c.penalty, c.pos))
        return out

    @staticmethod
    def _structure_args(binding: Binding) -> str:
        order = binding.args.get("order")
        return f"of order {order} " if order is not None and order != 1 else ""
