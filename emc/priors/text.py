"""The one parser of priors: the spec's `prior KIND(...)` (through `make_prior`, once the front end
has evaluated the numbers), `--prior BLOCK=KIND(...)` (`prior_from_expression`) and the text a
saved run or a checkpoint keeps (`saved_prior`: `Prior.text()` read back exactly, or the `--smooth`
/ `--prior` override the command line recorded, which `prior_from_text` applies to the spec's)."""
from __future__ import annotations

import math
import re

from emc.priors.kinds import KINDS, Prior
from emc.spec.errors import EmcError

# The priors a spec may write (`none` is the absence of a `prior` option there).
SPEC_PRIORS: dict[str, tuple[str, ...]] = {kind: cls.ARGUMENTS for kind, cls in KINDS.items() if kind != "none"}

_EXPRESSION = re.compile(r"\s*(\w+)\s*(?:\(([^)]*)\))?\s*")
_OPTION = re.compile(r"\s*(smooth|prior)\s+(\w+\s*(?:\([^)]*\))?)")


class PriorError(EmcError):
    """A prior written wrongly; the message says what is wrong (callers add where it was written:
    the spec's line and column, the --prior flag; a damaged saved run shows it as it is)."""


def prior_usage(prefix: str = "") -> str:
    """The ways to write a prior on the command line: 'dirichlet(A), sparse(ALPHA,BETA) or none'."""
    forms = [prefix + cls.USAGE for kind, cls in KINDS.items() if kind != "none"]
    return f"{', '.join(forms)} or {prefix}none"


def make_prior(kind: str, numbers: tuple[float, ...]) -> Prior:
    """The prior of that kind with those numbers (in the order of its ARGUMENTS), which must be
    positive; the kind and the count are the caller's to check (they report them in place)."""
    if any(v <= 0 for v in numbers):
        raise PriorError(f"the parameters of prior {kind} must be > 0")
    cls = KINDS[kind]
    return cls(**dict(zip(cls.ARGUMENTS, numbers)))


def prior_from_expression(text: str) -> Prior:
    """`dirichlet(2)`, `sparse(80, 0.05)` or `none` (as --prior writes them), with no smoothing."""
    match = _EXPRESSION.fullmatch(text)
    kind = match.group(1) if match else None
    if kind not in KINDS or (match.group(2) is None) != (kind == "none"):
        raise PriorError(f"write {prior_usage('BLOCK=')}")
    if kind == "none":
        return Prior()
    try:
        numbers = tuple(float(v) for v in match.group(2).split(","))
    except ValueError:
        raise PriorError("the prior's arguments must be numbers") from None
    want = len(KINDS[kind].ARGUMENTS)
    if len(numbers) != want or min(numbers) <= 0 or not all(map(math.isfinite, numbers)):
        raise PriorError(f"{kind} takes {want} finite positive number(s)")
    return make_prior(kind, numbers)


def override_text(smoothing: float | None, prior: Prior | None) -> str:
    """What `--smooth` and `--prior` replace of a block's prior, as text for prior_from_text: the
    smoothing, the prior, or both (None: the spec's)."""
    parts = [] if smoothing is None else [f"smooth add({smoothing!r})"]
    if prior is not None:
        parts.append(f"prior {prior.kind_text()}")
    return " ".join(parts)


def prior_from_text(text: str, base: Prior = Prior()) -> Prior:
    """`smooth add(A) prior KIND(...)` (either part may be missing: it is then `base`'s)."""
    smoothing, prior = _read_options(text)
    result = base if prior is None else prior
    return result.with_smoothing(base.smoothing if smoothing is None else smoothing)


def saved_prior(value: str | list) -> Prior | str:
    """A block's prior as settings save it: a whole prior (`Prior.text()`) read back as the Prior;
    a command-line override naming the smoothing or the prior alone kept as its text, for
    emc.runtime.job.resolve_regularizers; a run saved before priors were objects converted."""
    text = legacy_text(*value) if isinstance(value, list) else value
    smoothing, prior = _read_options(text)
    return text if smoothing is None or prior is None else prior.with_smoothing(smoothing)


def _read_options(text: str) -> tuple[float | None, Prior | None]:
    """The smoothing and the prior the text names (None for a part it does not name)."""
    smoothing, prior = None, None
    position = 0
    for match in _OPTION.finditer(text):
        if match.start() != position:
            break
        keyword, value = match.groups()
        if keyword == "smooth":
            amount = re.fullmatch(r"add\(([-+.\w]+)\)", value.replace(" ", ""))
            smoothing = _number(amount.group(1)) if amount else math.nan
        else:
            prior = prior_from_expression(value)
        position = match.end()
    if text[position:].strip() or (smoothing is not None and not smoothing >= 0):
        raise PriorError(f"cannot read the prior '{text}': write smooth add(A) and/or prior {prior_usage()}")
    return smoothing, prior


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan  # reported with the text it came from


def legacy_text(smoothing: float | None, prior: dict | None) -> str:
    """The override text of a run saved before priors were objects: [smoothing or None, a
    {kind, alpha, beta} dict or None for none]."""
    if prior is None:
        return override_text(smoothing, Prior())
    numbers = (prior["alpha"],) if prior["beta"] is None else (prior["alpha"], prior["beta"])
    return override_text(smoothing, make_prior(prior["kind"], numbers))
