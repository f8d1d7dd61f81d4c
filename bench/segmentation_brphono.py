"""Word segmentation of br-phono (Bernstein-Ratner; issue 4): accuracy curves and speed.

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/segmentation_brphono.py [--json FILE] [--seeds 1 2 3]
    NUMBA_NUM_THREADS=1 .venv/bin/python bench/segmentation_brphono.py --features

Prints, for specs/segment.em on ../shared/data/br-phono/br-phono.txt (train and score on all 9,790
utterances, as Liang & Klein 2009 do):
  1. batch EM: token F1 after iterations 1..50, from uniform parameters (deterministic) and from
     random ones (--init random, one run per seed);
  2. stepwise EM: token F1 after passes 1..10 for alpha in {0.6, 0.7, 0.8} and m in {10, 100, 1000},
     mean over the seeds (each seed shuffles differently; parameters start uniform, weighing one
     pseudo-count: the segmentation's ONLINE_START_MASS), and again with --start-mass entry;
  3. the issue's reference figures next to ours (mean of the seeds, target: within 1 point);
  4. the recipe that holds the peak without gold labels: stepwise EM with alpha 1 (m 1000), for
     30 passes; and where batch EM stops on its own objective's relative change (--tolerance);
  5. speed, single-threaded: seconds per batch iteration (E-step + M-step; wall, and CPU, which a
     loaded machine does not inflate), per stepwise pass, per decode of the corpus; the substring
     index's build time; peak memory of `emc fit`, and of `emc fit` on three tiny lines.
With --features it prints instead, in one run, the token F1 of specs/segment.em and of
specs/segment_features.em (the word distribution log-linear in the word, its first and last 1-3
symbols and its length) after batch iterations 1..50 from uniform parameters, and the seconds per
iteration of each.
Gold segmentations are used only to score. Timings depend on the machine (and its load).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # before numba is imported: measure one thread

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("EMC_SHARED_DATA", ROOT.parent / "shared" / "data")) / "br-phono" / "br-phono.txt"
SPEC = ROOT / "specs" / "segment.em"
FEATURED_SPEC = ROOT / "specs" / "segment_features.em"
OPTIONS = {"gold_spaces": True}
BATCH_ITERATIONS = 50
STEPWISE_PASSES = 10
ALPHAS = (0.6, 0.7, 0.8)
BATCH_SIZES = (10, 100, 1000)
RECIPE = {"alpha": 1.0, "batch_size": 1000, "passes": 30}
TOLERANCES = (1e-3, 5e-4, 2.5e-4)  # batch EM stopped on its own objective's relative change
# (what, our measurement's key, the reference implementation's token F1) from issue 4
REFERENCE = [
    ("batch, iteration 10", ("batch", 10), 0.814),
    ("batch, iteration 50", ("batch", 50), 0.77),
    ("stepwise alpha 0.7 m 1000, pass 2", ("stepwise", 0.7, 1000, 2), 0.826),
    ("stepwise alpha 0.7 m 1000, pass 3", ("stepwise", 0.7, 1000, 3), 0.828),
    ("stepwise alpha 0.6 m 1000, pass 2", ("stepwise", 0.6, 1000, 2), 0.831),
]


def load_problem(spec: Path = SPEC):
    from emc.runtime.problem import Model, bind

    model = Model.from_file(spec)
    vocabs: dict = {}
    t0 = time.perf_counter()
    corpus = model.read(str(DATA), OPTIONS, vocabs)
    read_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    problem = bind(model, corpus, vocabs, OPTIONS)
    return problem, read_seconds, time.perf_counter() - t0


def f1_curve(problem, executor, **settings) -> tuple[list[float], list[float], list[float | None]]:
    """Token F1 after each iteration (or pass), the seconds each took (scoring excluded), and the
    objective's relative change at each."""
    from emc.runtime.fit import fit
    from emc.runtime.settings import FitSettings

    history = fit(problem, FitSettings(tolerance=0, eval_every=1, **settings), executor=executor).history
    return ([r["metrics"]["token_f1"] for r in history], [r["seconds"] for r in history],
            [r["change"] for r in history])


