"""emc: compile a .em model spec and run EM on it.

    emc check SPEC                 check a spec (syntax and meaning), print what it declares
    emc compile SPEC               write the generated code to generated/NAME.py
    emc fit SPEC DATA --out RUN    run EM, save the model to RUN/
    emc decode RUN FILE            the best structure of each example, in the task's format
    emc sample SPEC                data drawn from a random model of the spec
    emc info SPEC [DATA]           what the compiler derived, in words
    emc info RUN                   a saved model: its spec, and its featured blocks' heaviest features
    emc plot LOG... -o FILE.png    learning curves of one or more fits
    emc structures                 the structures and the attributes a spec may name
    emc demo                       fit an HMM to data from a known HMM (no download needed)
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

from emc.spec.errors import EmcError


def _note(*parts: Any, **kw: Any) -> None:
    """Print to stderr (messages, progress). A reader that went away (`emc fit ... 2>&1 | head`)
    must not stop a fit and lose its model: the rest goes to /dev/null."""
    try:
        print(*parts, file=sys.stderr, **kw)
    except BrokenPipeError:
        sys.stderr = open(os.devnull, "w")


def main(argv: list[str] | None = None) -> int:
    """Run a command (`argv`, or the process's own command line) and return its exit status; run
    as the process's command line (the `emc` script, `python -m emc.cli`), end the process there."""
    if argv is None:
        signal.signal(signal.SIGTERM, _stop_as_ctrl_c)
    status = _command(argv)
    if argv is None:
        _end_process(status)
    return status


def _stop_as_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM (`kill`, a batch system's time limit, `docker stop`) ends a command as Ctrl-C does:
    a fit saves the model so far and says how to resume it, where the signal's default would lose
    the step under way and say nothing."""
    raise KeyboardInterrupt


def _end_process(status: int) -> None:
    """End the process now, as exiting would but without the interpreter's teardown: freeing its
    objects one by one (numba's typing and lowering registries, the compiled functions' LLVM
    modules) took about 0.3 of a warm `emc fit`'s 1.3 CPU seconds, for memory the system takes
    back at once (bench/README.md, "Start-up, round 5"). The atexit handlers run first (a
    temporary folder's cleanup, multiprocessing's, coverage's), then the output is flushed; while
    another thread runs, or a profiler or tracer watches (`python -m cProfile -m emc.cli` writes its
    numbers after the command returns), the ordinary exit takes over instead."""
    import atexit
    import threading

    if threading.active_count() > 1 or sys.getprofile() is not None or sys.gettrace() is not None:
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader went away, or the stream was closed: nothing to write to
            pass
    os._exit(status)


def _command(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    from emc.runtime.state import Interrupted

    try:
        _refuse_empty_values(parser, args)
        _refuse_arguments_beside_resume(parser, args)
        return args.handler(args) or 0
    except Interrupted as err:
        _note(str(err))
        return 130
    except EmcError as err:
        _note(str(err))
        return 1
    except KeyboardInterrupt:
        _note("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except UnicodeEncodeError as err:
        if not _is_stdout_encoding(err.encoding):
            raise
        _note(f"emc {args.command}: the output's encoding ({sys.stdout.encoding}) cannot write "
              f"{err.object[err.start:err.end]!r}: set PYTHONIOENCODING=utf-8 (or a UTF-8 locale)")
        return 1


def _is_stdout_encoding(encoding: str) -> bool:
    """Whether an encoding is stdout's (names differ in spelling: 'ascii', 'ANSI_X3.4-1968')."""
    import codecs

    try:
        return codecs.lookup(encoding).name == codecs.lookup(sys.stdout.encoding or "utf-8").name
    except LookupError:
        return False


_RESUME_TAKES = {"help", "resume", "quiet", "log"}  # what a resumed fit takes: how it reports


def _refuse_arguments_beside_resume(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """`emc fit --resume RUN --iterations 3` went on to the fit's first --iterations without a word:
    a resumed fit runs with the data and settings it began with (RUN's checkpoint), so another
    argument would be ignored, and is refused."""
    if args.command != "fit" or not args.resume:
        return
    command = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["fit"]
    for action in command._actions:
        value = getattr(args, action.dest, None)
        if action.dest in _RESUME_TAKES or value == action.default or value == []:  # not given
            continue
        name = action.option_strings[-1] if action.option_strings else action.dest.upper()
        raise EmcError(f"emc fit --resume {args.resume}: {name} is not taken: a resumed fit goes on with the data and "
                       f"settings it began with; leave {name} out (a new fit, with another --out, takes it)")


def _refuse_empty_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """An empty argument (`--out ''`, a file named '') names nothing: `--out ''` once fitted and
    saved nothing with exit status 0, and `plot -o ''` wrote '.png'."""
    command = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
    for action in command._actions:
        value = getattr(args, action.dest, None)
        if value == action.default:  # not given (a structure's option may default to '')
            continue
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            name = action.option_strings[-1] if action.option_strings else action.dest.upper()
            raise EmcError(f"emc {args.command}: {name} '{value if isinstance(value, str) else ''}' is empty: "
                           f"give {'a name' if action.option_strings else 'a file'}")


# --- parser ------------------------------------------------------------------------------------

class _Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    def _get_help_string(self, action):
        # a default of None means "decided later" and the help says by what; "(default: None)" would not
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="emc", description=__doc__, formatter_class=_Formatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _check_parser(sub)
    _compile_parser(sub)
    _fit_parser(sub)
    _decode_parser(sub)
    _sample_parser(sub)
    _info_parser(sub)
    _demo_parser(sub)
    _dictionary_parser(sub)
    _plot_parser(sub)
    _structures_parser(sub)
    return parser


def _structure_arguments(parser: argparse.ArgumentParser) -> None:
    """--states, --order, --maxlen, ...: every structure argument can be overridden by name."""
    from emc.structures.registry import STRUCTURES

    group = parser.add_argument_group("structure arguments (override the spec's literals)")
    seen: set[str] = set()
    for structure in STRUCTURES.values():
        for arg in structure.args:
            if arg.name in seen:
                continue
            seen.add(arg.name)
            group.add_argument(f"--{arg.name}", default=None, metavar="V",
                               help=f"{structure.name}: {arg.help} ({arg.describe()})")
    group.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="override a structure argument or a `param` of the spec by name")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    from emc.structures.registry import STRUCTURES

    out: dict[str, Any] = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise EmcError(f"--set {item}: write --set NAME=VALUE")
        out[name.strip()] = value.strip()
    for structure in STRUCTURES.values():
        for arg in structure.args:
            value = getattr(args, arg.name, None)
            if value is not None:
                out[arg.name] = value
    return out


def _check_parser(sub) -> None:
    p = sub.add_parser("check", help="check a spec", description="Check a spec: syntax, names, arities, ranges. "
                       "Exit 0 when it is valid; otherwise print each problem with file:line:column.",
                       formatter_class=_Formatter)
    p.add_argument("spec")
    _structure_arguments(p)
    p.set_defaults(handler=cmd_check)


def cmd_check(args) -> int:
    from emc.spec.check import check
    from emc.spec.parse import parse_file
    from emc.spec.width import pad

    model = check(parse_file(args.spec), _overrides(args))
    b = model.binding
    described = ", ".join(f"{k}={_fmt_arg(v)}" for k, v in b.args.items())
    print(f"{args.spec}: ok: model {model.name}, {b.latent} : {b.structure.name}({described})")
    for f in model.factors:
        print(f"  {pad(f.name, 12)} {pad(f.signature, 40)} {f.slot} slot, {f.kind}")
    return 0


def _fmt_arg(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _compile_parser(sub) -> None:
    p = sub.add_parser("compile", help="generate the model's code", formatter_class=_Formatter,
                       description="Write the model's generated numba code (the glue around its structure's "
                                   "DP) to OUT_DIR/NAME.py. `emc fit` compiles on demand; this shows the code.")
    p.add_argument("spec")
    p.add_argument("--out-dir", default="generated", help="directory for NAME.py")
    _structure_arguments(p)
    p.set_defaults(handler=cmd_compile)


def cmd_compile(args) -> int:
    from emc.codegen.render import render
    from emc.spec.check import check
    from emc.spec.parse import parse_file

    model = check(parse_file(args.spec), _overrides(args))
    out = Path(args.out_dir) / f"{model.name}.py"
    if len(out.name.encode("utf-8")) > FILE_NAME_BYTES:
        raise EmcError(f"emc compile: model {model.name[:40]}...: its name ({len(model.name)} characters) is too long "
                       f"for a file name ({FILE_NAME_BYTES - 3} bytes at most): give the model a shorter name")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(model), encoding="utf-8")
    except OSError as err:
        raise EmcError(f"emc compile: cannot write {out} ({err.strerror or err})") from None
    print(f"wrote {out}")
    return 0


FILE_NAME_BYTES = 255  # the longest file name of the usual file systems (ext4, APFS, NTFS)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# What each algorithm does, with its papers (tests/test_cli_help.py holds them to the variants'
# `paper`), for `emc fit --help`; its flags and their defaults are added from the settings
# (emc/runtime/settings.py), whose metadata says which variant reads which.
ALGORITHM_HELP = {
    "batch": "batch EM (Dempster, Laird & Rubin 1977): expected counts over the corpus, then the M-step; never "
             "lowers the objective.",
    "incremental": "incremental EM (Neal & Hinton 1998): cuts the examples once into random blocks of "
                   "--block-size (1: one example each, the textbook update), keeps each block's counts s_b and "
                   "after each block sets mu <- mu + s_b' - s_b; fresh block order each pass.",
    "stepwise": "stepwise (online) EM (Liang & Klein 2009; Sato & Ishii 2000; Cappe & Moulines 2009): "
                "mini-batches of m, mu <- (1 - eta_k) mu + eta_k s with eta_k = (k + 2)^-alpha, a sparse update "
                "(m >= 100 learns far slower).",
    "hard": "hard (Viterbi) EM: counts from the single best structure.",
    "annealed": "deterministic annealing (Smith & Eisner 2004): scores raised to beta, from beta-min growing "
                "by beta-factor whenever EM converges at that beta (to anneal-tolerance), until 1.",
    "skewed": "skewed annealing (Smith & Eisner 2004, section 5): the E-step interpolates in the log domain "
              "between the model's posterior and the initial model's (--init RUN, --init labeled, or a "
              "structure's initializer); beta = 1 is plain EM.",
    "vb": "variational Bayes (Beal 2003; Johnson 2007): mean-field with Dirichlet priors, exp(digamma) weights; "
          "objective: the evidence lower bound.",
    "stochastic": "stochastic (Monte Carlo) EM (Celeux & Diebolt 1985; Wei & Tanner 1990): counts from --samples "
                  "structures per example drawn from the posterior; --samples-growth G > 1 multiplies them by G "
                  "each iteration (annealed S); runs all --iterations.",
}


def fit_epilog() -> str:
    """`emc fit --help`'s closing text: each algorithm with its paper and its flags' defaults."""
    import textwrap

    from emc.runtime.settings import fit_options, variant_options

    def flags(options) -> str:
        return ", ".join(f"{_flag(f.name)} {f.default:g}" for f in options if isinstance(f.default, (int, float)))

    lines = ["", "algorithms (--algorithm):"]
    for name, text in ALGORITHM_HELP.items():
        entry = f"  {name:<12} {text} {flags(variant_options(name))}"
        lines += textwrap.wrap(entry, 100, subsequent_indent=" " * 15, break_on_hyphens=False)
    driver = [f for f in fit_options() if not f.metadata["variants"]]
    lines += textwrap.wrap(f"Every algorithm: {flags(driver)}.", 100, break_on_hyphens=False)
    return "\n".join(lines) + "\n" + EPILOG_NOTES


EPILOG_NOTES = """Priors and smoothing come from the spec (`smooth add(a)`, `prior dirichlet(a)`, `prior sparse(alpha,
beta)`, the smoothed-L0 prior of Vaswani et al. 2010) and can be overridden: --smooth, --prior.

data:
  Empty lines are skipped when fitting (their number is reported) and printed as empty lines when
  decoding. Files may be gzipped. Text must be UTF-8. Unknown words at decode time are read as
  <unk>, whose probability under each state is that of the words seen once in training.

initialisation:
  Each learned row starts proportional to 1 + NOISE * U(0, 1) (--init-noise, default 1); with
  near-uniform starts (noise 0.01) batch EM on an HMM stalls for its first iterations. Stepwise and
  incremental EM take the structure's ONLINE_INIT_NOISE when it names one (chain: 5, with one
  pseudo-count per row: a varied start keeps the first sentences from deciding every state alike).
"""
FIT_EPILOG = fit_epilog()



def _fit_parser(sub) -> None:
    from emc.priors.text import prior_usage
    from emc.runtime.settings import FitSettings, fit_options, option_type

    p = sub.add_parser("fit", help="run EM on data", formatter_class=_Formatter, epilog=FIT_EPILOG,
                       description="Fit a model to data with EM and save it to --out (params.npz, vocab.json, "
                                   "run.json, log.jsonl). One line of progress per iteration goes to stderr.")
    p.add_argument("spec", nargs="?")
    p.add_argument("data", nargs="*", help="training data (one example per line unless --format says otherwise); "
                                           "several files are read as one corpus")
    p.add_argument("--out", help="directory to save the model in (a checkpoint is kept there as it runs); a "
                                 "folder that already holds a model is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true", help="replace the model already saved in --out")
    p.add_argument("--resume", metavar="RUN", help="continue a fit that was killed or interrupted, from RUN's "
                                                  "checkpoint; it ends as the uninterrupted fit would have")
    p.add_argument("--checkpoint-every", type=float, default=0.0, metavar="SECONDS",
                   help="write the checkpoint at most this often (0: after every iteration or pass)")
    _data_arguments(p, "fit")
    em = p.add_argument_group("EM")
    em.add_argument("--algorithm", default=FitSettings().algorithm, help="which EM (see below)")
    for f in fit_options():
        owners = f.metadata["variants"]
        em.add_argument(_flag(f.name), type=option_type(f), default=f.default, metavar=f.metadata["metavar"],
                        choices=f.metadata["choices"],
                        help=("/".join(owners) + ": " if owners and len(owners) < 3 else "") + f.metadata["help"])
    em.add_argument("--smooth", action="append", default=[], metavar="BLOCK=A",
                    help="override a block's smoothing: add A to its expected counts")
    em.add_argument("--prior", action="append", default=[], metavar="BLOCK=PRIOR",
                    help=f"override a block's prior: {prior_usage()}")
    em.add_argument("--labeled", metavar="FILE",
                    help="semi-supervised: examples with their latent structure (a tagged CoNLL file for a "
                         "chain), trained on with the data; see --labeled-weight, --init labeled")
    em.add_argument("--workers", type=int, metavar="N",
                    help="run the E-step on a local Dask cluster of N worker processes (pip install 'emc[dask]')")
    em.add_argument("--scheduler", metavar="ADDRESS", help="run the E-step on an existing Dask cluster")
    em.add_argument("--quiet", action="store_true", help="no progress lines")
    em.add_argument("--log", metavar="FILE.jsonl", help="also write each iteration's record here as it happens")
    _structure_arguments(p)
    p.set_defaults(handler=cmd_fit)


def _data_arguments(p: argparse.ArgumentParser, when: str) -> None:
    """--format, and each structure's own data options (its data module's FIT_OPTIONS or
    DECODE_OPTIONS: a list of (flags, argparse keyword arguments))."""
    from emc.structures.registry import STRUCTURES, data_for

    formats: dict[str, str] = {}
    groups = []
    for name in STRUCTURES:
        try:
            data = data_for(name)
        except ModuleNotFoundError:  # a structure still under construction
            continue
        formats.update(data.FORMAT_HELP)
        groups.append((name, data.FIT_OPTIONS if when == "fit" else data.DECODE_OPTIONS))
    g = p.add_argument_group("data", "input formats: " + "; ".join(f"{k}: {v}" for k, v in formats.items()))
    g.add_argument("--format", default=None, choices=sorted(formats), metavar="FORMAT",
                   help="input format (default: the structure's first: tokens, symbols, bitext, ...)")
    taken = {"--format"}
    for name, options in groups:
        fresh = [(flags, kwargs) for flags, kwargs in options if not set(flags) & taken]
        if fresh:
            group = p.add_argument_group(f"{name} data options")
            for flags, kwargs in fresh:
                group.add_argument(*flags, **kwargs)
                taken |= set(flags)


def cmd_fit(args) -> int:
    from emc.dist.executor import open_executor
    from emc.runtime import job as jobs
    from emc.runtime.settings import FitSettings, fit_options

    say = (lambda message: None) if args.quiet else _note
    observers = [] if args.quiet else [_progress_line]
    if args.log:
        observers.append(_JsonLog(Path(args.log)))
    observer = lambda record: [o(record) for o in observers]  # noqa: E731
    progress = _progress_bar if sys.stderr.isatty() and not args.quiet else None
    if args.resume:
        jobs.resume(Path(args.resume), observer, say, progress, executors=open_executor)
        return 0
    if not args.spec:
        raise EmcError("emc fit: give a spec and the training data: emc fit SPEC DATA [DATA ...] --out RUN "
                       "(or continue a fit: emc fit --resume RUN)")
    if args.workers is not None and args.workers < 1:
        raise EmcError(f"--workers {args.workers}: give the number of Dask worker processes (at least 1), or leave "
                       f"it out to fit on this machine")
    if not args.checkpoint_every >= 0 or args.checkpoint_every == float("inf"):
        raise EmcError(f"--checkpoint-every {args.checkpoint_every:g}: give the seconds between checkpoints (0: after "
                       f"every step)")
    from_run = Path(args.init).is_dir()
    settings = FitSettings(algorithm=args.algorithm, regularizers=_regularizers(args),
                           **{f.name: getattr(args, f.name) for f in fit_options()})
    if from_run:
        settings.init = "default"
    job = jobs.make_job(args.spec, args.data, _overrides(args), vars(args), settings, args.labeled,
                        args.init if from_run else None, args.checkpoint_every, args.workers, args.scheduler)
    jobs.run(job, Path(args.out) if args.out else None, observer, say, progress, overwrite=args.overwrite,
             executors=open_executor)
    return 0


def _regularizers(args) -> dict[str, str]:
    """--smooth BLOCK=A and --prior BLOCK=dirichlet(A)|sparse(ALPHA,BETA)|none, merged per block
    into the text of what they replace in the spec's prior (a block named in only one of them
    keeps the spec's other setting: see emc.priors.text.prior_from_text)."""
    import math

    from emc.priors.text import PriorError, override_text, prior_from_expression

    smoothing: dict[str, float] = {}
    priors: dict = {}
    for item in args.smooth:
        name, _, value = item.partition("=")
        try:
            amount = float(value)
        except ValueError:
            raise EmcError(f"--smooth {item}: write --smooth BLOCK=AMOUNT") from None
        if not math.isfinite(amount) or amount < 0:
            raise EmcError(f"--smooth {item}: the amount must be a finite number >= 0")
        smoothing[name] = amount
    for item in args.prior:
        name, _, value = item.partition("=")
        try:
            priors[name] = prior_from_expression(value)
        except PriorError as err:
            raise EmcError(f"--prior {item}: {err}") from None
    return {name: override_text(smoothing.get(name), priors.get(name)) for name in {**smoothing, **priors}}


class _JsonLog:
    """--log FILE: one JSON object per iteration or pass, appended (and flushed) as it happens."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("")

    def __call__(self, record: dict) -> None:
        import json

        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def _progress_bar(done: int, total: int) -> None:
    """Inside a long pass, on a terminal: a bar that the next progress line overwrites."""
    width = 30
    filled = width * done // max(total, 1)
    _note(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} examples", end="", flush=True)


def _progress_line(record: dict) -> None:
    from emc.eval import format_metric

    step = record.get("iteration") or record.get("pass")
    kind = "iter" if "iteration" in record else "pass"
    change = record.get("change")
    metrics = "  ".join(f"{k} {format_metric(k, v)}" for k, v in record.get("metrics", {}).items())
    if "constraints" in record or "example_constraints" in record or "sparsity" in record:  # posterior regularization
        from emc.runtime.constraints import projection_text
        metrics = f"{metrics}  {projection_text(record)}"
    _note(f"\r{kind} {step:4d}  objective {record['objective']:.8g}  change "
          f"{'      -' if change is None else f'{change:+.2e}'}  {metrics}  {record['seconds']:.2f}s  "
          f"{record['examples_per_second']:.0f} ex/s")


def data_option_names(when: str) -> set[str]:
    """The keyword names of `emc fit`'s (when="fit") or `emc decode`'s data options, which the
    Python API takes as keyword arguments."""
    parser = argparse.ArgumentParser(add_help=False)
    _data_arguments(parser, when)
    return {action.dest for action in parser._actions}


def _decode_parser(sub) -> None:
    p = sub.add_parser("decode", help="best structures for new data", formatter_class=_Formatter,
                       description="Decode FILE with a saved model: the best (Viterbi) structure of each example, "
                                   "one output line per input line (an empty line for an empty example). Words "
                                   "unseen in training are read as <unk> (see `emc fit --help`).")
    p.add_argument("run", help="a directory written by emc fit --out")
    p.add_argument("file", nargs="?", help="the data to decode (a structure may take it from its options instead)")
    p.add_argument("--posteriors", action="store_true", help="print posterior marginals instead of the best structure")
    p.add_argument("--sample", type=int, metavar="N",
                   help="print N structures per example drawn from the posterior (the N lines of each example "
                        "together), in the format of the best one")
    p.add_argument("--seed", type=int, default=1, help="with --sample: the random seed (same seed, same samples)")
    _data_arguments(p, "decode")
    p.set_defaults(handler=cmd_decode)


def cmd_decode(args) -> int:
    from emc.eval import format_metrics
    from emc.runtime.modes.dispatch import decode
    from emc.runtime.model_dir import load_run

    options = {k: v for k, v in vars(args).items()
               if k not in ("run", "file", "handler", "command", "posteriors", "sample", "seed")}
    result = decode(load_run(args.run), args.file, options, posteriors=args.posteriors, samples=args.sample,
                    seed=args.seed)
    for line in result.lines:
        sys.stdout.write(line + "\n")
    if result.metrics:
        _note("emc: " + format_metrics(result.metrics))
    return 0


def _sample_parser(sub) -> None:
    p = sub.add_parser("sample", help="data from a random model", formatter_class=_Formatter,
                       description="Print examples drawn from a random model of the spec, for the structures "
                                   "chain, segmentation, a span tree with labels (PCFG), deptree (DMV) and a "
                                   "label over several fields. Where the fit can read them, the true structures "
                                   "come with the data, for evaluating recovery: a chain's states with --format "
                                   "conll, a PCFG's trees (ptb, its default), a DMV's heads (conll, its default); "
                                   "a segmentation's spaces are its gold (emc fit --gold-spaces).")
    p.add_argument("spec")
    p.add_argument("--examples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--vocab-size", type=int, default=None,
                   help="distinct words, symbols or field values (default 1000); a DMV's tags (default 20)")
    p.add_argument("--mean-length", type=float, default=15.0,
                   help="the mean sentence length (Poisson)")
    p.add_argument("--format", choices=("tokens", "conll", "ptb", "fields"), default=None,
                   help="tokens: one sentence per line; conll: one token per line with its state (chain) or "
                        "head (deptree); ptb: one tree per line (PCFG); fields: `v ||| n` (a label over "
                        "fields). Default: the structure's first (chain and segmentation tokens, PCFG ptb, "
                        "DMV conll, tuples fields)")
    _structure_arguments(p)
    p.set_defaults(handler=cmd_sample)


def cmd_sample(args) -> int:
    from emc.runtime.sampling import sample_text

    sys.stdout.write(sample_text(args.spec, _overrides(args), args.examples, args.seed, vars(args).copy()))
    return 0


def _info_parser(sub) -> None:
    p = sub.add_parser("info", help="what the compiler derived", formatter_class=_Formatter,
                       description="Describe in words what emc derives from a spec: the structure and its parts, "
                                   "each block's outcome and context spaces, the DP and its cost; with DATA, "
                                   "each table's shape and memory. Given a saved run (emc info RUN), its model and "
                                   "its parameters as the structure summarises them (a label over fields: each "
                                   "class's top tokens per field).")
    p.add_argument("spec", help="a spec, or a saved run's directory")
    p.add_argument("data", nargs="?")
    _data_arguments(p, "fit")
    _structure_arguments(p)
    p.set_defaults(handler=cmd_info)


def cmd_info(args) -> int:
    from emc.runtime.info import describe, describe_run

    if Path(args.spec).is_dir():  # a saved run: its spec, summary and featured blocks' heaviest features
        print(describe_run(args.spec))
        return 0
    print(describe(args.spec, args.data, _overrides(args), vars(args).copy()))
    return 0


def _demo_parser(sub) -> None:
    p = sub.add_parser("demo", help="fit an HMM to data from a known HMM", formatter_class=_Formatter,
                       description="The embedded default job (no download): draw 2,000 sentences from a random "
                                   "8-state HMM, fit the bundled specs/hmm.em to them with batch EM, and report "
                                   "how well the true states are recovered (many-to-one and one-to-one accuracy).")
    p.add_argument("--examples", type=int, default=2000)
    p.add_argument("--states", type=int, default=8)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="runs/demo", help="where to save the fitted model")
    p.set_defaults(handler=cmd_demo)


def cmd_demo(args) -> int:
    from emc.runtime.demo import run_demo

    for flag, value, low in (("--examples", args.examples, 1), ("--iterations", args.iterations, 0),
                             ("--seed", args.seed, 0)):
        if value < low:
            raise EmcError(f"emc demo {flag} {value}: give a whole number of at least {low}")
    return run_demo(args.examples, args.states, args.iterations, args.seed, Path(args.out))


def _dictionary_parser(sub) -> None:
    p = sub.add_parser("dictionary", help="a tag dictionary from a tagged corpus", formatter_class=_Formatter,
                       description="Print the tag dictionary of a CoNLL corpus (each word with every tag it has), "
                                   "for `emc fit --dictionary`.")
    p.add_argument("spec", help="a chain spec (names the observed variable)")
    p.add_argument("data", nargs="+")
    _data_arguments(p, "fit")
    p.set_defaults(handler=cmd_dictionary)


def cmd_dictionary(args) -> int:
    from emc.runtime.problem import Model
    from emc.structures.chain.data import dictionary_lines

    if not args.gold_column:
        raise EmcError("emc dictionary: give the tag column with --gold-column N")
    model = Model.from_file(args.spec)
    options = vars(args).copy()
    options["format"] = options.get("format") or "conll"
    vocabs: dict = {}
    corpora = [model.read(path, options, vocabs) for path in args.data]
    for line in dictionary_lines(corpora, model.checked):
        sys.stdout.write(line + "\n")
    return 0


def _structures_parser(sub) -> None:
    p = sub.add_parser("structures", help="the structures and their attributes", formatter_class=_Formatter,
                       description="Print every structure a spec may use: its arguments, the attributes of its parts "
                                   "(what blocks may name) and its slots (Markdown, from the code's own registry).")
    p.set_defaults(handler=cmd_structures)


def cmd_structures(args) -> int:
    from emc.structures.catalog import catalog_markdown

    print(catalog_markdown())
    return 0


def _plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="learning curves from logs", formatter_class=_Formatter,
                       description="Draw objective and metric against passes and against seconds for one or more "
                                   "logs (RUN/log.jsonl or --log files), runs overlaid and labelled by their "
                                   "settings. Needs matplotlib (pip install 'emc[plot]').")
    p.add_argument("logs", nargs="+")
    p.add_argument("-o", "--out", required=True, help="the image to write (.png, .pdf, .svg)")
    p.add_argument("--metric", help="which metric to draw (default: the first one logged)")
    p.set_defaults(handler=cmd_plot)


def cmd_plot(args) -> int:
    from emc.plot import plot

    print(f"wrote {plot(args.logs, args.out, args.metric)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
