"""Bad data: each gives a clear message naming the file and line, or a documented skip with its
count; never a numba traceback or a NaN."""
from __future__ import annotations

import json

import numpy as np
import pytest

from emc.cli import main

from conftest import ROOT

SPEC = str(ROOT / "specs" / "hmm.em")


def fit(tmp_path, content: bytes, capsys, *extra) -> tuple[int, str]:
    data = tmp_path / "data.txt"
    data.write_bytes(content)
    code = main(["fit", SPEC, str(data), "--states", "2", "--iterations", "3", "--out", str(tmp_path / "run"), *extra])
    return code, capsys.readouterr().err


def test_empty_lines_and_blank_lines_are_skipped_and_counted(tmp_path, capsys):
    code, err = fit(tmp_path, b"a b c\n\n   \t \nb\tc  a\n", capsys)
    assert code == 0, err
    assert "2 examples" in err and "2 empty examples skipped" in err
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert all(np.isfinite(r["objective"]) for r in log)


def test_tabs_separate_tokens(tmp_path, capsys):
    code, err = fit(tmp_path, b"a\tb\tc\n", capsys)
    assert code == 0, err
    vocab = json.loads((tmp_path / "run" / "vocab.json").read_text())["vocab:x"]["values"]
    assert vocab == ["<unk>", "a", "b", "c"]


def test_non_utf8_byte_names_line_and_byte(tmp_path, capsys):
    code, err = fit(tmp_path, b"a b\nb \xe9t\xe9\n", capsys)
    assert code == 1
    assert "data.txt:2: error: not valid UTF-8: byte 0xe9 at column 3" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"], ids=["empty file", "only blank lines"])
def test_no_examples(tmp_path, capsys, content):
    code, err = fit(tmp_path, content, capsys)
    assert code == 1
    assert "data.txt: error: contains no sentences" in err


def test_missing_file(tmp_path, capsys):
    assert main(["fit", SPEC, str(tmp_path / "nope.txt"), "--states", "2"]) == 1
    assert "nope.txt: error: no such file" in capsys.readouterr().err


def test_conll_short_line(tmp_path, capsys):
    code, err = fit(tmp_path, b"a DT\nb\n\n", capsys, "--format", "conll", "--gold-column", "2")
    assert code == 1
    assert "data.txt:2: error: has 1 column(s)" in err


def test_gzip_is_read_transparently(tmp_path, capsys):
    import gzip
    code, err = fit(tmp_path, gzip.compress(b"a b c\nc b\n"), capsys)
    assert code == 0, err


def test_corrupt_gzip(tmp_path, capsys):
    code, err = fit(tmp_path, b"\x1f\x8bnot really gzip", capsys)
    assert code == 1 and "cannot be decompressed" in err


def test_unknown_words_at_decode(tmp_path, capsys):
    code, err = fit(tmp_path, b"a b c\nc b a\nb d\n", capsys)
    assert code == 0, err
    new = tmp_path / "new.txt"
    new.write_text("a zzz\n\nqqq\n")
    assert main(["decode", str(tmp_path / "run"), str(new)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[1] == ""
    assert out[0].split()[1].startswith("zzz/") and out[2].startswith("qqq/")
