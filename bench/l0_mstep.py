"""MAP-EM with the smoothed-L0 prior (Vaswani, Pauls & Chiang 2010) on CoNLL-2000 train, 45 states,
one thread: seconds per iteration with `prior sparse(alpha=80, beta=0.05)` on the transitions or on
the emissions beside plain EM, the objective reached, whether it ever fell, and many-to-one accuracy.

    NUMBA_NUM_THREADS=1 python bench/l0_mstep.py [--iterations 5] [--only plain l0-trans l0-emit]
    NUMBA_NUM_THREADS=1 python bench/l0_mstep.py --old REV   # the M-step of git revision REV instead
    NUMBA_NUM_THREADS=1 python bench/l0_mstep.py --dictionary --iterations 100 --only l0-trans   # the paper's setting
    NUMBA_NUM_THREADS=1 python bench/l0_mstep.py --shares    # each non-trivial M-step's share of an iteration

The specs are specs/hmm.em with the prior written on one block (a temporary file). `--old REV`
replaces the smoothed-L0 M-step by REV's emc/priors/smoothed_l0.py, row by row as it was called
then (for before/after on the same machine). s/iter is the median over the iterations after the
first (which loads the compiled code); the M-step seconds are timed around the M-step itself.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from common import ROOT, require_data  # noqa: E402

PRIOR = "prior sparse(alpha=80, beta=0.05)"
BLOCKS = {"plain": None, "l0-trans": "trans", "l0-emit": "emit"}


def spec_with_prior(block: str | None, prior: str, folder: Path) -> Path:
    """specs/hmm.em with `prior` written after `block`'s declaration (unchanged for None)."""
    lines = (ROOT / "specs" / "hmm.em").read_text().splitlines()
    if block is not None:
        at = next(i for i, line in enumerate(lines) if line.startswith(f"multinomial {block} "))
        code, _, comment = lines[at].partition("#")
        lines[at] = f"{code.rstrip()} {prior}" + (f"  # {comment.strip()}" if comment else "")
    path = folder / f"hmm_{block or 'plain'}.em"
    path.write_text("\n".join(lines) + "\n")
    return path


def load(spec: Path, dictionary: bool = False):
    """The problem on CoNLL-2000 train; with `dictionary`, the paper's setting: a tag dictionary
    from the corpus's own tags (states = tags, each word allowed only its tags)."""
    from emc.runtime.problem import Model, bind
    from emc.structures.chain.data import dictionary_lines

    model = Model.from_file(spec)
    data = str(require_data() / "conll2000" / "train.txt.gz")
    options = {"format": "conll", "gold_column": 2, "dictionary": None}
    if dictionary:
        path = spec.with_suffix(".dict")
        path.write_text("\n".join(dictionary_lines([model.read(data, options, {})], model.checked)) + "\n")
        options["dictionary"] = str(path)
    vocabs: dict = {}
    corpus = model.read(data, options, vocabs)
    return bind(model, corpus, vocabs, options)


class MstepClock:
    """Seconds spent in the M-step: wraps the batch variants' `mstep` and variational Bayes'
    `variational_weights` for the life of the object."""

    def __init__(self):
        from emc.runtime.variants.base import Variant
        from emc.runtime.variants.vb import VariationalBayes

        self.seconds: list[float] = []
        self.patched = [(Variant, "mstep"), (VariationalBayes, "variational_weights")]
        self.saved = [getattr(cls, name) for cls, name in self.patched]
        for (cls, name), original in zip(self.patched, self.saved):
            setattr(cls, name, self._timed(original))

    def _timed(self, original):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds.append(time.perf_counter() - t0)
        return timed

    def close(self) -> None:
        for (cls, name), original in zip(self.patched, self.saved):
            setattr(cls, name, original)


