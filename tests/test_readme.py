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


def test_the_tour_runs_as_written(tmp_path, shared_data):
    """The tour's commands (after `pip install .`) in a copy of the repository's specs beside the
    corpora, as a new user runs them from a clone: each exits 0."""
    import os
    import shlex
    import shutil
    import subprocess
    import sys

    block = re.findall(r"^```\n(pip install .*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)[0]
    lines = block.replace("\\\n", " ").splitlines()
    commands = [line.split("  #")[0].strip() for line in lines if line.startswith("emc ")]
    assert len(commands) == 7
    clone = tmp_path / "main"
    shutil.copytree(ROOT / "specs", clone / "specs")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)
    emc = [sys.executable, "-c", "import sys; from emc.cli import main; sys.exit(main())"]
    for command in commands:
        words = shlex.split(command)
        target = words.index(">") if ">" in words else None
        out = (clone / words[target + 1]).open("w") if target else subprocess.PIPE
        done = subprocess.run(emc + words[1:target], cwd=clone, stdout=out, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
        assert done.returncode == 0, f"{command}: {done.stderr[-500:]}"
