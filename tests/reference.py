"""The language's meaning, written independently of the code generator: every latent structure of
an example as its parts, each part as the ids of its attributes, and a factor's firing as the
mixed-radix (row, outcome) of its attributes. check_against_enumeration then compares any spec's
generated E-step and decoder with this brute force (tests/test_properties.py on random specs, the
tests/test_*_bruteforce.py files on hand-written ones). ENUMERATORS has one enumerator per
structure; the chain's and the label's take an optional constraint (`allowed`), as a tag
dictionary or a labeled example imposes.

Also the textbook incremental EM update over whole dense tables (dense_incremental), which the
sparse online code is checked against (tests/test_variants.py, test_every_variant_on_every_spec.py)."""
from __future__ import annotations

import itertools
from typing import Callable, Iterable

import numpy as np

from emc.io.views import apply_views
from emc.runtime.executor import LocalExecutor
from emc.runtime.initialize import initial_params
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem
from emc.runtime.settings import FitSettings
from emc.runtime.variants.base import Variant
from emc.runtime.variants.online_state import FEATURED_MSTEPS_PER_PASS, start_mass
from emc.structures.label import field_slots
from emc.structures.semiring import SUM

Part = tuple[str, dict[str, int]]  # (slot, attribute text -> id)
NULL = -1  # an alignment link to no source word


def token_ids(problem: Problem, observed: str, example: int, base_path: str) -> list[dict[str, int]]:
    """For each token of an observed variable, the id of every token attribute the model reads
    (the token itself and its views), keyed by the attribute text with `base_path` as its base."""
    field = problem.corpus.fields[observed]
    words = field.tokens(example)
    out = [dict() for _ in words]
    for factor in problem.model.checked.factors:
        for attr in factor.outcome + factor.context:
            if attr.attribute.tokens_of != observed or not attr.text.startswith(base_path):
                continue
            vocab = problem.vocabs[attr.space]
            for t, word in enumerate(words):
                out[t][attr.text] = vocab.index[apply_views(word, attr.views)] if attr.views else int(field.example(example)[t])
    return out


def firings(problem: Problem, parts: list[Part]) -> list:
    """The (table, row, outcome) of every factor on every part (a weight's row is 0)."""
    out = []
    sizes = problem.sizes
    for slot, values in parts:
        for factor in problem.model.checked.factors:
            if factor.slot != slot:
                continue
            row = 0
            for attr, space in zip(factor.context, factor.context_spaces):
                row = row * sizes[space] + values[attr.text]
            outcome = 0
            for attr, space in zip(factor.outcome, factor.outcome_spaces):
                outcome = outcome * sizes[space] + values[attr.text]
            out.append((factor.table, row, outcome))
    return out


def chain_structures(problem: Problem, example: int, allowed: list[set[int]] | None = None):
    """Every state sequence; with `allowed`, only those whose state at each position t is in allowed[t]."""
    b = problem.model.checked.binding
    z, x = b.latent, b.observed["x"]
    K, stop = problem.args["states"], problem.args["stop"]
    tokens = token_ids(problem, x, example, x)
    n = len(tokens)
    for path in itertools.product(range(K), repeat=n):
        if allowed is not None and any(path[t] not in allowed[t] for t in range(n)):
            continue
        parts: list[Part] = []
        history = [K, K]
        for t in range(n):
            parts.append(("emission", dict(tokens[t], **{z: path[t]})))
            parts.append(("transition", {z: path[t], f"{z}.prev": history[-1], f"{z}.prev2": history[-2]}))
            history.append(path[t])
        if stop:
            parts.append(("transition", {z: K, f"{z}.prev": history[-1], f"{z}.prev2": history[-2]}))
        yield firings(problem, parts), tuple(path)


def segmentations(n: int, maxlen: int, prefix: tuple[int, ...] = ()):
    """Every split of n symbols into words of 1..maxlen symbols, as the tuple of word lengths."""
    if n == 0:
        yield prefix
        return
    for length in range(1, min(maxlen, n) + 1):
        yield from segmentations(n - length, maxlen, prefix + (length,))


