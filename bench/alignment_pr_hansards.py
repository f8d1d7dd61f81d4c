"""AER on the NAACL 2003 English-French Hansards test set (447 pairs) of the HMM aligner under
posterior regularization: bijectivity (each source word linked to at most one target word in
expectation, projected per sentence pair), symmetry (the two directions trained together, each
pair's posteriors projected to agree on every link), and both (specs/hmm_align_pr.em); beside the
plain HMM aligner, by agreement, and eflomal on the same pairs in the same run when it is installed
(`pip install eflomal`, the `bench` extra).

    python bench/alignment_pr_hansards.py [--iterations 5] [--constraint-esteps 20] [--no-eflomal]
        [--only NAME ...] [--halves] [--threads N]

The training text and protocol are bench/alignment_hansards.py's: 2,867 lowercased pairs (the
training sample, trial and test), English as the source side; each HMM starts from 5 iterations
of IBM 1 (--init ibm1) and runs --iterations of batch EM; the test pairs are decoded through the
CLI and scored against test.wa.nonullalign. eflomal aligns the same text both ways (its default
IBM1+HMM+fertility schedule, and with --eflomal-model 2, IBM1+HMM); its links on the test pairs are
symmetrised by emc's own heuristics and scored by emc's AER. The constrained specs are
hmm_align.em with the constraint statements of each configuration; the row "specs/hmm_align_pr.em
as it is" fits the spec itself with no schedule on the command line, so the symmetric fit's own
default schedule applies (emc/runtime/modes/symmetric.py: IBM 1, then 1 iteration of constrained
EM, at most 10 passes a projection). A symmetric run is decoded
three ways: its posterior decoding (each pair projected, links whose mean posterior of the two
directions is >= 0.5, `emc decode RUN`), each direction's own Viterbi links and their
symmetrisations. Seconds: the fit's wall time (both directions, IBM 1 included) and the mean of
its EM iterations (RUN/log.jsonl), on a shared machine, and the CPU seconds of the fit's process
(or eflomal's), which the other jobs of a shared machine disturb less.

--threads N gives emc (NUMBA_NUM_THREADS) and eflomal (OMP_NUM_THREADS: its two directions run
in parallel) the same number of threads; without it each takes what its environment gives, which
on a 2-core machine is one thread for emc under NUMBA_NUM_THREADS=1 but two for eflomal.

--halves adds each row's AER on two fixed halves of the test pairs, the odd and the even sentence
numbers of test.wa.nonullalign (1, 3, ..., 447: 224 pairs; 2, 4, ..., 446: 223), scored from the
links the decode prints: a schedule chosen on one half's AER can be judged on the other's.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from emc.eval.alignment import alignment_scores
from emc.io.bitext import read_gold

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from alignment_hansards import DATA, TRAIN, bitext, emc, emc_run, scores  # noqa: E402

DECODES = [("English->French", []), ("French->English", ["--direction", "reverse"]),
           ("intersection", ["--symmetrize", "intersection"]),
           ("grow-diag-final-and", ["--symmetrize", "grow-diag-final-and"])]
AGREED = [("agreed links (posterior >= 0.5)", [])]
PROJECTED = [("projected posteriors (mean >= 0.5)", []), ("English->French", ["--direction", "forward"])] + DECODES[1:]
BIJECTIVE = "constraint bijective : E[count per a.source] <= 1\n"
SYMMETRIC = "constraint symmetric : E[a] agree\n"
SPEC_DEFAULTS = "specs/hmm_align_pr.em as it is"
# (name, the constraint statements added to specs/hmm_align.em, fit arguments, decodes); the last
# row fits specs/hmm_align_pr.em itself with no schedule on the command line (its defaults)
MODELS = [
    ("HMM", "", [], DECODES),
    ("HMM by agreement", "", ["--agree"], AGREED),
    ("HMM + bijective", BIJECTIVE, [], DECODES),
    ("HMM + bijective, agree", BIJECTIVE, ["--agree"], AGREED),
    ("HMM + symmetric", SYMMETRIC, [], PROJECTED),
    ("HMM + symmetric + bijective", SYMMETRIC + BIJECTIVE, [], PROJECTED),
    (SPEC_DEFAULTS, None, [], PROJECTED[:1]),
]
# --halves: the test pairs split by the parity of their sentence number in the gold file (from 1),
# so that a schedule chosen on one half is scored on pairs it was not chosen on
HALVES = ("odd", "even")


def half_scores(predicted: list, gold: list) -> dict[str, float]:
    """AER % of the odd- and of the even-numbered pairs (sentence numbers from 1), each summed over
    its own half as emc's AER sums over the whole set."""
    return {name: 100 * alignment_scores(predicted[start::2], gold[start::2])["aer"]
            for start, name in enumerate(HALVES)}


