"""Latent classes over verb-object pairs end to end: pairs extracted from CoNLL-2000-style chunks,
`emc fit specs/verb_object.em PAIRS`, `emc info RUN` listing each class's top verbs and nouns,
decoding one class per pair (an empty line for a pair with an empty field)."""
from __future__ import annotations

import re

from conftest import ROOT
from emc.cli import main
from emc.io.verb_object import verb_object_pairs

SPEC = str(ROOT / "specs" / "verb_object.em")

CHUNKS = """He PRP B-NP
has VBZ B-VP
acquired VBN I-VP
a DT B-NP
big JJ I-NP
stake NN I-NP
. . O

Prices NNS B-NP
rose VBD B-VP
to TO B-PP
records NNS B-NP

They PRP B-NP
will MD B-VP
sell VB I-VP
shares NNS B-NP
and CC O
buy VB B-VP
it PRP B-NP
"""


def test_pairs_from_chunks(tmp_path):
    path = tmp_path / "chunks.txt"
    path.write_text(CHUNKS)
    # rose is followed by a PP, not an NP; `it` is no noun
    assert verb_object_pairs(path) == [("acquired", "stake"), ("sell", "shares")]


def test_fit_info_and_decode(tmp_path, capsys):
    pairs = ["eat ||| apple", "eat ||| bread", "devour ||| bread", "drive ||| car", "park ||| car",
             "drive ||| truck"] * 5
    data = tmp_path / "pairs.txt"
    data.write_text("\n".join(pairs) + "\n")
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(data), "--classes", "2", "--iterations", "20", "--seed", "3", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["info", str(run)]) == 0
    info = capsys.readouterr().out
    classes = re.findall(r"^class (\d+)  P = ([0-9.]+)$", info, re.M)
    assert sorted(int(k) for k, _ in classes) == [0, 1]
    verbs = re.findall(r"^  verb +(.*)$", info, re.M)
    nouns = re.findall(r"^  noun +(.*)$", info, re.M)
    assert len(verbs) == len(nouns) == 2
    assert all(set(line.split()[0::2]) <= {"eat", "devour", "drive", "park", "<unk>"} for line in verbs)
    assert all(set(line.split()[0::2]) <= {"apple", "bread", "car", "truck", "<unk>"} for line in nouns)
    new = tmp_path / "new.txt"
    new.write_text("eat ||| apple\ndrive ||| \npark ||| truck\n")
    assert main(["decode", str(run), str(new)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[0] in ("0", "1") and lines[1] == "" and lines[2] in ("0", "1")
