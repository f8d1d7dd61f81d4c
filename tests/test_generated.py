"""generated/ holds the compiled form of every spec in specs/, and it is up to date."""
from __future__ import annotations

import pytest

from conftest import ROOT
from emc.codegen.render import render
from emc.spec.check import check
from emc.spec.parse import parse_file

SPECS = sorted((ROOT / "specs").glob("*.em"))


def test_every_spec_has_generated_code_and_nothing_else_does():
    specs = {p.stem for p in SPECS}
    generated = {p.stem for p in (ROOT / "generated").glob("*.py")}
    assert specs == generated, "run `make generated` (emc compile on every spec) and commit generated/"


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_generated_code_is_fresh(spec):
    committed = (ROOT / "generated" / f"{spec.stem}.py").read_text(encoding="utf-8")
    assert render(check(parse_file(spec))) == committed, f"generated/{spec.stem}.py is stale: run `make generated`"


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
