"""The README opens with the two commands a new user runs, and CI runs exactly the second."""
from __future__ import annotations

import re

import pytest

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
    corpora, as a new user runs them from a clone, then the next paragraph's decode of a plain text
    file: each exits 0."""
    import os
    import shlex
    import shutil
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text()
    block = re.findall(r"^```\n(pip install .*?)^```", readme, re.S | re.M)[0]
    lines = block.replace("\\\n", " ").splitlines()
    commands = [line.split("  #")[0].strip() for line in lines if line.startswith("emc ")]
    assert len(commands) == 7
    after = readme[readme.index(block) + len(block):]
    commands += re.findall(r"`(emc decode runs/hmm [^`]+)`", after[:after.index("\n\n", 5)])  # the paragraph's
    assert len(commands) == 8
    clone = tmp_path / "main"
    shutil.copytree(ROOT / "specs", clone / "specs")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)
    emc = [sys.executable, "-c", "import sys; from emc.cli import main; sys.exit(main())"]
    for command in commands:
        words = shlex.split(command)
        if words[1] == "fit":  # as written, for 2 of its 50 iterations: what is tested is that the command runs
            words.append("--iterations=2")
        target = words.index(">") if ">" in words else None
        out = (clone / words[target + 1]).open("w") if target else subprocess.PIPE
        done = subprocess.run(emc + words[1:target], cwd=clone, stdout=out, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
        assert done.returncode == 0, f"{command}: {done.stderr[-500:]}"


def _blocks(language: str = "") -> list[str]:
    """The README's fenced blocks in `language` (none: shell) that run emc, but the tour's."""
    blocks = re.findall(rf"^```{language}\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    return [b for b in blocks if re.search(r"^(emc |import emc)", b, re.M) and not b.startswith("pip install")]


def _clone(tmp_path, shared_data):
    """A copy of the repository's specs beside the corpora, as a new user's clone; `emc` on PATH."""
    import os
    import shutil
    import sys

    clone = tmp_path / "main"
    shutil.copytree(ROOT / "specs", clone / "specs")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # each fit as written, for 2 iterations or 1 pass (as the tour's): what is tested is that it runs
    (bin_dir / "emc").write_text(f"#!{sys.executable}\nimport sys\nfrom emc.cli import main\nargs = sys.argv[1:]\n"
                                 f"sys.exit(main(args + ['--iterations=2', '--passes=1'] if args[:1] == ['fit'] "
                                 f"else args))\n")
    (bin_dir / "emc").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return clone, env


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def test_the_readme_names_no_file_a_clone_does_not_have():
    """Every path an `emc` line of a block names is in the corpora, in specs/, or written by an
    earlier line of the same block (a run folder, a `> FILE`): no placeholder a user lacks."""
    for block in _blocks():
        made = {"specs"}
        for line in block.replace("\\\n", " ").splitlines():
            words = line.split("#")[0].split()
            named = [w.split("=")[-1] for i, w in enumerate(words) if i > 1 and words[i - 1] not in (">", "--out")]
            for path in named if words[:1] == ["emc"] else []:
                if ("." in path or "/" in path) and not path.startswith(("-", "$", "../shared/data/")) \
                        and not _is_number(path):
                    assert path.split("/")[0] in made, f"README: `{line.strip()}` names {path}, which no line makes"
            made |= {w.split("/")[0] for i, w in enumerate(words) if i and words[i - 1] in (">", "--out")}


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_blocks())))
def test_every_block_of_commands_runs_as_written(tmp_path, shared_data, index):
    """Each block of commands after the tour, run from the shell in a fresh clone: each exits 0."""
    import subprocess

    block = _blocks()[index]
    clone, env = _clone(tmp_path, shared_data)
    done = subprocess.run(["bash", "-e", "-c", block], cwd=clone, capture_output=True, text=True, env=env,
                          timeout=1200)
    assert done.returncode == 0, f"README block:\n{block}\nfailed: {done.stderr[-800:]}"


def test_the_python_example_runs_as_written(tmp_path, shared_data):
    import subprocess
    import sys

    (block,) = _blocks("python")
    clone, env = _clone(tmp_path, shared_data)
    done = subprocess.run([sys.executable, "-c", block], cwd=clone, capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-800:]
