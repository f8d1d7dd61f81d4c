"""The label structure end to end through the CLI: fit on gzipped JSON lines, decode one class per
line (label names when supervised), posteriors, the class count override, and `emc info`."""
from __future__ import annotations

import gzip
import json

import numpy as np

from conftest import ROOT
from emc.cli import main
from helpers_label import mixture_documents, write_jsonl

SPEC = str(ROOT / "specs" / "naive_bayes.em")


def gzipped_mixture(tmp_path, labeled=frozenset()):
    docs, gold = mixture_documents(np.random.default_rng(11), classes=3, documents=150)
    plain = write_jsonl(tmp_path / "docs.jsonl", docs, gold, labeled=set(labeled), field="label_given")
    path = tmp_path / "docs.jsonl.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()))
    return path, gold


def test_fit_and_decode_clusters(tmp_path, capsys):
    path, gold = gzipped_mixture(tmp_path)
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(path), "--format", "jsonl", "--classes", "3", "--iterations", "20", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert "150 examples" in err and "many_to_one" in err
    info = json.loads((run / "run.json").read_text())
    assert info["args"] == {"classes": 3}
    with np.load(run / "params.npz") as params:
        assert params["table_emit"].shape[1] == 3
        np.testing.assert_allclose(params["table_emit"].sum(axis=0), 1.0)
    assert main(["decode", str(run), str(path), "--format", "jsonl"]) == 0
    out = capsys.readouterr()
    classes = out.out.splitlines()
    assert len(classes) == 150 and set(classes) <= {"0", "1", "2"}
    assert "many_to_one" in out.err
    new = tmp_path / "new.txt"
    new.write_text(" ".join(json.loads(line)["text"] for line in gzip.open(path, "rt").readlines()[:2]) + "\n\n"
                   "unseen words only\n")
    assert main(["decode", str(run), str(new)]) == 0
    assert [len(line) for line in capsys.readouterr().out.split("\n")] == [1, 0, 0, 0]


def test_supervised_fit_decodes_label_names(tmp_path, capsys):
    path, gold = gzipped_mixture(tmp_path, labeled=range(0, 150, 10))
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(path), "--format", "jsonl", "--supervised-field", "label_given", "--init", "labeled",
                 "--unlabeled-weight", "0.5", "--iterations", "10", "--out", str(run)]) == 0
    assert "accuracy" in capsys.readouterr().err
    assert json.loads((run / "run.json").read_text())["labels"] == {"classes": ["c0", "c1", "c2"]}
    assert main(["decode", str(run), str(path), "--format", "jsonl"]) == 0
    out = capsys.readouterr()
    names = out.out.splitlines()
    assert len(names) == 150
    assert np.mean([n == f"c{g}" for n, g in zip(names, gold)]) > 0.9
    assert "accuracy" in out.err
    assert main(["decode", str(run), str(path), "--format", "jsonl", "--posteriors"]) == 0
    first = capsys.readouterr().out.splitlines()[0].split()
    probs = [float(p.split(":")[1]) for p in first]
    assert first[0].split(":")[0] in {"c0", "c1", "c2"} and sum(probs) <= 1.0 + 1e-3 and probs == sorted(probs, reverse=True)


def test_info_describes_the_bags(tmp_path, capsys):
    path, _ = gzipped_mixture(tmp_path)
    assert main(["info", SPEC, str(path), "--format", "jsonl"]) == 0
    out = capsys.readouterr().out
    assert "one posterior over the classes" in out and "table emit" in out and "bag_count" in out


def test_strip_headers_with_text_format_is_refused_by_name(tmp_path, capsys):
    path = tmp_path / "docs.txt"
    path.write_text("From: a@b Subject: one line is all header\nsecond document\n")
    assert main(["fit", SPEC, str(path), "--strip-headers", "--classes", "2", "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err
    assert "--strip-headers needs --format jsonl" in err and "contains no documents" not in err
    assert not (tmp_path / "run").exists()
