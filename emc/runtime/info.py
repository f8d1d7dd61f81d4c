"""`emc info`: what the compiler derived from a spec, in words (and, with data, in sizes)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from emc.codegen.cache import cache_dir
from emc.codegen.layout import CodeLayout
from emc.runtime.compiled import load_module
from emc.spec.check import check
from emc.spec.model import CheckedModel
from emc.spec.parse import parse_file
from emc.spec.width import pad


def describe(spec_path: str, data: str | None, overrides: dict[str, Any], options: dict[str, Any]) -> str:
    model = check(parse_file(spec_path), overrides)
    lines = _describe_model(model)
    layout = CodeLayout.of(model)
    module = load_module(model, layout)
    lines.append(f"generated code: module {module.__name__} in {cache_dir()} "
                 f"(`emc compile {spec_path}` writes it to generated/{model.name}.py)")
    lines.append(f"packed arrays: {', '.join(layout.arrays)}")
    if data:
        lines += _describe_data(model, data, options)
    return "\n".join(lines)


def _describe_model(model: CheckedModel) -> list[str]:
    b = model.binding
    s = model.structure
    args = ", ".join(f"{k}={v}" for k, v in b.args.items())
    lines = [f"model {model.name}",
             f"observed: {', '.join(f'{n} ({k})' for n, k in model.observed.items())}",
             f"latent {b.latent}: {s.name}({args}): {s.help}",
             "parts and their attributes:"]
    for path, attr in s.attributes(b).items():
        views = "; observed views apply (.lower, .suffix(n), ...)" if attr.tokens_of else ""
        lines.append(f"  {pad(path, 16)} {attr.role:8s} values in {attr.space}: {attr.help}{views}")
    lines.append("factors (each multiplies into its slot's part scores):")
    for f in model.factors:
        reg = f.prior.describe()
        shared = f", shares table '{f.table}'" if f.table != f.name else ""
        lines.append(f"  {f.name}: {f.signature} [{f.kind}{shared}] -> {f.slot} slot; rows over "
                     f"{' x '.join(f.context_spaces) or '(one row)'}, outcomes over {' x '.join(f.outcome_spaces)}"
                     + (f"; {reg}" if reg else ""))
    lines.append(f"DP: {s.dp}; cost {s.cost(b.args)}")
    return lines


def _describe_data(model_checked: CheckedModel, path: str, options: dict[str, Any]) -> list[str]:
    from emc.runtime.problem import Model, bind

    model = Model.from_checked(model_checked)
    vocabs: dict = {}
    problem = bind(model, model.read(path, options, vocabs), vocabs, options)
    corpus = problem.corpus
    lengths = corpus.lengths()
    lines = [f"data {path}: {len(corpus)} examples, {int(lengths.sum())} tokens (mean length "
             f"{lengths.mean():.1f}, max {lengths.max()})"]
    for name, size in sorted(problem.sizes.items()):
        lines.append(f"  space {name}: {size} values")
    total = 0
    for t in problem.layout.tables:
        mib = t.size * 8 / 2**20
        total += t.size
        lines.append(f"  table {t.name} ({t.kind}): {t.rows} rows x {t.outcomes} outcomes = {t.size} entries, {mib:.1f} MiB")
    lines.append(f"  parameters: {total} entries ({total * 8 / 2**20:.1f} MiB; expected counts need one such "
                 f"buffer per thread); packed data {problem.ints.nbytes / 2**20:.1f} MiB")
    return lines + _iteration_cost(model_checked, problem)


def _iteration_cost(model: CheckedModel, problem) -> list[str]:
    """What one E-step over the data costs on this machine (emc/runtime/cost.py: the structure's
    cost model, its constant timed here on short sentences)."""
    from emc.runtime.cost import duration_text, length_power, predicted_iteration
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.params import random_init

    executor = LocalExecutor(problem)
    params = random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0)
    executor.warm_up(params)
    cost = model.binding.structure.cost(model.binding.args)
    predicted = predicted_iteration(executor, params, length_power(cost))
    if predicted is None:
        return []
    seconds, share, next_longest = predicted
    dominant = (f"; the longest sentence alone is {share:.0%} of it (--max-length {next_longest} leaves it out)"
                if share > 0.5 and next_longest else "")
    return [f"  one iteration's E-step: about {duration_text(seconds)} on this machine ({cost}){dominant}"]


def describe_run(run: str, top: int = 8) -> str:
    """`emc info RUN`: the saved model's spec in words; its parameters as its structure summarises
    them, when it does (a label over fields: each class's top tokens per field); each featured
    block's heaviest features for each context row (its weights, feature = value)."""
    from emc.runtime.blocks.features import build
    from emc.runtime.model_dir import load_run
    from emc.runtime.params import ParamLayout

    saved = load_run(run)
    checked = saved.model.checked
    data = saved.model.data
    lines = [f"saved model {run}: objective {saved.info['objective']:.6g}"] + _describe_model(checked)
    args = saved.info["args"]
    layout = ParamLayout.build(checked, {**saved.info["vocab_sizes"], **data.space_sizes(checked, args)}, saved.sparse)
    if data.summary is not None:
        lines += [f"parameters of {run}:"] + data.summary(checked, layout, saved.vocabs, args, saved.theta)
    lines += _projections(run)
    for factor in checked.tables():
        if not factor.features:
            continue
        weights = saved.features.get(factor.table)
        if weights is None:
            lines.append(f"block {factor.name}: no feature weights saved")
            continue
        if factor.table in saved.sparse:
            lines += _sparse_feature_lines(factor, layout.table(factor.table), saved.vocabs, weights, top)
            continue
        space = factor.outcome_spaces[0]
        values = saved.vocabs[space].values[:saved.info["vocab_sizes"][space]]
        block = build(factor.table, weights.shape[1], factor.l2, factor.features, values)
        rows = " x ".join(factor.context_spaces) or "(one row)"
        lines.append(f"block {factor.name}: {block.n_features} features x {weights.shape[1]} rows over {rows}, "
                     f"l2({factor.l2:g}); the {top} heaviest features of each row (xN: N features only one "
                     f"outcome has, weighing alike, shown once):")
        for r in range(weights.shape[1]):
            cells = ", ".join(f"{block.feature_names[i]} {weights[i, r]:+.2f}" + (f" (x{n})" if n > 1 else "")
                              for i, n in _heaviest_alike(weights[:, r], block.merged_columns, top))
            lines.append(f"  row {r}: {cells}")
    return "\n".join(lines)


def _projections(run: str) -> list[str]:
    """What posterior regularization did in the fit, from its log (nothing without constraints)."""
    import json

    from emc.runtime.constraints import projection_lines

    log = Path(run) / "log.jsonl"
    if not log.is_file():
        return []
    try:
        history = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError):
        return [f"{log}: not readable as JSON lines"]
    return projection_lines(history)


