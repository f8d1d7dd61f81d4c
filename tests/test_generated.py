"""generated/ holds the compiled form of every spec in specs/, and it is up to date; so does a
built-in structure's package for the dynamic program it states as rules (emc/structures/deptree/chart.em)."""
from __future__ import annotations

import pytest

from conftest import ROOT
from emc.codegen.render import render
from emc.spec.check import check
from emc.spec.parse import parse_file

SPECS = sorted((ROOT / "specs").glob("*.em")) + sorted((ROOT / "specs" / "rules").glob("*.em"))


def _generated(spec):
    """generated/NAME.py for specs/NAME.em; generated/rules/MODEL.py for a structure written as
    rules in specs/rules/ (emc compile names the file after the model)."""
    if spec.parent.name == "rules":
        return ROOT / "generated" / "rules" / f"{parse_file(spec).name}.py"
    return ROOT / "generated" / f"{spec.stem}.py"


def test_every_spec_has_generated_code_and_nothing_else_does():
    specs = {_generated(p) for p in SPECS}
    generated = set((ROOT / "generated").glob("*.py")) | set((ROOT / "generated" / "rules").glob("*.py"))
    assert specs == generated, "run `make generated` (emc compile on every spec) and commit generated/"


@pytest.mark.parametrize("spec", SPECS, ids=[f"{p.parent.name}/{p.stem}" for p in SPECS])
def test_generated_code_is_fresh(spec):
    committed = _generated(spec).read_text(encoding="utf-8")
    assert render(check(parse_file(spec))) == committed, f"{_generated(spec)} is stale: run `make generated`"


# dynamic programs of built-in structures stated as rules and compiled into their package
CHARTS = [ROOT / "emc" / "structures" / "deptree" / "chart.em"]


@pytest.mark.parametrize("program", CHARTS, ids=[p.parent.name for p in CHARTS])
def test_a_built_in_structures_compiled_chart_is_fresh(program):
    committed = program.with_suffix(".py").read_text(encoding="utf-8")
    assert render(check(parse_file(program))) == committed, f"{program.with_suffix('.py')} is stale: run `make generated`"


def test_numbers_in_a_spec_travel_as_data():
    """Structure sizes, smoothing and priors never become code: specs that differ only in their
    numbers generate the same module."""
    from emc.spec.parse import parse_text

    template = """model m
observed x : tokens
latent z : chain(x, states={k}, stop={stop})
multinomial trans : P(z | z.prev) smooth add({a})
multinomial emit : P(x | z) prior sparse(alpha={b}, beta=0.5)
"""
    one = render(check(parse_text(template.format(k=45, stop="yes", a=0.1, b=80), "m.em")))
    two = render(check(parse_text(template.format(k=7, stop="yes", a=2.5, b=3), "m.em")))
    assert one == two
    code = "\n".join(line.split("#", 1)[0] for line in one.splitlines())
    assert "45" not in code and "0.1" not in code and "80" not in code
