"""The DMV guided by universal rules (issue 31): directed and undirected attachment accuracy on UD
English EWT of specs/dmv.em (plain EM), specs/dmv_rules.em (EM with the posterior constrained to
put at least the spec's share of attachments on the pairs of specs/ud_rules.txt: posterior
regularization, Naseem et al. 2010's rules in UD's conventions) and the left- and right-attachment
baselines, from the harmonic start and from random starts (3 seeds); then the same on WSJ10 with
specs/dmv_rules_ptb.em (the rules over PTB tags, in Collins' head conventions). Prints markdown tables.

The corpus: UD English EWT dev + test (../shared/data/ud-english-ewt/), punctuation (UPOS PUNCT)
removed (a punctuation head replaced by its nearest non-punctuation ancestor), sentences of 2 to 10
words kept (a one-word sentence has one tree): 2,001 sentences, 11,043 words, as
../shared/data/ud-english-ewt/SOURCE.md counts them, read as UPOS sequences with their gold heads. The
corpus is also the test set (Klein & Manning 2004); Viterbi trees of the final model.

    NUMBA_NUM_THREADS=1 /work/dev/bin/python bench/dmv_ud_rules.py [--seeds 1 2 3] [--write ud10.conllu]

`--write FILE` only writes the corpus as CoNLL-U (for `emc fit specs/dmv_rules.em FILE --format conllu`).
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import ROOT, require_data
from emc.eval.dependencies import attachment_scores, left_attach, right_attach
from emc.runtime.fit import fit
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings

FILES = ("en_ewt-ud-dev.conllu.gz", "en_ewt-ud-test.conllu.gz")


def without_punctuation(words: list[list[str]]) -> list[list[str]]:
    """The sentence's words (ten fields each) without UPOS PUNCT, renumbered, a punctuation head
    replaced by its nearest non-punctuation ancestor."""
    head = {int(w[0]): int(w[6]) for w in words}
    punct = {int(w[0]) for w in words if w[3] == "PUNCT"}
    kept = [w for w in words if int(w[0]) not in punct]
    number = {int(w[0]): i + 1 for i, w in enumerate(kept)}
    number[0] = 0
    out = []
    for w in kept:
        h = head[int(w[0])]
        while h in punct:
            h = head[h]
        out.append([str(number[int(w[0])]), *w[1:6], str(number[h]), *w[7:]])
    return out


def write_ud10(data: Path, out: Path, max_length: int = 10) -> int:
    """Dev + test without punctuation, sentences of 2..max_length words, as CoNLL-U; the sentences written."""
    written = 0
    with open(out, "w", encoding="utf-8") as f:
        for name in FILES:
            with gzip.open(data / "ud-english-ewt" / name, "rt", encoding="utf-8") as source:
                for block in source.read().split("\n\n"):
                    lines = [line for line in block.split("\n") if line]
                    words = [line.split("\t") for line in lines if not line.startswith("#")]
                    words = [w for w in words if w[0].isdigit()]  # no multiword tokens, no empty nodes
                    kept = without_punctuation(words)
                    if 1 < len(kept) <= max_length:
                        comments = [line for line in lines if line.startswith("#")]
                        f.write("\n".join(comments + ["\t".join(w) for w in kept]) + "\n\n")
                        written += 1
    return written


def score(spec: str, path: Path, options: dict, settings: FitSettings) -> dict:
    model = Model.from_file(ROOT / "specs" / spec)
    vocabs: dict = {}
    problem = bind(model, model.read(str(path), dict(options), vocabs), vocabs, dict(options))
    t0 = time.perf_counter()
    result = fit(problem, settings)
    seconds = time.perf_counter() - t0
    last = result.history[-1] if result.history else {}
    shares = [c["after"] for c in last.get("constraints", [])]
    return {**result.metrics, "iterations": len(result.history), "seconds": seconds,
            "share": shares[0] if shares else None}


def spread(values: list[float]) -> str:
    mean = 100 * float(np.mean(values))
    return f"{mean:.1f}" if np.ptp(values) == 0 else f"{mean:.1f} ± {100 * float(np.std(values)):.1f}"


def table(title: str, path: Path, options: dict, specs: tuple[str, str], seeds: list[int], iterations: int) -> None:
    """Baselines, then the plain and the constrained spec from the harmonic and random starts."""
    model = Model.from_file(ROOT / "specs" / specs[0])
    corpus = model.read(str(path), dict(options), {})
    kept = [(n, g) for n, g in zip(corpus.lengths().tolist(), corpus.gold["heads"]) if n]  # not the cut ones
    lengths, gold = [n for n, _ in kept], [g for _, g in kept]
    print(f"{title}: {len(lengths)} sentences, {sum(lengths)} words; threads: NUMBA_NUM_THREADS="
          f"{os.environ.get('NUMBA_NUM_THREADS', 'unset (all cores)')}; seeds {seeds}")
    print()
    print("| model | init | directed | undirected | rule share (after projection) | iterations | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, baseline in (("left-attach", left_attach), ("right-attach", right_attach)):
        s = attachment_scores([baseline(k) for k in lengths], gold)
        print(f"| {label} | - | {100 * s['directed']:.1f} | {100 * s['undirected']:.1f} | - | - | - |")
    for label, spec in zip(("DMV", "DMV + rules"), specs):
        for init in ("harmonic", "random"):
            runs = [score(spec, path, options, FitSettings(init=init, seed=seed, iterations=iterations, eval_every=0))
                    for seed in (seeds if init == "random" else seeds[:1])]
            column = lambda key: [r[key] for r in runs]  # noqa: E731
            share = "-" if runs[0]["share"] is None else spread(column("share"))
            print(f"| {label} | {init} | {spread(column('directed'))} | {spread(column('undirected'))} | "
                  f"{share} | {np.mean(column('iterations')):.0f} | {np.mean(column('seconds')):.1f} |", flush=True)
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--write", type=Path, help="only write the UD corpus to this CoNLL-U file")
    args = parser.parse_args()
    data = require_data()
    if args.write:
        print(f"{write_ud10(data, args.write)} sentences written to {args.write}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ud10.conllu"
        write_ud10(data, path)
        table("UD English EWT dev + test, no punctuation, 2 to 10 words", path, {"format": "conllu"},
              ("dmv.em", "dmv_rules.em"), args.seeds, args.iterations)
    table("WSJ10 (the PTB sample, --format ptb --max-length 10; gold heads by Collins' head rules)",
          data / "ptb-sample" / "wsj_sample_trees.txt", {"format": "ptb", "max_length": 10},
          ("dmv.em", "dmv_rules_ptb.em"), args.seeds, args.iterations)
    print("Values are means over the seeds, ± the standard deviation when they disagree (the harmonic start "
          "does not depend on the seed: one run). Seconds: the whole fit (100 iterations at most, relative "
          "tolerance 1e-6), on a machine shared with other work.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
