"""Checks of a spec's header: observed variables, params, finite numbers, and the latent variable's
structure and arguments."""
from __future__ import annotations

import math
from typing import Any

from emc.spec import ir
from emc.spec.checks.base import CheckerBase
from emc.spec.errors import EmcError, did_you_mean, one_of
from emc.spec.structure import Binding, Structure, coerce_arg
from emc.structures.registry import STRUCTURES
from emc.structures.rules import make_structure
from emc.structures.rules.program import check_program


OBSERVED_KINDS = {"tokens": "one example per line, tokens separated by whitespace",
                  "symbols": "one example per line, every non-space character a symbol"}


class HeaderChecks(CheckerBase):
    """The spec's header: its observed variables, params and numbers, and the latent
    variable's structure (a built-in or one written as rules) with its arguments."""

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