def run(problem, settings) -> dict:
    """One fit: median seconds per iteration and per M-step (after the first), the objectives, the
    largest fall of the objective between iterations, many-to-one accuracy at the end."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import fit

    clock = MstepClock()
    try:
        result = fit(problem, settings, LocalExecutor(problem))
    finally:
        clock.close()
    seconds = [r["seconds"] for r in result.history]
    objectives = [r["objective"] for r in result.history] + [result.objective]
    later = slice(1, None) if len(seconds) > 1 else slice(None)
    return {"s_iter": float(np.median(seconds[later])), "s_mstep": float(np.median(clock.seconds[later])),
            "objective": result.objective, "fall": max(0.0, -float(np.diff(objectives).min(initial=0.0))),
            "many_to_one": result.metrics.get("many_to_one", float("nan"))}


def use_old_mstep(revision: str) -> None:
    """Run the smoothed-L0 M-step of `revision` (its smoothed_l0.py, one Python call per row)."""
    from emc.priors import SmoothedL0

    source = subprocess.run(["git", "show", f"{revision}:emc/priors/smoothed_l0.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="l0_old_"))  # a real file, so that numba can cache a compiled revision
    (folder / "old_smoothed_l0.py").write_text(source)
    sys.path.insert(0, str(folder))
    old = importlib.import_module("old_smoothed_l0")

    def maximize(self, counts, local_rows, rows, out, start=None):
        c = counts + self.smoothing if self.smoothing else counts
        if local_rows is None:
            local_rows = np.tile(np.arange(rows), len(counts) // rows)
        order = np.argsort(local_rows, kind="stable")
        bounds = np.searchsorted(local_rows[order], np.arange(rows + 1))
        for r in range(rows):
            members = order[bounds[r]:bounds[r + 1]]
            if len(members):
                out[members] = old.maximize_row(c[members], self.alpha, self.beta)
        return out

    SmoothedL0.maximize = maximize


def settings_for(iterations: int, **extra):
    from emc.runtime.settings import FitSettings

    return FitSettings(iterations=iterations, tolerance=0, threads=1, eval_every=0, seed=1, **extra)


def speed(args) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only:
            problem = load(spec_with_prior(BLOCKS[name], PRIOR, Path(folder)), args.dictionary)
            iterations = args.iterations if name != "l0-emit" or args.old is None else args.old_emit_iterations
            r = run(problem, settings_for(iterations))
            print(f"{name} s/iter={r['s_iter']:.3f} mstep={r['s_mstep']:.3f} iterations={iterations} "
                  f"objective={r['objective']:.1f} largest-fall={r['fall']:.3g} "
                  f"many-to-one={100 * r['many_to_one']:.1f}", flush=True)


def shares(args) -> None:
    """Each non-trivial M-step's share of a batch iteration (VB: its variational update)."""
    cases = [("Dirichlet MAP on emit (dirichlet(1.1))", "emit", "prior dirichlet(1.1)", {}),
             ("VB (--vb-alpha 0.1)", None, "", {"algorithm": "vb"}),
             ("smoothed-L0 on trans", "trans", PRIOR, {}),
             ("smoothed-L0 on emit", "emit", PRIOR, {}),
             ("none (plain EM)", None, "", {})]
    print("| M-step | s/iter | M-step s | share |\n| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for label, block, prior, extra in cases:
            problem = load(spec_with_prior(block, prior, Path(folder)))
            r = run(problem, settings_for(args.iterations, **extra))
            print(f"| {label} | {r['s_iter']:.3f} | {r['s_mstep']:.4f} | {100 * r['s_mstep'] / r['s_iter']:.0f}% |",
                  flush=True)
        problem = load(ROOT / "specs" / "hmm_features.em")
        r = run(problem, settings_for(args.iterations))
        print(f"| featured (specs/hmm_features.em) | {r['s_iter']:.3f} | {r['s_mstep']:.4f} | "
              f"{100 * r['s_mstep'] / r['s_iter']:.0f}% |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=list(BLOCKS), default=list(BLOCKS))
    parser.add_argument("--old", metavar="REV", help="time the smoothed-L0 M-step of this git revision")
    parser.add_argument("--old-emit-iterations", type=int, default=2,
                        help="with --old: iterations of l0-emit (about a minute each before issue 32)")
    parser.add_argument("--dictionary", action="store_true",
                        help="the paper's setting: a tag dictionary from the gold tags (states = tags)")
    parser.add_argument("--shares", action="store_true", help="each non-trivial M-step's share of an iteration")
    args = parser.parse_args()
    if args.old:
        use_old_mstep(args.old)
    if args.shares:
        shares(args)
    else:
        speed(args)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
