"""Semantic checks over the IR, with positions: a separate pass after parsing.

`check(spec)` resolves every name against the structure's declared attributes and the view
registry, assigns every block to a slot of the structure's DP, evaluates option arguments, and
returns a `CheckedModel`; or raises one SpecError listing every problem with file:line:column,
the line, a caret and a did-you-mean hint.
"""
from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

from emc.io.views import DENSE_VIEW, MAX_VIEW_LENGTH, PAIR_VIEWS, VIEWS, view_key
from emc.priors.text import SPEC_PRIORS, PriorError, make_prior
from emc.spec import ir
from emc.spec.errors import DiagnosticSink, EmcError, did_you_mean, one_of
from emc.spec.model import Bound, CheckedModel, Factor, Feature, PairFeature, ResolvedAttr
from emc.spec.structure import Attribute, Binding, SlotError, Structure, coerce_arg
from emc.structures.registry import STRUCTURES, codegen_for
from emc.structures.rules import make_structure
from emc.structures.rules.program import check_program

OBSERVED_KINDS = {"tokens": "one example per line, tokens separated by whitespace",
                  "symbols": "one example per line, every non-space character a symbol"}
WEIGHT_FUNCTIONS = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt}
SMOOTHERS = {"add": ("value",)}

# Pair features a user may expect that a block over word pairs cannot score, and why.
UNSCORABLE_PAIR_FEATURES = {
    "position": ("a block's probabilities range over word pairs, and a link's position is not a property of "
                 "its words", "the HMM aligner scores positions through a.jump (alignment(..., jump=yes))"),
}


def check(spec: ir.Spec, overrides: dict[str, Any] | None = None, base_dir: str | None = None) -> CheckedModel:
    """Check a parsed spec. `overrides` replace structure arguments or `param` values by name
    (the CLI's --states / --set); a bad override is reported like a bad literal. A file the spec
    names (`x.vectors("file")`) is relative to `base_dir` (default: the working directory; a
    saved run's is the one it was fitted in), and the checked model holds its absolute path."""
    return _Checker(spec, overrides or {}, base_dir or os.getcwd()).run()