def segmentation_structures(problem: Problem, example: int):
    b = problem.model.checked.binding
    s, x = b.latent, b.observed["x"]
    symbols = problem.corpus.fields[x].tokens(example)
    words = problem.vocabs["substrings"]
    for lengths in segmentations(len(symbols), problem.args["maxlen"]):
        bounds = [0] + list(itertools.accumulate(lengths))
        segments = list(zip(bounds[:-1], bounds[1:]))
        parts = [("segment", {f"{s}.word": words.index["".join(symbols[i:j])], f"{s}.length": j - i})
                 for i, j in segments]
        yield firings(problem, parts), tuple(bounds)


def binary_trees(i: int, j: int):
    """Every binary bracketing of [i, j) as its set of constituent spans."""
    if j - i == 1:
        yield frozenset({(i, j)})
        return
    for k in range(i + 1, j):
        for left in binary_trees(i, k):
            for right in binary_trees(k, j):
                yield left | right | {(i, j)}


def labeled_trees(i: int, j: int, labels: int):
    """Every binary tree over [i, j) whose nodes carry one of `labels` labels, as a dict
    (start, end) -> (label, split), split 0 for a single symbol."""
    for a in range(labels):
        if j - i == 1:
            yield {(i, j): (a, 0)}
            continue
        for k in range(i + 1, j):
            for left in labeled_trees(i, k, labels):
                for right in labeled_trees(k, j, labels):
                    yield {**left, **right, (i, j): (a, k)}


def pcfg_structures(problem: Problem, example: int):
    """Every labeled binary tree: its root, each binary node's rewrite and each preterminal."""
    b = problem.model.checked.binding
    t, x = b.latent, b.observed["x"]
    tokens = token_ids(problem, x, example, x)
    n = len(tokens)
    for tree in labeled_trees(0, n, problem.args["labels"]):
        parts = [("root", {f"{t}.root": tree[(0, n)][0]})]
        for (i, j), (a, k) in tree.items():
            parts.append(("node", {f"{t}.label": a, f"{t}.preterminal": int(j - i == 1)}))
            if j - i == 1:
                parts.append(("emit", dict(tokens[i], **{f"{t}.label": a})))
            else:
                parts.append(("rule", {f"{t}.label": a, f"{t}.left_label": tree[(i, k)][0],
                                       f"{t}.right_label": tree[(k, j)][0]}))
        yield firings(problem, parts), tree


def spantree_structures(problem: Problem, example: int):
    if problem.args.get("labels"):
        yield from pcfg_structures(problem, example)
        return
    b = problem.model.checked.binding
    t, x = b.latent, b.observed["x"]
    symbols = problem.corpus.fields[x].tokens(example)
    n = len(symbols)
    padded = ["<s>"] + symbols + ["</s>"]
    spans = [(i, j) for i in range(n) for j in range(i + 1, n + 1)]
    if problem.args.get("empty"):
        spans += [(i, i) for i in range(n + 1)]
    yields, contexts, lengths = problem.vocabs["yields"], problem.vocabs["contexts"], problem.vocabs["length"]
    for tree in binary_trees(0, n):
        parts = [("span", {f"{t}.yield": yields.index[" ".join(symbols[i:j])],
                           f"{t}.context": contexts.index[f"{padded[i]} {padded[j + 1]}"],
                           f"{t}.length": lengths.index[str(j - i)],
                           f"{t}.constituent": int((i, j) in tree)}) for i, j in spans]
        yield firings(problem, parts), tree


def label_structures(problem: Problem, example: int, allowed: Iterable[int] | None = None):
    """Every class (with `allowed`, only those classes)."""
    b = problem.model.checked.binding
    c = b.latent
    fields = field_slots(b)  # observed variable -> its token slot (several with label(v, n, ...))
    tokens = {d: token_ids(problem, d, example, d) for d in fields}
    for label in range(problem.args["classes"]) if allowed is None else allowed:
        parts = [("example", {c: label})] + [(fields[d], dict(values, **{c: label}))
                                             for d in fields for values in tokens[d]]
        yield firings(problem, parts), label


def jump_bucket(jump: int, maxjump: int) -> int:
    return min(max(jump, -maxjump), maxjump) + maxjump


