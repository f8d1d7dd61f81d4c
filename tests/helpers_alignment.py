"""Alignment test helpers: a spec copied where the CLI tests compile it. The brute force over
alignments is tests/reference.py's alignment_structures."""
from __future__ import annotations

from pathlib import Path

from conftest import ROOT


def spec_copy(folder: Path, spec: str) -> str:
    """specs/SPEC as folder/test.em: the CLI then compiles the same module as the API tests'
    problem_from_lines (named after test.em), so the suite compiles it once."""
    path = folder / "test.em"
    path.write_text((ROOT / "specs" / spec).read_text())
    return str(path)

