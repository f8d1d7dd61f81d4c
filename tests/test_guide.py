"""docs/writing-models.md: every spec in it checks and fits, and its reference section is what the
registry says today (`make docs` rewrites it)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.structures.catalog import catalog_markdown
from helpers import tiny_problem

GUIDE = (ROOT / "docs" / "writing-models.md").read_text()
SPECS = re.findall(r"```em\n(.*?)```", GUIDE, re.S)
BEGIN, END = "<!-- begin reference", "<!-- end reference -->"


def test_the_guide_has_specs():
    assert len(SPECS) >= 6


@pytest.mark.parametrize("text", SPECS, ids=lambda t: re.search(r"model (\w+)", t).group(1))
def test_every_spec_in_the_guide_checks_and_fits(tmp_path, text):
    problem = tiny_problem(tmp_path, text)
    result = fit(problem, FitSettings(iterations=2, tolerance=0, eval_every=0))
    assert np.isfinite(result.objective)


def test_the_reference_section_is_current():
    start = GUIDE.index(BEGIN)
    section = GUIDE[GUIDE.index("\n", start) + 1:GUIDE.index(END)]
    assert section.strip() == catalog_markdown().strip(), "run `make docs` to rewrite the reference"


def test_the_guides_commands_name_no_file_a_clone_does_not_have(shared_data):
    """Every path an `emc ...` command of the guide names is in a clone (specs/), in the corpora
    (../shared/data/) or a run folder an earlier command's --out makes; placeholders are in capitals
    (RUN, FILE). The guide once had `emc fit specs/hsmm.em train.txt.gz`, a file no reader has."""
    made = set()
    for command in re.findall(r"`(emc [^`]+)`", GUIDE.replace("\n", " ")):
        words = command.split()
        for before, word in zip(words[1:], words[2:]):
            path = word.split("=")[-1]
            if before == "--out":
                made.add(path)
            elif ("." in path or "/" in path) and not path.startswith("-") and path not in made:
                where = shared_data / path[len("../shared/data/"):] if path.startswith("../shared/data/") else ROOT / path
                assert where.exists(), f"docs/writing-models.md: `{command}` names {path}, which a clone does not have"


def test_the_guides_first_steps_run_as_written(tmp_path, shared_data):
    """Steps 4 to 7 of 'From an idea to a fitted model', in a copy of specs/ beside the corpora,
    as a reader runs them from a clone: each exits 0."""
    import os
    import shlex
    import shutil
    import subprocess
    import sys

    steps = GUIDE[GUIDE.index("4. **Check it**"):GUIDE.index("That model is `specs/hmm_suffix.em`")]
    commands = [c for c in re.findall(r"`(emc [^`]+)`", steps.replace("\n   ", " ")) if " " in c[4:]]
    assert [c.split()[1] for c in commands] == ["check", "info", "fit", "decode"]
    clone = tmp_path / "main"
    shutil.copytree(ROOT / "specs", clone / "specs")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)
    for command in commands:
        words = shlex.split(command)[1:]
        # the fit as written, for 2 iterations: the step's flags and data are what runs here (its default
        # 100 iterations on CoNLL-2000 made this the suite's longest test)
        if words[0] == "fit":
            words += ["--iterations", "2"]
        done = subprocess.run([sys.executable, "-c", "import sys; from emc.cli import main; sys.exit(main())",
                               *words], cwd=clone, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900)
        assert done.returncode == 0, f"{command}: {done.stderr[-500:]}"