def shared_by(previous: int, l: int, jump: int, maxjump: int) -> int:
    """How many source positions the jump's bucket reaches from `previous` (1 unless it is an
    end bucket), counted one by one."""
    bucket = jump_bucket(jump, maxjump)
    if 0 < bucket < 2 * maxjump:
        return 1
    return sum(1 for i in range(l) if jump_bucket(i - previous, maxjump) == bucket)


def alignment_structures(problem: Problem, example: int):
    """Each target word links to a source position or NULL; with jump=yes each link also scores its
    jump bucket (NULL: a bucket of its own, keeping the previous position), with a diagonal block
    the bucket of its distance from the diagonal (NULL: its own), and an end bucket's weight is
    shared by the positions it reaches."""
    b = problem.model.checked.binding
    a, e, f = b.latent, b.observed["source"], b.observed["target"]
    args = problem.args
    source = token_ids(problem, e, example, f"{a}.source")
    target = token_ids(problem, f, example, f"{a}.target")
    null_values = {attr.text: len(problem.vocabs[attr.space]) for factor in problem.model.checked.factors
                   for attr in factor.outcome + factor.context if attr.text.startswith(f"{a}.source")}
    choices = list(range(len(source))) + ([NULL] if args["null"] else [])
    diagonal = any(factor.slot == "diagonal" for factor in problem.model.checked.factors)
    for links in itertools.product(choices, repeat=len(target)):
        parts: list = []
        constants = []
        previous = -1
        for j, i in enumerate(links):
            parts.append(("link", dict(target[j], **(null_values if i == NULL else source[i]))))
            if diagonal:
                maxjump, l = args["maxjump"], len(source)
                # the source word under the middle of target word j: the first whose right edge
                # lies past it, (i + 1) / l > (j + 1/2) / m
                at = next(k for k in range(l) if (k + 1) * 2 * len(target) > (2 * j + 1) * l)
                bucket = 2 * maxjump + 1 if i == NULL else jump_bucket(i - at, maxjump)
                parts.append(("diagonal", {f"{a}.diagonal": bucket}))
                if i != NULL:
                    constants.append(1.0 / shared_by(at, l, i - at, maxjump))
            if args["jump"]:
                maxjump = args["maxjump"]
                bucket = 2 * maxjump + 1 if i == NULL else jump_bucket(i - previous, maxjump)
                parts.append(("jump", {f"{a}.jump": bucket}))
                if i != NULL:
                    constants.append(1.0 / shared_by(previous, len(source), i - previous, maxjump))
            if i != NULL:
                previous = i
        yield firings(problem, parts) + constants, tuple(links)


def projective_trees(n: int):
    """Every projective dependency tree of n words with one root, as heads (1-based, 0: the root),
    found by filtering all n^n head assignments: one root, no cycle, no crossing arcs."""
    for heads in itertools.product(range(n + 1), repeat=n):
        if heads.count(0) != 1 or any(h == w + 1 for w, h in enumerate(heads)):
            continue
        if not all(_reaches_root(heads, w) for w in range(n)):
            continue
        arcs = [(min(w + 1, h), max(w + 1, h)) for w, h in enumerate(heads)]  # the root is word 0
        if any(a < c < b < d for a, b in arcs for c, d in arcs):
            continue
        yield heads


def _reaches_root(heads: tuple[int, ...], w: int) -> bool:
    seen = set()
    while w + 1 not in seen:
        seen.add(w + 1)
        if heads[w] == 0:
            return True
        w = heads[w] - 1
    return False


def deptree_structures(problem: Problem, example: int):
    """Every projective tree: the root's part, one attach part per word with a head, and per head
    and side one stop part per dependent (stop 0; adjacent for the closest) and one after the
    last (stop 1; adjacent when the side has none)."""
    b = problem.model.checked.binding
    d, x = b.latent, b.observed["x"]
    tags = [int(t) for t in problem.corpus.fields[x].example(example)]
    n = len(tags)
    for heads in projective_trees(n):
        parts: list = []
        for w, h in enumerate(heads):
            if h == 0:
                parts.append(("root", {f"{d}.root": tags[w]}))
            else:
                parts.append(("attach", {f"{d}.head": tags[h - 1], f"{d}.dependent": tags[w],
                                         f"{d}.direction": int(w > h - 1)}))
        for h in range(n):
            for side, dependents in ((0, [w for w in range(h - 1, -1, -1) if heads[w] == h + 1]),
                                     (1, [w for w in range(h + 1, n) if heads[w] == h + 1])):
                stop = {f"{d}.head": tags[h], f"{d}.direction": side}
                parts += [("stop", dict(stop, **{f"{d}.adjacent": int(k == 0), f"{d}.stop": 0}))
                          for k in range(len(dependents))]
                parts.append(("stop", dict(stop, **{f"{d}.adjacent": int(not dependents), f"{d}.stop": 1})))
        yield firings(problem, parts), heads