class _Checker:
    def __init__(self, spec: ir.Spec, overrides: dict[str, Any], base_dir: str):
        self.spec = spec
        self.sink = DiagnosticSink(spec.path, spec.text)
        self.overrides = dict(overrides)
        self.base_dir = base_dir
        self.params: dict[str, float] = {}

    def error(self, pos: ir.Pos, message: str, hint: str | None = None) -> None:
        self.sink.error(pos, message, hint)

    def run(self) -> CheckedModel:
        spec = self.spec
        if spec.model is None:
            self.error(ir.Pos(1, 1, 1, 2), "a spec starts by naming its model", "write `model NAME` on the first line")
        self._finite_numbers()
        observed = self._observed()
        self._params()
        binding = self._latent(observed)
        factors: list[Factor] = []
        if binding is not None:
            attributes = binding.structure.attributes(binding)
            factors = self._blocks(binding, attributes) + self._weights(binding, attributes)
            factors += self._constraints(binding, attributes, {f.name for f in factors})
            if not any(f.kind == "learned" for f in factors) and not self.sink.diagnostics:
                pos = spec.latents[0].pos
                self.error(pos, "the model has no learned block, so EM has nothing to estimate",
                           "add one, e.g. `multinomial emit : P(x | z)`")
        self.sink.raise_if_any()
        if self.overrides:
            names = [a.name for a in binding.structure.args] + list(self.params)
            raise EmcError(f"--set {sorted(self.overrides)[0]}: the spec has no structure argument or param of that "
                           f"name (it has {one_of(names) if names else 'none'})")
        return CheckedModel(spec, binding, observed, factors, codegen_for(binding.structure.name, binding),
                            self.params, self.base_dir)

    # --- observed, params, latent ----------------------------------------------------------
    def _observed(self) -> dict[str, str]:
        observed: dict[str, str] = {}
        if not self.spec.observed:
            self.error(self._after_model(), "the spec declares no observed data",
                       "add e.g. `observed x : tokens`")
        for obs in self.spec.observed:
            if obs.name in observed:
                self.error(obs.pos, f"'{obs.name}' is declared twice")
                continue
            if obs.kind not in OBSERVED_KINDS:
                self.error(obs.kind_pos, f"unknown kind of observed data '{obs.kind}'",
                           did_you_mean(obs.kind, OBSERVED_KINDS) or f"the kinds are {one_of(OBSERVED_KINDS)}")
            observed[obs.name] = obs.kind
        return observed

    def _finite_numbers(self) -> None:
        """Every number written in the spec must be finite: `1e999` reads as infinity, which no
        argument, smoothing amount or weight can mean, and would only surface as an objective of -inf."""
        spec = self.spec
        found: list[tuple[float, ir.Pos]] = [(p.value, p.pos) for p in spec.params]
        found += [(a.value, a.value_pos) for lat in spec.latents for a in lat.args if isinstance(a.value, float)]
        exprs = [arg.value for block in spec.blocks for opt in block.options for arg in opt.args]
        exprs += [w.expr for w in spec.weights]
        refs = [ref for block in spec.blocks for ref in block.outcome + block.context]
        while exprs:
            expr = exprs.pop()
            if isinstance(expr, ir.Number):
                found.append((expr.value, expr.pos))
            elif isinstance(expr, ir.Attr):
                refs.append(expr.ref)
            elif isinstance(expr, ir.Unary):
                exprs.append(expr.operand)
            elif isinstance(expr, ir.Binary):
                exprs += [expr.left, expr.right]
            elif isinstance(expr, ir.Call):
                exprs.append(expr.argument)
        found += [(step.arg, step.pos) for ref in refs for step in ref.steps if isinstance(step.arg, float)]
        for value, pos in found:
            if not math.isfinite(value):
                self.error(pos, f"{value} is not a finite number", "numbers this large or small are "
                           "read as infinity; write a finite number")

    def _after_model(self) -> ir.Pos:
        if self.spec.model:
            p = self.spec.model.pos
            return ir.Pos(p.line, 1, p.line, p.end_column)
        return ir.Pos(1, 1, 1, 2)

    def _params(self) -> None:
        for p in self.spec.params:
            if p.name in self.params:
                self.error(p.name_pos, f"param '{p.name}' is declared twice")
                continue
            value = p.value
            if p.name in self.overrides:
                value = self._override_number(p.name, self.overrides.pop(p.name))
            self.params[p.name] = value

    def _override_number(self, name: str, raw: Any) -> float:
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise EmcError(f"--set {name}={raw}: not a number") from None
        if not math.isfinite(value):
            raise EmcError(f"--set {name}={raw}: not a finite number")
        return value

    def _latent(self, observed: dict[str, str]) -> Binding | None:
        latents = self.spec.latents
        if not latents:
            self.error(self._after_model(), "the spec declares no latent variable",
                       "add e.g. `latent z : chain(x, states=45)`")
            return None
        for extra in latents[1:]:
            self.error(extra.pos, "a model has exactly one latent variable",
                       f"'{latents[0].name}' is declared on line {latents[0].pos.line}")
        lat = latents[0]
        if lat.name in observed:
            self.error(lat.name_pos, f"'{lat.name}' is already an observed variable")
        written = self._written_structures()
        known = {**STRUCTURES, **written}
        structure = known.get(lat.structure)
        if structure is None and any(decl.name == lat.structure for decl in self.spec.structures):
            return None  # written as rules with errors, reported already
        if structure is None:
            self.error(lat.structure_pos, f"unknown structure '{lat.structure}'",
                       did_you_mean(lat.structure, known) or f"the structures are {one_of(known)}")
            return None
        bound_observed = self._bind_observed(lat, structure, observed)
        args = self._struct_args(lat, structure)
        if bound_observed is None or args is None:
            return None
        return Binding(structure, lat.name, bound_observed, args)

    def _written_structures(self) -> dict[str, Structure]:
        """The structures the spec writes as rules, checked (emc/structures/rules/program.py)."""
        written: dict[str, Structure] = {}
        for decl in self.spec.structures:
            if decl.name in STRUCTURES or decl.name in written:
                self.error(decl.name_pos, f"a structure named '{decl.name}' exists already",
                           "give the structure written as rules a name of its own")
                continue
            program = check_program(decl, self.error)
            if program is not None:
                written[decl.name] = make_structure(program)
        return written

    def _bind_observed(self, lat: ir.Latent, structure: Structure, observed: dict[str, str]) -> dict[str, str] | None:
        positional = [a for a in lat.args if a.form in ("positional", "from")]
        ok = True
        if structure.uses_from:
            want = f"{structure.name}(TARGET from SOURCE, ...)"
            if len(positional) != 1 or positional[0].form != "from":
                pos = positional[0].pos if positional else lat.structure_pos
                self.error(pos, f"{structure.name} takes the observed pair as `TARGET from SOURCE`", f"write {want}")
                return None
            target, source = positional[0].value
            names = {"target": target, "source": source}
            where = {"target": positional[0].pos, "source": positional[0].pos}
        else:
            if any(a.form == "from" for a in positional):
                bad = next(a for a in positional if a.form == "from")
                self.error(bad.pos, f"`from` is only for alignment; {structure.name} takes {structure.signature}")
                return None
            roles = structure.observed_roles + tuple(f"x{i + 2}" for i in range(structure.extra_observed))
            if not len(structure.observed_roles) <= len(positional) <= len(roles):
                pos = positional[len(roles)].pos if len(positional) > len(roles) else lat.structure_pos
                count = (f"{len(structure.observed_roles)} to {len(roles)}" if structure.extra_observed
                         else str(len(roles)))
                self.error(pos, f"{structure.name} takes {count} observed variable(s), "
                                f"not {len(positional)}", f"write {structure.signature}")
                return None
            names = {role: a.value for role, a in zip(roles, positional)}
            where = {role: a.value_pos for role, a in zip(roles, positional)}
            if len(set(names.values())) < len(names):
                self.error(positional[0].pos, f"{structure.name} takes each observed variable once")
                return None
        for role, name in names.items():
            if name not in observed:
                self.error(where[role], f"'{name}' is not an observed variable",
                           did_you_mean(name, observed) or (f"declare it: `observed {name} : tokens`"))
                ok = False
            elif observed[name] not in structure.input_kinds:
                self.error(where[role], f"{structure.name} needs observed data of kind "
                                          f"{' or '.join(structure.input_kinds)}, but '{name}' is {observed[name]}",
                           f"declare `observed {name} : {structure.input_kinds[0]}`")
                ok = False
        return names if ok else None

    def _struct_args(self, lat: ir.Latent, structure: Structure) -> dict[str, Any] | None:
        values: dict[str, Any] = {}
        given: set[str] = set()
        ok = True
        for arg in lat.args:
            if arg.form != "keyword":
                continue
            spec = structure.arg(arg.name)
            if spec is None:
                names = [a.name for a in structure.args]
                self.error(arg.pos, f"{structure.name} has no argument '{arg.name}'",
                           did_you_mean(arg.name, names) or (f"its arguments are {one_of(names)}" if names else f"it takes none: {structure.signature}"))
                ok = False
                continue
            given.add(arg.name)
            if arg.name in values:
                self.error(arg.pos, f"argument '{arg.name}' is given twice")
                ok = False
                continue
            value, problem = coerce_arg(spec, arg.value)
            if problem:
                self.error(arg.value_pos, f"{structure.name} argument {arg.name}: {problem}", f"{arg.name} must be {spec.describe()}")
                ok = False
                continue
            values[arg.name] = value
        for spec in structure.args:
            if spec.name in self.overrides:
                value, problem = coerce_arg(spec, self.overrides.pop(spec.name))
                if problem:
                    raise EmcError(f"--set {spec.name}: {problem}; {spec.name} must be {spec.describe()}")
                values[spec.name] = value
            if spec.name not in values:
                if spec.default is None and spec.name not in given and ok:
                    self.error(lat.pos, f"{structure.name} needs the argument '{spec.name}' ({spec.help})",
                               f"write {structure.signature}")
                    ok = False
                else:
                    values[spec.name] = spec.default
        return values if ok else None

    # --- blocks --------------------------------------------------------------------------
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
            enabling = _enabling_argument(binding, wanted)
            hint = (f"several parts have it: write {' or '.join(same_name)}" if len(same_name) > 1 else
                    f"{binding.structure.name} has it with {enabling}: write {binding.latent} : "
                    f"{binding.structure.name}(..., {enabling})" if enabling else
                    did_you_mean(wanted, options) or f"the attributes are {one_of(options)}; a structure with "
                    f"other attributes can be written (docs/adding-a-structure.md)")
            self.error(bad.pos if bad else ref.pos, f"unknown attribute '{wanted}'", hint)
            return None
        attribute = attributes[path]
        views: list[tuple[str, int | None]] = []
        for step in steps:
            if attribute.tokens_of is None and not (in_features and attribute.feature_views):
                wanted = f"{path}.{step.name}"
                enabling = _enabling_argument(binding, wanted)
                own = [k for k in attributes if k.startswith(binding.latent)]
                hint = (f"views of '{path}' are features only: use them inside features(...)" if attribute.feature_views
                        else f"{binding.structure.name} has it with {enabling}: write {binding.latent} : "
                             f"{binding.structure.name}(..., {enabling})" if enabling
                        else did_you_mean(wanted, attributes) or
                        f"views apply to observed tokens, and {binding.structure.name}'s attributes are {one_of(own)}; "
                        f"a structure with other attributes can be written (docs/adding-a-structure.md)")
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
            return _evaluate(self._substitute_params(expr, allow_attributes=False), {})
        except _BadExpr as err:
            self.error(err.pos, err.message, err.hint)
            return None

    # --- weights -------------------------------------------------------------------------
    def _weights(self, binding: Binding, attributes: dict[str, Attribute]) -> list[Factor]:
        factors = []
        for number, weight in enumerate(self.spec.weights, start=1):
            try:
                expr = self._substitute_params(weight.expr, allow_attributes=True)
            except _BadExpr as err:
                self.error(err.pos, err.message, err.hint)
                continue
            refs = _attr_refs(expr)
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

    # --- constraints (posterior regularization) ------------------------------------------------
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

    def _substitute_params(self, expr: ir.Expr, allow_attributes: bool) -> ir.Expr:
        if isinstance(expr, ir.Attr):
            ref = expr.ref
            if ref.base in self.params and not ref.steps:
                return ir.Number(self.params[ref.base], ref.pos)
            if not allow_attributes:
                raise _BadExpr(ref.pos, f"'{ref.text}' is not a number or a param",
                               did_you_mean(ref.base, self.params) or "declare it: `param NAME = VALUE`")
            return expr
        if isinstance(expr, ir.Unary):
            return replace(expr, operand=self._substitute_params(expr.operand, allow_attributes))
        if isinstance(expr, ir.Binary):
            return replace(expr, left=self._substitute_params(expr.left, allow_attributes),
                           right=self._substitute_params(expr.right, allow_attributes))
        if isinstance(expr, ir.Call):
            if expr.function not in WEIGHT_FUNCTIONS:
                raise _BadExpr(expr.function_pos, f"unknown function '{expr.function}'",
                               did_you_mean(expr.function, WEIGHT_FUNCTIONS) or f"the functions are {one_of(WEIGHT_FUNCTIONS)}")
            return replace(expr, argument=self._substitute_params(expr.argument, allow_attributes))
        return expr


