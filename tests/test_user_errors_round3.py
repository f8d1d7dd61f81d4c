"""What a user hit in round 3 of attacking the CLI (issue 33): resuming on changed data, settings
that never end, damaged run folders, hostile numbers and bytes. Each is refused with a one-line
message (exit status 1 or 2, no traceback) and leaves saved files as they were."""
from __future__ import annotations

import numpy as np
import pytest

from emc.cli import main

from conftest import ROOT

SPEC = str(ROOT / "specs" / "hmm.em")


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("a b c\nb c a\nc a b a\n")
    return path


def fit(data, out, *extra) -> int:
    return main(["fit", SPEC, str(data), "--states", "2", "--iterations", "3", "--out", str(out), "--quiet", *extra])


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_resume_on_changed_data_is_refused(tmp_path, data, capsys):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    data.write_text("a b\n")
    capsys.readouterr()
    assert main(["fit", "--resume", str(run), "--quiet"]) == 1
    message = one_line_error(capsys)
    assert f"{data} changed since the fit began (20 -> 4 bytes" in message
    assert "another --out" in message and f"delete {run}" in message
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_resume_on_the_same_data_touched_goes_on(tmp_path, data, capsys):
    import os

    run = tmp_path / "run"
    assert fit(data, run) == 0
    os.utime(data, (1, 1))  # a new modification time, the same bytes
    assert main(["fit", "--resume", str(run), "--quiet"]) == 0
