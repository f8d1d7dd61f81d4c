"""A plain `pip install .` ships the grammar, the templates and the specs inside the package."""
from __future__ import annotations

import tomllib
from importlib import resources

from conftest import ROOT


def test_every_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "emc").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject.toml packages: {sorted(found - listed)}"


def test_resources_ship_with_the_installed_package():
    assert "start:" in resources.files("emc.grammars").joinpath("em.lark").read_text()
    assert resources.files("emc.codegen").joinpath("templates", "chain.py.j2").is_file()
    assert "model hmm" in resources.files("emc.specs").joinpath("hmm.em").read_text()


def test_the_rule_programs_ship_too():
    assert "structure tags(x" in resources.files("emc.specs.rules").joinpath("chain.em").read_text()
