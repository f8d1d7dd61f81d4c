"""`emc demo`: the embedded default job. Draw sentences from a known random HMM, fit the bundled
bigram HMM spec to them with batch EM, and report how well the true states are recovered."""
from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import numpy as np

from emc.runtime.fit import fit
from emc.runtime.model_dir import save_run
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings
from emc.structures.chain.sample import format_sentences, sample


def run_demo(examples: int, states: int, iterations: int, seed: int, out: Path) -> int:
    try:
        spec = resources.files("emc.specs").joinpath("hmm.em").read_text(encoding="utf-8")
    except ModuleNotFoundError:  # run from a source checkout, not installed
        spec = (Path(__file__).resolve().parents[2] / "specs" / "hmm.em").read_text(encoding="utf-8")
    model = Model.from_text(spec, "hmm.em", {"states": states})
    rng = np.random.default_rng(seed)
    sentences = sample(model.checked, model.checked.binding.args, rng, examples,
                       {"vocab_size": 500, "mean_length": 12.0})
    out.mkdir(parents=True, exist_ok=True)
    data = out / "demo-data.conll"
    data.write_text(format_sentences(sentences, "conll"), encoding="utf-8")
    print(f"demo: {examples} sentences from a random {states}-state HMM over 500 words -> {data}", file=sys.stderr)
    options = {"format": "conll", "gold_column": 2}
    vocabs: dict = {}
    problem = bind(model, model.read(str(data), options, vocabs), vocabs, options)
    settings = FitSettings(iterations=iterations, seed=seed, tolerance=0.0, eval_every=10)

    def progress(record: dict) -> None:
        if "metrics" in record:
            print(f"  iteration {record['iteration']:3d}  log-likelihood {record['objective']:.1f}  "
                  f"many-to-one {100 * record['metrics']['many_to_one']:.1f}%", file=sys.stderr)

    result = fit(problem, settings, observer=progress)
    gold = problem.corpus.gold["tags"].ids
    chance = np.bincount(gold).max() / len(gold)
    save_run(out / "model", problem, result.params, settings, {"states": states}, options, result.objective,
             result.metrics, result.history)
    print(f"demo: states recovered: many-to-one {100 * result.metrics['many_to_one']:.1f}%, "
          f"one-to-one {100 * result.metrics['one_to_one']:.1f}% (the most frequent state alone: "
          f"{100 * chance:.1f}%); model saved to {out / 'model'}")
    return 0