def index_seconds(problem) -> float:
    """The substring index of the whole corpus, built again (compiled code is warm by now)."""
    from emc.io.vocab import Vocabulary
    from emc.structures.segmentation.substrings import word_ids

    field = problem.corpus.fields["x"]
    t0 = time.perf_counter()
    word_ids(field.ids, field.offsets, field.vocab.values, problem.args["maxlen"], Vocabulary())
    return time.perf_counter() - t0


def peak_memory_of_fit(data: Path) -> float:
    """MiB: the peak resident memory of `emc fit` on `data` (batch, 50 iterations, scoring every 10),
    in a fresh process."""
    code = ("import resource, sys; from emc.cli import main; main(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    run = subprocess.run([sys.executable, "-c", code, "fit", str(SPEC), str(data), "--gold-spaces", "--init", "uniform",
                          "--iterations", "50", "--tolerance", "0", "--eval-every", "10", "--quiet"],
                         check=True, capture_output=True, text=True)
    return int(run.stdout.split()[-1]) / 1024  # KiB on Linux


def batch_step_seconds(problem, executor, iterations: int = BATCH_ITERATIONS) -> tuple[float, list[float]]:
    """Median wall seconds and the CPU seconds of each batch EM step (E-step + M-step) from uniform
    parameters: CPU time is what a loaded machine cannot inflate."""
    from emc.runtime.state import FitState
    from emc.runtime.initialize import initial_params
    from emc.runtime.settings import FitSettings
    from emc.runtime.variants import make_variant

    settings = FitSettings(init="uniform")
    variant = make_variant("batch", problem, executor, settings)
    rng = np.random.default_rng(0)
    state = FitState(params=initial_params(problem, settings, executor, rng), rng=rng)
    wall, cpu = [], []
    for _ in range(iterations):
        w0, c0 = time.perf_counter(), time.process_time()
        variant.step(state)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), cpu


def pct(value: float) -> str:
    return f"{100 * value:5.1f}"


