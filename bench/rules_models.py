"""Models only rules express, on real data, beside the nearest built-in model and the baselines.

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/rules_models.py [--seeds 1 2 3] [--iterations 50]

hsmm  specs/hsmm.em on CoNLL-2000 (POS tags in, chunk tags as gold; --sentences from train): chunk
      spans' F1 and the segment classes' many-to-one accuracy against the gold chunk types, beside
      the all-singletons baseline and specs/segment.em on the same input (each tag one symbol, the
      chunks as its gold words: its token F1 is the same chunk-span F1).
evg   specs/evg.em on WSJ10 (the PTB sample, at most 10 tags): directed / undirected attachment
      beside specs/dmv.em (from its harmonic start and from random starts, as the EVG starts) and
      the left / right attachment baselines.
mixture specs/hmm_mixture.em (3 HMMs of 15 states) on CoNLL-2000 (--sentences from train, words in,
      POS tags as gold): many-to-one and one-to-one tagging accuracy of the states, beside specs/hmm.em
      with 15 states.
prevword specs/hmm_prevword.em (45 states, transitions that see the previous word's last two
      letters) on CoNLL-2000 as mixture reads it: many-to-one and one-to-one, beside specs/hmm.em
      with 45 states.
Every fit: batch EM, --iterations iterations, one line per seed; the mean and spread at the end.
"""
from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, require_data  # noqa: E402

from emc.eval.chunks import chunk_spans  # noqa: E402
from emc.eval.dependencies import attachment_scores, left_attach, right_attach  # noqa: E402
from emc.runtime.fit import fit  # noqa: E402
from emc.runtime.problem import Model, bind  # noqa: E402
from emc.runtime.settings import FitSettings  # noqa: E402


def problem(spec: str, data: Path, options: dict, overrides: dict | None = None):
    model = Model.from_file(str(ROOT / "specs" / spec), overrides)
    vocabs: dict = {}
    return bind(model, model.read(str(data), options, vocabs), vocabs, options)


def scores(spec: str, data: Path, options: dict, seed: int, iterations: int, init: str | None = None,
           overrides: dict | None = None) -> dict:
    p = problem(spec, data, options, overrides)
    settings = FitSettings(iterations=iterations, tolerance=0, eval_every=0, seed=seed, threads=1,
                           **({"init": init} if init else {}))
    return fit(p, settings).metrics


def conll_slice(path: Path, sentences: int, directory: Path) -> Path:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        chunks = f.read().split("\n\n")[:sentences]
    out = directory / "conll.txt"
    out.write_text("\n\n".join(chunks) + "\n\n", encoding="utf-8")
    return out


def as_symbols(conll: Path, directory: Path) -> Path:
    """Each sentence's tags as one symbol each, a space between chunks: segment.em's input, whose
    gold words (--gold-spaces) are then the chunks."""
    symbol: dict[str, str] = {}
    lines = []
    for block in conll.read_text(encoding="utf-8").split("\n\n"):
        rows = [line.split() for line in block.splitlines() if line.strip()]
        if not rows:
            continue
        tags = [r[1] for r in rows]
        spans = chunk_spans([r[2] for r in rows])
        chars = [symbol.setdefault(t, chr(0x4E00 + len(symbol))) for t in tags]
        lines.append(" ".join("".join(chars[i:j]) for i, j in spans))
    out = directory / "symbols.txt"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def report(label: str, runs: list[dict], keys: list[str]) -> None:
    parts = []
    for key in keys:
        values = [100 * r.get(key, float("nan")) for r in runs]
        parts.append(f"{key} {np.mean(values):.1f} ± {np.std(values):.1f}")
    print(f"{label}: " + ", ".join(parts), flush=True)


def hsmm(data: Path, args, scratch: Path) -> None:
    conll = conll_slice(data / "conll2000" / "train.txt.gz", args.sentences, scratch)
    options = {"format": "conll", "word_column": 2, "gold_column": "3"}
    runs = [scores("hsmm.em", conll, options, seed, args.iterations) for seed in args.seeds]
    for seed, r in zip(args.seeds, runs):
        print(f"hsmm seed {seed}: " + ", ".join(f"{k} {100 * v:.1f}" for k, v in r.items()), flush=True)
    report("hsmm", runs, ["boundary_f1", "class_many_to_one", "singletons_f1"])
    symbols = as_symbols(conll, scratch)
    runs = [scores("segment.em", symbols, {"gold_spaces": True}, seed, args.iterations) for seed in args.seeds]
    report("segment.em on the tags (token_f1 = chunk-span F1)", runs, ["token_f1", "boundary_f1"])


def evg(data: Path, args) -> None:
    wsj = data / "ptb-sample" / "wsj_sample_trees.txt"
    options = {"format": "ptb", "max_length": 10}
    gold = problem("dmv.em", wsj, options).corpus.gold["heads"]
    lengths = [len(h) for h in gold]
    print("left: " + str({k: round(100 * v, 1) for k, v in attachment_scores([left_attach(n) for n in lengths], gold).items()}))
    print("right: " + str({k: round(100 * v, 1) for k, v in attachment_scores([right_attach(n) for n in lengths], gold).items()}))
    report("dmv.em, harmonic start", [scores("dmv.em", wsj, options, 1, args.iterations)], ["directed", "undirected"])
    report("dmv.em, random starts", [scores("dmv.em", wsj, options, s, args.iterations, "random") for s in args.seeds],
           ["directed", "undirected"])
    report("evg.em, random starts", [scores("evg.em", wsj, options, s, args.iterations) for s in args.seeds],
           ["directed", "undirected"])


def mixture(data: Path, args, scratch: Path) -> None:
    conll = conll_slice(data / "conll2000" / "train.txt.gz", args.sentences, scratch)
    options = {"format": "conll", "gold_column": "2"}
    report("hmm.em, 15 states", [scores("hmm.em", conll, options, s, args.iterations, overrides={"states": 15})
                                 for s in args.seeds],
           ["many_to_one", "one_to_one"])
    report("hmm_mixture.em, 3 x 15 states", [scores("hmm_mixture.em", conll, options, s, args.iterations)
                                             for s in args.seeds], ["many_to_one", "one_to_one"])


def prevword(data: Path, args, scratch: Path) -> None:
    conll = conll_slice(data / "conll2000" / "train.txt.gz", args.sentences, scratch)
    options = {"format": "conll", "gold_column": "2"}
    for spec in ("hmm.em", "hmm_prevword.em"):
        report(f"{spec}, 45 states", [scores(spec, conll, options, s, args.iterations, overrides={"states": 45})
                                      for s in args.seeds], ["many_to_one", "one_to_one"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--models", nargs="*", default=["hsmm", "evg", "mixture", "prevword"])
    args = parser.parse_args()
    data = require_data()
    scratch = Path(tempfile.mkdtemp())
    if "hsmm" in args.models:
        hsmm(data, args, scratch)
    if "evg" in args.models:
        evg(data, args)
    if "mixture" in args.models:
        mixture(data, args, scratch)
    if "prevword" in args.models:
        prevword(data, args, scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