ENUMERATORS: dict[str, Callable] = {
    "chain": chain_structures,
    "segmentation": segmentation_structures,
    "spantree": spantree_structures,
    "label": label_structures,
    "alignment": alignment_structures,
    "deptree": deptree_structures,
}


def decoded_form(problem: Problem, example: int, decoded: np.ndarray):
    """The decoder's output in the form the enumerators give structures."""
    if getattr(problem.model.checked.structure, "program", None) is not None:
        return rule_decoded_form(problem, decoded)
    name = problem.model.checked.structure.name
    if name == "chain":
        return tuple(int(s) for s in decoded)
    if name == "segmentation":  # per symbol, the length of the word starting there (0 inside a word)
        return tuple(int(i) for i in np.flatnonzero(decoded)) + (len(decoded),)
    if name == "label":
        return int(decoded[0])
    if name == "alignment":  # a source position per target word, NULL = -1
        return tuple(int(i) for i in decoded)
    if name == "spantree" and problem.args.get("labels"):  # nodes (start, end, label, split)
        return problem.model.data.module.decoded_nodes(problem.model.checked, decoded)
    if name == "deptree":  # a head per word, numbered from 1 (0: the root)
        return tuple(int(h) for h in decoded)
    if name == "spantree":  # a 0/1 flag per non-empty span: single symbols and the whole sentence included
        n = int(problem.corpus.lengths()[example])
        return frozenset(problem.model.data.module.decoded_spans(decoded, n))
    raise KeyError(name)


def pseudo_counts(params: ParamState, layout, mass) -> np.ndarray:
    """The starting statistics: the initial parameters, one pseudo-count per entry on average
    (mass "entry") or per row ("row")."""
    mu = params.weights(layout)
    if mass == "entry":
        for t in layout.learned():
            mu[t.entries] *= t.row_sizes()[t.local_rows()]
    return mu


def normalise(mu: np.ndarray, layout, settings: FitSettings) -> np.ndarray:
    """Statistics to parameters: each learned row (plus its smoothing) divided by its total."""
    out = mu.copy()
    for t in layout.learned():
        smoothing = settings.regularizers.get(t.name, t.prior).smoothing
        rows = t.local_rows()
        totals = t.row_sums(out)
        out[t.entries] = (out[t.entries] + smoothing) / (totals[rows] + smoothing * t.row_sizes()[rows])
    return out