class _BadExpr(Exception):
    def __init__(self, pos: ir.Pos, message: str, hint: str | None = None):
        super().__init__(message)
        self.pos, self.message, self.hint = pos, message, hint


def _attr_refs(expr: ir.Expr) -> list[ir.AttrRef]:
    if isinstance(expr, ir.Attr):
        return [expr.ref]
    if isinstance(expr, ir.Unary):
        return _attr_refs(expr.operand)
    if isinstance(expr, ir.Binary):
        return _attr_refs(expr.left) + _attr_refs(expr.right)
    if isinstance(expr, ir.Call):
        return _attr_refs(expr.argument)
    return []


def _evaluate(expr: ir.Expr, values: dict[str, float]) -> float:
    """Evaluate an expression with attribute values bound by their text; raises _BadExpr on a
    value outside a function's domain."""
    if isinstance(expr, ir.Number):
        return expr.value
    if isinstance(expr, ir.Attr):
        return values[expr.ref.text]
    if isinstance(expr, ir.Unary):
        return -_evaluate(expr.operand, values)
    if isinstance(expr, ir.Call):
        arg = _evaluate(expr.argument, values)
        try:
            return WEIGHT_FUNCTIONS[expr.function](arg)
        except (ValueError, OverflowError):
            raise _BadExpr(expr.pos, f"{expr.function}({arg:g}) is undefined") from None
    left, right = _evaluate(expr.left, values), _evaluate(expr.right, values)
    try:
        if expr.op == "+":
            return left + right
        if expr.op == "-":
            return left - right
        if expr.op == "*":
            return left * right
        if expr.op == "/":
            return left / right
        result = left ** right
        if isinstance(result, complex):
            raise ValueError
        return result
    except (ZeroDivisionError, OverflowError, ValueError):
        raise _BadExpr(expr.pos, f"{left:g} {expr.op} {right:g} is undefined") from None


def evaluate_weight(expr: ir.Expr, values: dict[str, float]) -> float:
    """The value of a checked weight expression at given attribute values (by attribute text);
    raises EmcError when it is undefined or not a finite non-negative number there."""
    try:
        value = _evaluate(expr, values)
    except _BadExpr as err:
        where = ", ".join(f"{k}={v:g}" for k, v in values.items())
        raise EmcError(f"weight {ir.expr_text(expr)} at {where}: {err.message}") from None
    if not math.isfinite(value) or value < 0:
        where = ", ".join(f"{k}={v:g}" for k, v in values.items())
        raise EmcError(f"weight {ir.expr_text(expr)} is {value:g} at {where}; a weight must be a finite number >= 0")
    return value


def _enabling_argument(binding: Binding, wanted: str) -> str | None:
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
