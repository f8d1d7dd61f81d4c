"""Checks of `multinomial` blocks: outcome and context, the slot they fill, and their options."""
from __future__ import annotations

import math

from emc.io.views import view_key
from emc.priors.text import SPEC_PRIORS, PriorError, make_prior
from emc.spec import ir
from emc.spec.checks.expressions import BadExpr, evaluate
from emc.spec.checks.features import FeatureChecks
from emc.spec.checks.weights import WeightChecks
from emc.spec.errors import did_you_mean, one_of
from emc.spec.model import Factor
from emc.spec.structure import Attribute, Binding


SMOOTHERS = {"add": ("value",)}


class BlockChecks(FeatureChecks, WeightChecks):
    """`multinomial NAME : P(outcome | context)` blocks and their options (fixed,
    smoothing, a prior, features, l2)."""

    def _blocks(self, binding: Binding, attributes: dict[str, Attribute]) -> list[Factor]:
        factors: list[Factor] = []
        by_name: dict[str, Factor] = {}
        for block in self.spec.blocks:
            if block.name in by_name or block.name in (binding.latent, *binding.observed.values()):
                shares = block.option("shares")
                self.error(block.name_pos, f"the name '{block.name}' is already used",
                           "to tie parameters with a block, give this one a new name and add `shares "
                           f"{block.name}`" if block.name in by_name and shares is None else None)
                continue
            outcome = self._resolve_all(block.outcome, attributes, binding)
            context = self._resolve_all(block.context, attributes, binding)
            if outcome is None or context is None:
                continue
            if not self._distinct(outcome + context):
                continue
            slot = self._slot(binding, block, outcome, context)
            if slot is None:
                continue
            factor = Factor(
                name=block.name, kind="learned", table=block.name, slot=slot, outcome=outcome, context=context,
                outcome_spaces=tuple(binding.structure.table_space(binding, a.attribute, slot, True) + view_key(a.views) for a in outcome),
                context_spaces=tuple(binding.structure.table_space(binding, a.attribute, slot, False) + view_key(a.views) for a in context),
                pos=block.pos)
            if self._options(block, factor, by_name, attributes, binding):
                by_name[block.name] = factor
                factors.append(factor)
        return factors

    def _options(self, block: ir.Block, factor: Factor, by_name: dict[str, Factor],
                 attributes: dict[str, Attribute], binding: Binding) -> bool:
        ok = True
        seen: set[str] = set()
        smoothing = 0.0
        for opt in block.options:
            if opt.keyword in seen and opt.keyword != "smooth":
                self.error(opt.pos, f"'{opt.keyword}' is given twice for block '{block.name}'")
                ok = False
                continue
            seen.add(opt.keyword)
            if opt.keyword == "fixed":
                factor.kind, factor.fixed_path = "fixed", opt.path
            elif opt.keyword == "shares":
                target = by_name.get(opt.kind)
                if target is None:
                    self.error(opt.kind_pos, f"no earlier block named '{opt.kind}' to share parameters with",
                               did_you_mean(opt.kind, by_name))
                    ok = False
                elif (target.outcome_spaces, target.context_spaces) != (factor.outcome_spaces, factor.context_spaces):
                    self.error(opt.pos, f"block '{block.name}' cannot share the table of '{opt.kind}': "
                                        f"{factor.signature} and {target.signature} range over different values",
                               "tied blocks need outcomes and contexts of the same kinds")
                    ok = False
                else:
                    factor.table = target.table
                    factor.kind = target.kind
            elif opt.keyword == "smooth":
                value = self._option_values(opt, SMOOTHERS, block)
                if value is not None:
                    (amount,) = value
                    if amount < 0:
                        self.error(opt.pos, "smoothing must be >= 0")
                        ok = False
                    smoothing = amount
                else:
                    ok = False
            elif opt.keyword == "prior":
                value = self._option_values(opt, SPEC_PRIORS, block)
                if value is None:
                    ok = False
                    continue
                try:
                    factor.prior = make_prior(opt.kind, value)
                except PriorError as err:
                    self.error(opt.pos, str(err))
                    ok = False
            elif opt.keyword == "features":
                features = self._features(opt, factor, attributes, binding)
                if features is None:
                    ok = False
                else:
                    factor.features, factor.pair_features = features
            elif opt.keyword == "l2":
                kappa = self._constant(opt.args[0].value)
                if kappa is None or not math.isfinite(kappa):  # the finite-number pass reports inf
                    ok = False
                elif kappa < 0:
                    self.error(opt.args[0].pos, f"l2({kappa:g}): the penalty must be a finite number >= 0")
                    ok = False
                else:
                    factor.l2 = kappa
        factor.prior = factor.prior.with_smoothing(smoothing)
        if factor.kind == "fixed" and not factor.prior.uniform:
            self.error(block.pos, f"block '{block.name}' is fixed: it is never re-estimated, so smoothing and priors do not apply")
            ok = False
        ok = ok and self._featured_options(block, factor, seen)
        return ok

    def _option_values(self, opt: ir.Option, table: dict[str, tuple[str, ...]], block: ir.Block) -> tuple[float, ...] | None:
        names = table.get(opt.kind)
        if names is None:
            self.error(opt.kind_pos, f"unknown {opt.keyword} '{opt.kind}'",
                       did_you_mean(opt.kind, table) or f"the choices are {one_of(table)}")
            return None
        if len(opt.args) != len(names):
            self.error(opt.pos, f"{opt.keyword} {opt.kind} takes {len(names)} argument(s): {', '.join(names)}",
                       f"write {opt.keyword} {opt.kind}({', '.join(f'{n}=...' for n in names)})")
            return None
        values: dict[str, float] = {}
        for i, arg in enumerate(opt.args):
            name = arg.name or names[i]
            if name not in names:
                self.error(arg.pos, f"{opt.keyword} {opt.kind} has no argument '{name}'",
                           did_you_mean(name, names) or f"its arguments are {one_of(names)}")
                return None
            value = self._constant(arg.value)
            if value is None:
                return None
            values[name] = value
        return tuple(values[n] for n in names)

    def _constant(self, expr: ir.Expr) -> float | None:
        """Evaluate an option argument: numbers, params and arithmetic, no attributes."""
        try:
            return evaluate(self._substitute_params(expr, allow_attributes=False), {})
        except BadExpr as err:
            self.error(err.pos, err.message, err.hint)
            return None
