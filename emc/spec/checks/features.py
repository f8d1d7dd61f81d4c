"""Checks of a block's features: `features(...)` over its outcome's views and `pair_features(...)`
over word pairs."""
from __future__ import annotations

from emc.io.views import PAIR_VIEWS
from emc.spec import ir
from emc.spec.checks.attributes import AttributeChecks
from emc.spec.errors import did_you_mean, one_of
from emc.spec.model import Factor, Feature, PairFeature
from emc.spec.structure import Attribute, Binding


# Pair features a user may expect that a block over word pairs cannot score, and why.
UNSCORABLE_PAIR_FEATURES = {
    "position": ("a block's probabilities range over word pairs, and a link's position is not a property of "
                 "its words", "the HMM aligner scores positions through a.jump (alignment(..., jump=yes))"),
}


class FeatureChecks(AttributeChecks):
    """A block's `features(...)` and `pair_features(...)` options."""

    def _featured_options(self, block: ir.Block, factor: Factor, seen: set[str]) -> bool:
        """A featured block is a learned, unshared log-linear table; `l2` only goes with features."""
        if not factor.features:
            if "l2" in seen:
                self.error(block.option("l2").pos, "l2(...) penalises the weights of features; this block has none",
                           "add features(...) to the block, or drop l2")
                return False
            return True
        clash = next((k for k in ("fixed", "shares", "smooth", "prior") if k in seen), None)
        if clash is not None:
            self.error(block.option(clash).pos, f"a featured block cannot be '{clash}'",
                       "its probabilities come from feature weights, regularised by l2(kappa)"
                       if clash in ("smooth", "prior") else "give the block its own table, learned")
            return False
        return True

    def _features(self, opt: ir.Option, factor: Factor, attributes: dict[str, Attribute],
                  binding: Binding) -> tuple[tuple[Feature, ...], tuple[PairFeature, ...]] | None:
        """The feature views of a block, each a view chain of its one observed outcome, and its
        pair features (`pair.same`, ...), which compare the outcome word with the context word."""
        outcome = factor.outcome[0] if len(factor.outcome) == 1 else None
        if outcome is None or (outcome.attribute.tokens_of is None and not outcome.attribute.feature_views):
            self.error(opt.pos, "features describe an observed outcome: a featured block has one observed "
                                f"outcome (its outcome here is {', '.join(a.text for a in factor.outcome)})",
                       "e.g. `multinomial emit : P(x | z) features(x, x.suffix(2))`")
            return None
        features: dict[str, Feature] = {}
        pairs: dict[str, PairFeature] = {}
        variables = {binding.latent, *binding.observed.values()}
        for arg in opt.args:
            ref = arg.value.ref
            if ref.base == "pair" and "pair" not in variables:
                pair = self._pair_feature(ref, factor)
                if pair is None:
                    return None
                if pair.text in pairs:
                    self.error(ref.pos, f"the feature '{ref.text}' is given twice")
                    return None
                pairs[pair.text] = pair
                continue
            resolved = self._resolve(ref, attributes, binding, in_features=True)
            if resolved is None:
                return None
            prefix = outcome.views
            if resolved.attribute is not outcome.attribute or resolved.views[:len(prefix)] != prefix:
                self.error(ref.pos, f"'{ref.text}' is not a view of the block's outcome '{outcome.text}'",
                           f"a feature is {outcome.text} or a view of it, e.g. {outcome.text}.suffix(2)")
                return None
            if resolved.text in features:
                self.error(ref.pos, f"the feature '{ref.text}' is given twice")
                return None
            features[resolved.text] = Feature(resolved.text, resolved.views[len(prefix):])
        if not features:
            self.error(opt.pos, "a featured block needs at least one feature of its outcome beside pair features",
                       f"add {outcome.text} (its identity), e.g. features({outcome.text}, pair.same)")
            return None
        return tuple(features.values()), tuple(pairs.values())

    def _pair_feature(self, ref: ir.AttrRef, factor: Factor) -> PairFeature | None:
        """`pair.NAME` or `pair.NAME(n)`: a test of the outcome word against the context word."""
        step = ref.steps[0] if len(ref.steps) == 1 else None
        if step is None:
            self.error(ref.pos, f"'{ref.text}' is not a pair feature", f"the pair features are "
                       f"{one_of([f'pair.{v.name}' + ('(n)' if v.takes_length else '') for v in PAIR_VIEWS.values()])}")
            return None
        if step.name in UNSCORABLE_PAIR_FEATURES:
            why, hint = UNSCORABLE_PAIR_FEATURES[step.name]
            self.error(step.pos, f"'pair.{step.name}' cannot be scored: {why}", hint)
            return None
        view = PAIR_VIEWS.get(step.name)
        if view is None:
            self.error(step.pos, f"unknown pair feature 'pair.{step.name}'",
                       did_you_mean(step.name, PAIR_VIEWS) or f"the pair features are {one_of(PAIR_VIEWS)}")
            return None
        words = [a for a in factor.outcome + factor.context if a.attribute.tokens_of is not None]
        if len(factor.outcome) != 1 or len(factor.context) != 1 or len(words) != 2:
            self.error(ref.pos, f"'{ref.text}' compares the block's outcome word with its context word, and "
                                f"{factor.signature} is not one word given one word",
                       "pair features go on a block over word pairs, e.g. P(a.target | a.source)")
            return None
        n = self._view_length(step, "pair", view.takes_length)
        if n is False:
            return None
        return PairFeature(f"pair.{view.name}" + (f"({n})" if n is not None else ""), view.name, n)
