"""The README opens with the two commands a new user runs, and CI runs exactly the second."""
from __future__ import annotations

import re

from conftest import ROOT


def test_ci_runs_the_readmes_test_command():
    blocks = re.findall(r"^```\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    demo, test = (block.strip() for block in blocks[:2])
    assert (demo, test) == ("make demo", "make test")
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert commands == [test]
