"""The HMM end to end through the CLI: sample, fit, decode (Viterbi and posteriors), compile, info."""
from __future__ import annotations

import json

import numpy as np

from conftest import ROOT
from emc.cli import main

SPEC = str(ROOT / "specs" / "hmm.em")


def test_sample_fit_decode(tmp_path, capsys):
    assert main(["sample", SPEC, "--examples", "300", "--seed", "3", "--states", "4", "--vocab-size", "40",
                 "--format", "conll"]) == 0
    data = tmp_path / "synthetic.conll"
    data.write_text(capsys.readouterr().out)
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(data), "--format", "conll", "--gold-column", "2", "--states", "4",
                 "--iterations", "15", "--seed", "1", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert "iter   15" in err and "many_to_one" in err
    with np.load(run / "params.npz") as params:
        assert {"theta", "table_trans", "table_emit"} <= set(params.files)
        np.testing.assert_allclose(params["table_emit"].sum(axis=0), 1.0)
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in log] == list(range(1, 16))
    assert all("objective" in r for r in log)
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("w1 w2 w3\n\nw4 never-seen\n")
    assert main(["decode", str(run), str(sentences)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[1] == "" and [t.split("/")[0] for t in lines[2].split()] == ["w4", "never-seen"]
    tags = [int(t.split("/")[1]) for t in lines[0].split()]
    assert len(tags) == 3 and all(0 <= t < 4 for t in tags)
    assert main(["decode", str(run), str(sentences), "--posteriors"]) == 0
    posterior = capsys.readouterr().out
    probs = [float(p.split(":")[1]) for line in posterior.splitlines() if "\t" in line for p in line.split("\t")[1].split()]
    assert probs and all(0 <= p <= 1 for p in probs)


def test_init_from_a_saved_run(tmp_path, capsys):
    data = tmp_path / "a.txt"
    data.write_text("a b c\nc b a\n")
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(data), "--states", "2", "--iterations", "3", "--out", str(run)]) == 0
    more = tmp_path / "b.txt"
    more.write_text("a b c d\n")
    assert main(["fit", SPEC, str(more), "--init", str(run), "--iterations", "2", "--out", str(tmp_path / "run2")]) == 0
    assert "error" not in capsys.readouterr().err


def test_compile_writes_readable_code(tmp_path, capsys):
    assert main(["compile", SPEC, "--out-dir", str(tmp_path)]) == 0
    source = (tmp_path / "hmm.py").read_text()
    assert "def estep_example" in source and "emit: P(x | z)" in source
    compile(source, "hmm.py", "exec")


def test_info_describes_the_model_and_its_tables(tmp_path, capsys):
    data = tmp_path / "a.txt"
    data.write_text("a b c\nc b a\n")
    assert main(["info", SPEC, str(data)]) == 0
    out = capsys.readouterr().out
    assert "forward-backward" in out and "table emit" in out and "4 outcomes" in out


def test_demo(tmp_path, capsys):
    assert main(["demo", "--examples", "300", "--states", "3", "--iterations", "20", "--out", str(tmp_path / "demo")]) == 0
    assert "states recovered" in capsys.readouterr().out