def _heaviest_alike(weights: np.ndarray, merged: np.ndarray, top: int) -> list[tuple[int, int]]:
    """The `top` heaviest features of a row as (feature, how many): the features of one merged
    column with the same weight (an outcome's own features, which the M-step fits alike) count
    once, under the first of them."""
    members: dict[int, np.ndarray] = {}
    out, listed = [], set()
    for i in np.argsort(-weights, kind="stable"):
        c = int(merged[i])
        if c < 0:
            out.append((int(i), 1))
        elif (c, weights[i]) not in listed:
            listed.add((c, weights[i]))
            group = members.setdefault(c, np.flatnonzero(merged == c))
            out.append((int(i), int((weights[group] == weights[i]).sum())))
        if len(out) == top:
            break
    return out


def _sparse_feature_lines(factor, table, vocabs: dict, weights: np.ndarray, top: int) -> list[str]:
    """A featured sparse table (emc/runtime/blocks/pair_features.py): its shared pair features' weights,
    then its heaviest conjoined features over all rows (a row per source word would be thousands)."""
    from emc.runtime.blocks.pair_features import featured_sparse_table

    block = featured_sparse_table(factor, table, vocabs)
    shared = block.shared_weights(weights)
    conjoined = block.n_features - len(shared)
    rows = vocabs[table.context_spaces[0]].values
    heaviest = np.argsort(-weights[:conjoined], kind="stable")[:top]
    lines = [f"block {factor.name}: {conjoined} features conjoined with their row (a {table.context_spaces[0]} "
             f"value) and {len(shared)} shared by every row, l2({factor.l2:g})"]
    if shared:
        lines.append("  shared: " + ", ".join(f"{name} {w:+.2f}" for name, w in shared.items()))
    lines.append(f"  the {top} heaviest conjoined: " + ", ".join(
        f"{rows[block.column_rows[i]]}: {block.feature_names[i]} {weights[i]:+.2f}" for i in heaviest))
    return lines
