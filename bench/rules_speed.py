"""Structures written as rules beside their built-in twins: seconds per E-step (the sum semiring:
inside, outside and expected counts, which is most of an EM iteration) on the same parameters, in
the same process, alternating the two, best of --repeats; and the compile time of each module on
an empty cache.

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/rules_speed.py [--repeats 3] [--sentences 2000]

Pairs (issue target: a rule program within 1.5x of its twin, aim 1.1x):
  chain  specs/hmm.em vs specs/rules/chain.em, 45 states, CoNLL-2000 train (first --sentences)
  pcfg   specs/pcfg.em vs specs/rules/pcfg.em, 10 labels, WSJ10 from the PTB sample
  dmv    specs/dmv.em vs specs/rules/dmv.em, WSJ10 from the PTB sample
  segment specs/segment.em vs specs/rules/segment.em, br-phono (first --sentences utterances)
Each line: `PAIR built-in S rules S ratio R` (E-step CPU seconds of this one-thread process, best
of --repeats, rules / built-in), then the log Z of both (they must agree).
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from common import ROOT, require_data  # noqa: E402

from emc.runtime.executor import LocalExecutor  # noqa: E402
from emc.runtime.params import ParamState  # noqa: E402
from emc.runtime.problem import Model, bind  # noqa: E402
from emc.structures.semiring import SUM  # noqa: E402
from helpers import random_params  # noqa: E402


def load(spec: str, data: Path, options: dict, overrides: dict):
    t0 = time.perf_counter()
    model = Model.from_file(str(ROOT / "specs" / spec), overrides)
    vocabs: dict = {}
    corpus = model.read(str(data), options, vocabs)
    problem = bind(model, corpus, vocabs, options)
    return problem, time.perf_counter() - t0


def twin_params(built_in, twin, params: ParamState) -> ParamState:
    theta = twin.fixed_theta.copy()
    for table in twin.layout.learned():
        theta[table.entries] = params.theta[built_in.layout.table(table.name).entries]
    return ParamState.plain(theta, twin.layout)


def estep_seconds(problem, params, repeats: int) -> tuple[float, float]:
    executor = LocalExecutor(problem, threads=1)
    examples = np.arange(problem.n_examples)
    weights = np.ones(len(examples))
    t0 = time.perf_counter()
    result = executor.estep(params, examples, SUM, weights)  # compiles on first use
    first = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeats):
        # CPU seconds of this one-thread process: on a machine shared with other work they are
        # what its wall seconds would be on a quiet one
        t0 = time.process_time()
        result = executor.estep(params, examples, SUM, weights)
        best = min(best, time.process_time() - t0)
    return best, first, float(result.log_z.sum())


def cut(path: Path, lines: int, directory: Path, blank_separated: bool) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    if blank_separated:
        chunks = text.split("\n\n")[:lines]
        body = "\n\n".join(chunks) + "\n\n"
    else:
        body = "\n".join(text.splitlines()[:lines]) + "\n"
    out = directory / path.name.replace(".gz", "")
    out.write_text(body, encoding="utf-8")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--pairs", nargs="*", default=["chain", "pcfg", "dmv", "segment"])
    args = parser.parse_args()
    data = require_data()
    os.environ.setdefault("EMC_CACHE_DIR", tempfile.mkdtemp())  # an empty cache: compile times are cold
    scratch = Path(tempfile.mkdtemp())
    conll = cut(data / "conll2000" / "train.txt.gz", args.sentences, scratch, True)
    phono = cut(data / "br-phono" / "br-phono.txt", args.sentences, scratch, False)
    wsj = data / "ptb-sample" / "wsj_sample_trees.txt"
    pairs = {
        "chain": ("hmm.em", "rules/chain.em", conll, {"format": "conll", "gold_column": "2"}, {"states": 45}),
        "pcfg": ("pcfg.em", "rules/pcfg.em", wsj, {"format": "ptb", "max_length": 10}, {"labels": 10}),
        "dmv": ("dmv.em", "rules/dmv.em", wsj, {"format": "ptb", "max_length": 10}, {}),
        "segment": ("segment.em", "rules/segment.em", phono, {"gold_spaces": True}, {}),
    }
    print(f"threads: NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'all')}, load average "
          f"{os.getloadavg()[0]:.2f}")
    for name in args.pairs:
        built_in_spec, rules_spec, path, options, overrides = pairs[name]
        built_in, _ = load(built_in_spec, path, options, overrides)
        twin, _ = load(rules_spec, path, options, overrides)
        params = random_params(built_in, np.random.default_rng(1))
        twin_p = twin_params(built_in, twin, params)
        a, first_a, log_a = estep_seconds(built_in, params, args.repeats)
        b, first_b, log_b = estep_seconds(twin, twin_p, args.repeats)
        print(f"{name} built-in {a:.4f} rules {b:.4f} ratio {b / a:.2f}  (first call, compile included: "
              f"{first_a:.1f} / {first_b:.1f} s; log Z {log_a:.6f} / {log_b:.6f}; {built_in.n_examples} examples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