def compare_features() -> dict:
    """Token F1 of the plain and the featured spec after each batch iteration from uniform
    parameters, with the median seconds per iteration (E-step and M-step)."""
    from emc.runtime.executor import LocalExecutor

    shown = [1, 2, 3, 5, 8, 10, 12, 15, 20, 25, 30, 40, 50]
    print(f"token F1 (%) after batch iteration, from uniform parameters ({DATA.name}, all utterances)")
    print(f"   {'spec':24s}" + "".join(f"{i:>6d}" for i in shown) + "  best (iteration)   s/iteration")
    out = {}
    for spec in (SPEC, FEATURED_SPEC):
        problem, _, _ = load_problem(spec)
        f1, seconds, _ = f1_curve(problem, LocalExecutor(problem), iterations=BATCH_ITERATIONS, init="uniform")
        out[spec.name] = {"token_f1": f1, "seconds_per_iteration": statistics.median(seconds[1:])}
        print(f"   {spec.name:24s}" + "".join(f"{pct(f1[i - 1]):>6s}" for i in shown)
              + f"  {pct(max(f1))} ({int(np.argmax(f1)) + 1:2d})  {statistics.median(seconds[1:]):10.3f}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--json", help="write every number measured to this file")
    parser.add_argument("--features", action="store_true",
                        help="only the plain spec against specs/segment_features.em, batch EM from uniform")
    args = parser.parse_args()
    if not DATA.is_file():
        print(f"missing {DATA} (set EMC_SHARED_DATA)", file=sys.stderr)
        return 1
    if args.features:
        out = compare_features()
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
        return 0
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.params import random_init

    out: dict = {"threads": int(os.environ["NUMBA_NUM_THREADS"]), "seeds": args.seeds}
    t0 = time.perf_counter()
    problem, read_seconds, bind_seconds = load_problem()
    executor = LocalExecutor(problem)
    executor.warm_up(random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0))
    print(f"br-phono: {problem.n_examples} utterances, {len(problem.corpus.fields['x'].ids)} symbols, "
          f"{problem.sizes['substrings'] - 1} substrings of <= {problem.args['maxlen']} symbols "
          f"(setup and compile {time.perf_counter() - t0:.1f}s)")

    # 1. batch EM
    curves = {"uniform": f1_curve(problem, executor, iterations=BATCH_ITERATIONS, init="uniform")}
    for seed in args.seeds:
        curves[f"random seed {seed}"] = f1_curve(problem, executor, iterations=BATCH_ITERATIONS, init="random",
                                                 seed=seed)
    shown = [1, 2, 3, 5, 8, 10, 12, 15, 20, 25, 30, 40, 50]
    print("\n1. batch EM: token F1 (%) after iteration")
    print(f"   {'start':18s}" + "".join(f"{i:>6d}" for i in shown))
    for name, (f1, _, _) in curves.items():
        print(f"   {name:18s}" + "".join(f"{pct(f1[i - 1]):>6s}" for i in shown))
    random_mean = np.mean([curves[f"random seed {s}"][0] for s in args.seeds], axis=0)
    print(f"   {'random, mean':18s}" + "".join(f"{pct(random_mean[i - 1]):>6s}" for i in shown))
    out["batch"] = {name: f1 for name, (f1, _, _) in curves.items()}

    # 2. stepwise EM
    print(f"\n2. stepwise EM from uniform parameters: token F1 (%) after pass, mean of seeds {args.seeds}")
    print(f"   {'alpha   m':18s}" + "".join(f"{p:>6d}" for p in range(1, STEPWISE_PASSES + 1)) + "   s/pass")
    stepwise: dict = {}
    for alpha in ALPHAS:
        for m in BATCH_SIZES:
            runs = [f1_curve(problem, executor, algorithm="stepwise", alpha=alpha, batch_size=m,
                             passes=STEPWISE_PASSES, init="uniform", seed=seed) for seed in args.seeds]
            mean = np.mean([f1 for f1, _, _ in runs], axis=0)
            seconds = statistics.median(s for _, secs, _ in runs for s in secs)
            stepwise[(alpha, m)] = mean
            out.setdefault("stepwise", {})[f"alpha={alpha} m={m}"] = {
                "mean": mean.tolist(), "runs": [f1 for f1, _, _ in runs], "seconds_per_pass": seconds}
            print(f"   {alpha:<5} {m:>5d}       " + "".join(f"{pct(v):>6s}" for v in mean) + f"   {seconds:6.3f}")

    print("   the same with --start-mass entry (one pseudo-count per substring; the default is one per row):")
    for alpha in ALPHAS:
        for m in BATCH_SIZES:
            mean = np.mean([f1_curve(problem, executor, algorithm="stepwise", alpha=alpha, batch_size=m,
                                     passes=STEPWISE_PASSES, init="uniform", seed=seed, start_mass="entry")[0]
                            for seed in args.seeds], axis=0)
            out.setdefault("stepwise_entry_start", {})[f"alpha={alpha} m={m}"] = mean.tolist()
            print(f"   {alpha:<5} {m:>5d}       " + "".join(f"{pct(v):>6s}" for v in mean))

    # 3. against the reference implementation
    print("\n3. against the reference implementation (issue 4): token F1 (%)")
    ours = {("batch", i + 1): v for i, v in enumerate(curves["uniform"][0])}
    for (alpha, m), mean in stepwise.items():
        ours.update({("stepwise", alpha, m, p + 1): v for p, v in enumerate(mean)})
    out["reference"] = []
    for what, key, reference in REFERENCE:
        value = ours[key]
        ok = bool(abs(value - reference) <= 0.01)
        out["reference"].append({"what": what, "emc": value, "reference": reference, "within_1_point": ok})
        print(f"   {what:36s} emc {pct(value)}  reference {pct(reference)}  {'within 1 point' if ok else 'MISSED'}")
    best = curves["uniform"][0]
    print(f"   (batch from uniform parameters is deterministic, so the same for every seed; its best iterate: "
          f"{pct(max(best))} at iteration {int(np.argmax(best)) + 1})")

    # 4. the recipe
    runs = [f1_curve(problem, executor, algorithm="stepwise", alpha=RECIPE["alpha"], batch_size=RECIPE["batch_size"],
                     passes=RECIPE["passes"], init="uniform", seed=seed) for seed in args.seeds]
    f1 = np.array([r for r, _, _ in runs])
    later = f1[:, 1:]
    print(f"\n4. holding the peak without gold: stepwise alpha {RECIPE['alpha']} (eta_k = 1 / (k + 2): the running "
          f"mean of every mini-batch's statistics), m {RECIPE['batch_size']}, {RECIPE['passes']} passes")
    print("   pass  " + "".join(f"{p:>6d}" for p in (1, 2, 3, 5, 10, 15, 20, 25, 30)))
    print("   mean  " + "".join(f"{pct(f1.mean(axis=0)[p - 1]):>6s}" for p in (1, 2, 3, 5, 10, 15, 20, 25, 30)))
    print(f"   passes 2..{RECIPE['passes']}, every seed: min {pct(later.min())}, max {pct(later.max())}")
    out["recipe"] = {**RECIPE, "runs": f1.tolist()}
    f1_batch, _, change = curves["uniform"]
    out["batch_tolerance"] = {}
    for tolerance in TOLERANCES:
        stop = next((i for i, c in enumerate(change) if c is not None and abs(c) < tolerance), len(change) - 1)
        out["batch_tolerance"][tolerance] = {"iteration": stop + 1, "token_f1": f1_batch[stop]}
        print(f"   for comparison, batch EM stopped when its objective changes < {tolerance:g} relative: "
              f"iteration {stop + 1}, {pct(f1_batch[stop])}")

    # 5. speed
    batch_seconds = statistics.median(curves["uniform"][1][1:])
    step_wall, step_cpu = batch_step_seconds(problem, executor)
    decode_times = []
    examples = np.arange(problem.n_examples)
    uniform = random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 0.0)
    for _ in range(5):
        t0 = time.perf_counter()
        executor.decode(uniform, examples)
        decode_times.append(time.perf_counter() - t0)
    index = min(index_seconds(problem) for _ in range(3))
    memory = peak_memory_of_fit(DATA)
    tiny = Path(tempfile.mkdtemp()) / "tiny.txt"
    tiny.write_text("ab ab\nba\nabba\n")
    baseline = peak_memory_of_fit(tiny)
    out["speed"] = {"batch_iteration_seconds": batch_seconds, "batch_step_wall_seconds": step_wall,
                    "batch_step_cpu_seconds": step_cpu, "decode_seconds": statistics.median(decode_times),
                    "index_seconds": index, "read_seconds": read_seconds, "bind_seconds": bind_seconds,
                    "peak_memory_mib": memory, "peak_memory_tiny_mib": baseline}
    print(f"\n5. speed ({out['threads']} thread{'s' if out['threads'] > 1 else ''})")
    print(f"   batch EM iteration (E-step + M-step), median of {BATCH_ITERATIONS - 1}: {batch_seconds:.4f} s "
          f"(target 0.075 s)")
    print(f"   the same {BATCH_ITERATIONS} iterations timed again: median {step_wall:.4f} s wall; CPU median "
          f"{statistics.median(step_cpu):.4f} s, iterations 1-10 {statistics.median(step_cpu[:10]):.4f} s, "
          f"41-50 {statistics.median(step_cpu[-10:]):.4f} s, max {max(step_cpu):.4f} s")
    for m in BATCH_SIZES:
        secs = out["stepwise"][f"alpha=0.7 m={m}"]["seconds_per_pass"]
        print(f"   stepwise pass, m = {m:<5d} (median):            {secs:.4f} s")
    print(f"   Viterbi decode of the corpus (median of 5):       {statistics.median(decode_times):.4f} s")
    print(f"   substring index (best of 3):                      {index:.3f} s (target 2 s)")
    print(f"   reading the corpus / packing it (index included): {read_seconds:.3f} s / {bind_seconds:.3f} s")
    print(f"   peak memory of `emc fit` (50 batch iterations):   {memory:.0f} MiB (on 3 tiny lines: "
          f"{baseline:.0f} MiB, the interpreter, numba and LLVM)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