def dense_incremental(problem: Problem, settings: FitSettings) -> np.ndarray:
    """Incremental EM as the textbook writes it: cut the examples once into blocks of
    settings.block_size (a random partition; 1: one example each), keep each block's expected
    counts, replace them in the running total after each block's E-step, and drop the starting
    pseudo-counts of every row the data reached after the first pass. A featured block's weights
    come from the gradient M-step on its running total at the end of every few slices of a pass
    (FEATURED_MSTEPS_PER_PASS a pass) and at the end of each pass; the E-step reads its
    probabilities from the last M-step."""
    rng = np.random.default_rng(settings.seed)
    layout = problem.layout
    executor = LocalExecutor(problem, threads=1)
    params = initial_params(problem, settings, executor, rng)  # the structure's own start (the CCM's split)
    m = settings.block_size
    members = rng.permutation(problem.n_examples) if m > 1 else np.arange(problem.n_examples)
    blocks = [members[g:g + m] for g in range(0, problem.n_examples, m)]
    learned = layout.learned_mask()
    mu = pseudo_counts(params, layout, start_mass(problem, settings))
    pseudo = np.where(learned, mu, 0.0)
    stats = {}
    weights = dict(params.features)
    size = Variant.slice_size(len(blocks))
    slices = -(-len(blocks) // size)
    every = max(1, round(slices / FEATURED_MSTEPS_PER_PASS))

    def current() -> np.ndarray:
        theta = normalise(mu, layout, settings)
        for t in layout.featured():
            t.values(theta)[:] = np.exp(t.featured.log_probabilities(weights[t.name]))
        return theta

    def featured_mstep() -> None:
        for t in layout.featured():
            weights[t.name] = t.featured.maximize(np.maximum(t.values(mu), 0.0), weights[t.name])

    for p in range(settings.passes):
        for i, g in enumerate(rng.permutation(len(blocks))):
            s = executor.estep(ParamState.plain(current(), layout), blocks[g], SUM, np.ones(len(blocks[g]))).counts
            mu[learned] += s[learned] - stats.get(g, np.zeros_like(s))[learned]
            stats[g] = s
            finished_slice = (i + 1) // size if (i + 1) % size == 0 else None
            if finished_slice is not None and finished_slice % every == 0 and finished_slice < slices:
                featured_mstep()
        if p == 0:
            total = sum(stats.values())
            reached = np.bincount(layout.row_of, weights=total, minlength=layout.n_rows) > 0
            drop = learned & reached[layout.row_of]
            mu[drop] -= pseudo[drop]
        featured_mstep()
    return current()


def rule_derivations(program, n: int, args: dict[str, int]):
    """Every derivation of a rule program's goal for length n, as a list of part firings
    (rule, variable values): the hypergraph is grounded (emc/structures/rules/program.py's
    `ground`, which only lists firings) and unfolded top-down, with no dynamic program."""
    from emc.structures.rules.program import ground

    building: dict = {}
    axioms: set = set()
    goals = []
    for firing in ground(program, n, args):
        head = (firing.rule.head.name, firing.head)
        if firing.rule.kind == "goal":
            goals.append(head)
        elif firing.rule.kind == "axiom":
            axioms.add(head)
        else:
            building.setdefault(head, []).append(firing)

    def derive(item):
        if item in axioms:
            yield []
        for firing in building.get(item, []):
            for tail in itertools.product(*(list(derive(body)) for body in firing.body)):
                yield [firing] + [f for part in tail for f in part]

    for goal in goals:
        yield from derive(goal)


def rule_structures(problem: Problem, example: int):
    """Every derivation of a structure written as rules, as (factor firings, its parts sorted)."""
    checked = problem.model.checked
    program = checked.structure.program
    s = checked.binding.latent
    x = checked.binding.observed[program.observed[0]]
    tokens = problem.corpus.fields[x].tokens(example)
    ids = token_ids(problem, x, example, s)
    spans = problem.vocabs.get("substrings")
    for derivation in rule_derivations(program, len(tokens), problem.args):
        parts = []
        for firing in derivation:
            rule, env = firing.rule, firing.env
            values = {}
            for factor in checked.factors:
                if factor.slot != rule.name:
                    continue
                for attr in factor.outcome + factor.context:
                    values[attr.text] = _rule_attribute(program, rule, env, attr, tokens, spans, problem)
            parts.append((rule.name, values))
        form = tuple(sorted((f.rule.name, tuple(f.env[v] for v in f.rule.params)) for f in derivation))
        yield firings(problem, parts), form


def _rule_attribute(program, rule, env, attr, tokens, spans, problem):
    from emc.structures.rules.program import evaluate

    name = attr.attribute.path.rsplit(".", 1)[1]
    if name in rule.params:
        return env[name]
    where = next(a for a in rule.where if a.name == name)
    if where.kind == "numeric":
        return evaluate(where.index, env)
    if where.kind == "span":
        joint = "" if problem.model.checked.observed[problem.model.checked.binding.observed[program.observed[0]]] \
            == "symbols" else " "
        return spans.index[joint.join(tokens[evaluate(where.index, env):evaluate(where.end, env)])]
    word = tokens[evaluate(where.index, env)]
    return problem.vocabs[attr.space].index[apply_views(word, attr.views)] if attr.views else \
        problem.vocabs[attr.space].index[word]


def rule_decoded_form(problem: Problem, decoded: np.ndarray):
    """The decoder's parts, sorted, as rule_structures gives them."""
    return tuple(sorted(problem.model.data.module.derivation(problem.model.checked, decoded)))
