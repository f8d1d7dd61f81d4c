"""Checks of `weight` declarations: expressions over numeric attributes and params."""
from __future__ import annotations

from dataclasses import replace

from emc.spec import ir
from emc.spec.checks.attributes import AttributeChecks
from emc.spec.checks.expressions import WEIGHT_FUNCTIONS, BadExpr, attr_refs
from emc.spec.errors import did_you_mean, one_of
from emc.spec.model import Factor, ResolvedAttr
from emc.spec.structure import Attribute, Binding


class WeightChecks(AttributeChecks):
    """`weight NAME : EXPR` over numeric attributes, with params substituted."""

    def _weights(self, binding: Binding, attributes: dict[str, Attribute]) -> list[Factor]:
        factors = []
        for number, weight in enumerate(self.spec.weights, start=1):
            try:
                expr = self._substitute_params(weight.expr, allow_attributes=True)
            except BadExpr as err:
                self.error(err.pos, err.message, err.hint)
                continue
            refs = attr_refs(expr)
            resolved = self._resolve_all(refs, attributes, binding)
            if resolved is None:
                continue
            bad = [a for a in resolved if not a.attribute.numeric or a.views]
            if bad:
                numeric = [p for p, a in attributes.items() if a.numeric]
                self.error(bad[0].pos, f"'{bad[0].text}' is not a number; a weight is a function of numeric attributes",
                           f"numeric attributes here: {one_of(numeric)}" if numeric else f"{binding.structure.name} has no numeric attributes")
                continue
            if not resolved:
                self.error(weight.pos, "this weight does not depend on the structure, so it cannot change the posterior")
                continue
            unique: dict[str, ResolvedAttr] = {}
            for a in resolved:
                unique.setdefault(a.text, a)
            slots = {a.attribute.slot for a in unique.values()}
            if len(slots) > 1:
                self.error(weight.pos, "a weight's attributes must belong to the same part of the structure")
                continue
            name = weight.name or f"weight{number}"
            outcome = tuple(unique.values())
            factors.append(Factor(name=name, kind="weight", table=name, slot=slots.pop(), outcome=outcome, context=(),
                                  outcome_spaces=tuple(a.space for a in outcome), context_spaces=(),
                                  pos=weight.pos, expr=expr))
        return factors

    def _substitute_params(self, expr: ir.Expr, allow_attributes: bool) -> ir.Expr:
        if isinstance(expr, ir.Attr):
            ref = expr.ref
            if ref.base in self.params and not ref.steps:
                return ir.Number(self.params[ref.base], ref.pos)
            if not allow_attributes:
                raise BadExpr(ref.pos, f"'{ref.text}' is not a number or a param",
                               did_you_mean(ref.base, self.params) or "declare it: `param NAME = VALUE`")
            return expr
        if isinstance(expr, ir.Unary):
            return replace(expr, operand=self._substitute_params(expr.operand, allow_attributes))
        if isinstance(expr, ir.Binary):
            return replace(expr, left=self._substitute_params(expr.left, allow_attributes),
                           right=self._substitute_params(expr.right, allow_attributes))
        if isinstance(expr, ir.Call):
            if expr.function not in WEIGHT_FUNCTIONS:
                raise BadExpr(expr.function_pos, f"unknown function '{expr.function}'",
                               did_you_mean(expr.function, WEIGHT_FUNCTIONS) or f"the functions are {one_of(WEIGHT_FUNCTIONS)}")
            return replace(expr, argument=self._substitute_params(expr.argument, allow_attributes))
        return expr