def read_links(printed: str) -> list[set[tuple[int, int]]]:
    """The links `emc decode` printed (`i-j` each, one line a pair); every decode, French->English's
    too, prints them in the bitext's (English, French) positions."""
    return [{(int(i), int(j)) for i, j in (link.split("-") for link in line.split())} for line in printed.splitlines()]


def test_gold(data: Path, test: Path) -> list:
    """The gold (sure, possible) links of the test pairs in `test` (`english ||| french` a line)."""
    pairs = [line.split(" ||| ") for line in test.read_text(encoding="utf-8").splitlines()]
    lengths = (np.array([len(e.split()) for e, _ in pairs]), np.array([len(f.split()) for _, f in pairs]))
    return read_gold(str(data / "test.wa.nonullalign"), "naacl", lengths)


def decode_scores(run: Path, test: Path, gold_file: Path, decode_args: list[str],
                  gold: list | None) -> tuple[float, float, float, dict[str, float] | None]:
    """(AER %, precision %, recall %) of the run's decode of the test pairs as emc scores them, and
    with `gold` (--halves) the AER % of each half, from the links it printed."""
    done = emc_run("decode", str(run), str(test), "--gold", str(gold_file), *decode_args)
    aer, precision, recall = scores(done.stderr)
    if gold is None:
        return aer, precision, recall, None
    predicted = read_links(done.stdout)
    whole = 100 * alignment_scores(predicted, gold)["aer"]
    if len(predicted) != len(gold) or abs(whole - aer) > 0.006:  # emc prints two decimals
        raise SystemExit(f"--halves: the printed links of {run.name} {' '.join(decode_args)} score {whole:.2f}% "
                         f"AER, emc said {aer:.2f}%: the links were read wrong")
    return aer, precision, recall, half_scores(predicted, gold)


def emc_rows(tmp: Path, data: Path, iterations: int, esteps: int, only: list[str] | None,
             gold: list | None) -> None:
    """emc's configurations (those in `only`), fitted and decoded; `gold`: the test pairs' gold
    links, to score each half too (--halves)."""
    plain = (ROOT / "specs" / "hmm_align.em").read_text(encoding="utf-8")
    for name, constraints, fit_args, decodes in MODELS:
        if only and name not in only:
            continue
        spec = tmp / (re.sub(r"\W+", "_", name) + ".em")
        if constraints is None:  # the spec's own defaults: no schedule given
            spec, schedule = ROOT / "specs" / "hmm_align_pr.em", []
        else:
            spec.write_text(plain + constraints, encoding="utf-8")
            schedule = ["--init", "ibm1", "--iterations", str(iterations), "--tolerance", "0"]
            if constraints:
                schedule += ["--constraint-esteps", str(esteps)]
        run = tmp / re.sub(r"\W+", "_", name)
        t0, cpu0 = time.perf_counter(), _children_cpu()
        emc("fit", str(spec), str(tmp / "train.txt"), "--out", str(run), "--quiet", *schedule, *fit_args)
        seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
        per_iteration = iteration_seconds(run)
        for links, decode_args in decodes:
            aer, precision, recall, halves = decode_scores(run, tmp / "test.txt", data / "test.wa.nonullalign",
                                                           decode_args, gold)
            row(name, links, aer, precision, recall, seconds, per_iteration, cpu, halves)


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: on a shared machine a
    fit's wall time measures the other jobs too."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def iteration_seconds(run: Path) -> float:
    """The mean wall time of the run's EM iterations (the joint ones, or RUN's and RUN/reverse's summed)."""
    total = 0.0
    for log in (run / "log.jsonl", run / "reverse" / "log.jsonl"):
        records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        seconds = [r["seconds"] for r in records if r.get("label", "").split()[0] != "ibm1" and "seconds" in r]
        total += sum(seconds) / max(len(seconds), 1)
        if records and records[-1].get("label", "").startswith(("agreement", "symmetric")):
            break  # one log holds both directions' steps
    return total


