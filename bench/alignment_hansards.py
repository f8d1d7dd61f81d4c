"""Alignment error rate on the NAACL 2003 English-French Hansards test set (447 pairs, sure and
possible gold links), for IBM Model 1, IBM Model 2 (with fast_align's diagonal) and the HMM
aligner, each direction, each symmetrisation, and agreement training.

    python bench/alignment_hansards.py [--iterations 5] [--data ../shared/data/hansards] [--features]

Training text: the 2,383-pair training sample, the 37 trial pairs and the 447 test pairs (2,867
pairs), lowercased, English as the source side (`english ||| french`); the test pairs are then
decoded and scored against test.wa.nonullalign (NAACL format, English position first). Every run
goes through the CLI (`emc fit`, `emc decode --gold`), written to a temporary folder. IBM 1
starts from uniform tables (--init uniform, as fast_align and GIZA++ do), IBM 2 and the HMM
aligner from 5 iterations of IBM 1 (--init ibm1); each then runs --iterations of batch EM (5, fast_align's
default).

--features also fits specs/ibm1_features.em and specs/hmm_align_features.em (the translation table
log-linear, with pair features shared by every source word: emc/runtime/blocks/pair_features.py) in the
same run, each beside its plain spec (--kappa sets their l2 penalty).

fast_align on exactly this text (issue 5): plain IBM 1 43.7% English->French, 39.4% reverse,
grow-diag-final-and 30.7%, intersection 31.3%; with -d -o -v 25.4% / 23.5%, grow-diag-final-and
23.9%, intersection 19.4%.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "hansards"
TRAIN = ["train-berkeley-sample/hansard.36.1.house.debates.00{}".format(k) for k in (1, 2, 3)] + ["dev", "test"]


def bitext(data: Path, stems: list[str], out: Path) -> int:
    lines = []
    for stem in stems:
        english = (data / f"{stem}.e").read_text(encoding="utf-8").splitlines()
        french = (data / f"{stem}.f").read_text(encoding="utf-8").splitlines()
        assert len(english) == len(french), stem
        lines += [f"{e.strip().lower()} ||| {f.strip().lower()}" for e, f in zip(english, french)]
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def emc(*args: str) -> str:
    """Run the CLI; its stderr (progress and scores)."""
    return emc_run(*args).stderr


def emc_run(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI; its finished process (stdout: what it printed, stderr: progress and scores)."""
    done = subprocess.run([sys.executable, "-m", "emc.cli", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"emc {' '.join(args)} failed:\n{done.stderr}")
    return done


def scores(stderr: str) -> tuple[float, float, float]:
    match = re.search(r"aer ([\d.]+)%, precision ([\d.]+)%, recall ([\d.]+)%", stderr)
    return tuple(float(x) for x in match.groups())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--features", action="store_true", help="also the featured specs, beside the plain ones")
    parser.add_argument("--kappa", type=float, help="the featured specs' l2 penalty (default: the specs' own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pairs = bitext(args.data, TRAIN, tmp / "train.txt")
        bitext(args.data, ["test"], tmp / "test.txt")
        gold = ["--gold", str(args.data / "test.wa.nonullalign")]
        decodes = [("English->French", []), ("French->English", ["--direction", "reverse"]),
                   ("intersection", ["--symmetrize", "intersection"]), ("union", ["--symmetrize", "union"]),
                   ("grow-diag-final-and", ["--symmetrize", "grow-diag-final-and"])]
        models = [
            ("IBM 1", "ibm1.em", ["--init", "uniform"], decodes),
            ("IBM 1 by agreement", "ibm1.em", ["--init", "uniform", "--agree"], [("agreed links (posterior >= 0.5)", [])]),
            ("IBM 2", "ibm2.em", ["--init", "ibm1"], decodes),
            ("IBM 2 by agreement", "ibm2.em", ["--init", "ibm1", "--agree"], [("agreed links (posterior >= 0.5)", [])]),
            ("HMM", "hmm_align.em", ["--init", "ibm1"], decodes),
            ("HMM by agreement", "hmm_align.em", ["--init", "ibm1", "--agree"], [("agreed links (posterior >= 0.5)", [])]),
        ]
        if args.features:
            kappa = [] if args.kappa is None else ["--set", f"kappa={args.kappa}"]
            models = [featured for plain in models for featured in
                      (plain, (f"{plain[0]} + features", plain[1].replace(".em", "_features.em"), plain[2] + kappa,
                               plain[3]))]
        print(f"training: {pairs} pairs; {args.iterations} EM iterations (HMM: after 5 of IBM 1); "
              f"AER on the 447 test pairs; fit s: both directions, on a shared machine")
        print(f"{'model':<20} {'links':<34} {'AER %':>6} {'prec %':>7} {'rec %':>6} {'fit s':>6}")
        for name, spec, fit_args, model_decodes in models:
            run = tmp / re.sub(r"\W+", "_", name)
            t0 = time.perf_counter()
            emc("fit", str(ROOT / "specs" / spec), str(tmp / "train.txt"), "--out", str(run), "--quiet",
                "--iterations", str(args.iterations), "--tolerance", "0", *fit_args)
            seconds = time.perf_counter() - t0
            for links, decode_args in model_decodes:
                aer, precision, recall = scores(emc("decode", str(run), str(tmp / "test.txt"), *gold, *decode_args))
                print(f"{name:<20} {links:<34} {aer:>6.1f} {precision:>7.1f} {recall:>6.1f} {seconds:>6.0f}", flush=True)


if __name__ == "__main__":
    main()