def eflomal_rows(tmp: Path, data: Path, test_pairs: int, model: int, halves: bool) -> None:
    """eflomal (Östling & Tiedemann 2016) on the training text both ways; its test-pair links
    scored (each half too, with `halves`)."""
    from emc.structures.alignment.symmetrize import symmetrize

    lines = (tmp / "train.txt").read_text(encoding="utf-8").splitlines()
    (tmp / "e.txt").write_text("".join(line.split(" ||| ")[0] + "\n" for line in lines), encoding="utf-8")
    (tmp / "f.txt").write_text("".join(line.split(" ||| ")[1] + "\n" for line in lines), encoding="utf-8")
    t0, cpu0 = time.perf_counter(), _children_cpu()
    done = subprocess.run([str(Path(sys.executable).parent / "eflomal-align"), "-s", str(tmp / "e.txt"),
                           "-t", str(tmp / "f.txt"), "-f", str(tmp / f"fwd{model}.txt"), "-r", str(tmp / f"rev{model}.txt"),
                           "--model", str(model)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"eflomal-align failed:\n{done.stderr}")
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0

    def links(path: Path) -> list[set[tuple[int, int]]]:
        out = [{tuple(int(x) for x in link.split("-")) for link in line.split()}
               for line in path.read_text(encoding="utf-8").splitlines()]
        return out[len(out) - test_pairs:]  # the test pairs are the last lines of the training text

    forward, reverse = links(tmp / f"fwd{model}.txt"), links(tmp / f"rev{model}.txt")  # both in (English, French) positions
    gold = test_gold(data, tmp / "test.txt")  # the same pairs as the training text's last lines
    name = f"eflomal model {model}"
    for label, predicted in [("English->French", forward), ("French->English", reverse),
                             ("intersection", [symmetrize(a, b, "intersection") for a, b in zip(forward, reverse)]),
                             ("grow-diag-final-and",
                              [symmetrize(a, b, "grow-diag-final-and") for a, b in zip(forward, reverse)])]:
        s = alignment_scores(predicted, gold)
        row(name, label, 100 * s["aer"], 100 * s["precision"], 100 * s["recall"], seconds, None, cpu,
            half_scores(predicted, gold) if halves else None)


def row(name: str, links: str, aer: float, precision: float, recall: float, seconds: float,
        per_iteration: float | None, cpu: float, halves: dict[str, float] | None = None) -> None:
    each = "-" if per_iteration is None else f"{per_iteration:.1f}"
    split = "" if halves is None else "".join(f" {halves[half]:>6.2f}" for half in HALVES)
    print(f"{name:<28} {links:<34} {aer:>6.2f} {precision:>7.1f} {recall:>6.1f} {seconds:>6.1f} {cpu:>6.1f} {each:>6}"
          f"{split}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--constraint-esteps", type=int, default=20, help="most E-steps a projection takes")
    parser.add_argument("--no-eflomal", action="store_true", help="only emc's aligners")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these of emc's configurations (their names)")
    parser.add_argument("--halves", action="store_true",
                        help="also the AER of the odd- and of the even-numbered test pairs (two more columns)")
    parser.add_argument("--threads", type=int, help="threads for emc and for eflomal alike (both run as subprocesses)")
    args = parser.parse_args()
    if args.threads:
        os.environ["NUMBA_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pairs = bitext(args.data, TRAIN, tmp / "train.txt")
        test_pairs = bitext(args.data, ["test"], tmp / "test.txt")
        print(f"training: {pairs} pairs; {args.iterations} EM iterations after 5 of IBM 1; AER on the {test_pairs} "
              f"test pairs; fit s: both directions, on a shared machine; threads: "
              f"{args.threads or 'as the environment gives them'}")
        split = "".join(f" {half + ' %':>6}" for half in HALVES) if args.halves else ""
        print(f"{'model':<28} {'links':<34} {'AER %':>6} {'prec %':>7} {'rec %':>6} {'fit s':>6} {'cpu s':>6} "
              f"{'s/iter':>6}{split}")
        if not args.no_eflomal:
            try:
                import eflomal  # noqa: F401
            except ImportError:
                print("eflomal is not installed (pip install eflomal, or the bench extra): its rows are left out")
            else:
                for model in (3, 2):
                    eflomal_rows(tmp, args.data, test_pairs, model, args.halves)
        gold = test_gold(args.data, tmp / "test.txt") if args.halves else None
        emc_rows(tmp, args.data, args.iterations, args.constraint_esteps, args.only, gold)


if __name__ == "__main__":
    main()
