"""Examples given with their structure (--labeled, semi-supervised EM) for structures written as
rules and the built-ins restated as rules: a labeled example's E-step, hard-EM counts and
decoder equal brute force over the enumerated derivations that agree with its gold, and its
unlabeled copy keeps every derivation: the tags its parts give tokens (rules/chain.em, CoNLL;
the labels named by the tags, their number the states), the heads its parts attach (rules/dmv.em, PTB trees), the
spans of a tree built by span width crossing no gold bracket (rules/pcfg.em and the built-in
pcfg.em, a partially bracketed corpus), the words a segmentation reads (rules/segment.em, gold
spaces). A program whose parts declare none of these refuses labeled examples, saying why."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.problem import Model, bind
from emc.spec.errors import DataError
from emc.structures.rules.program import evaluate
from helpers import check_against_enumeration, random_params, write_lines
from reference import pcfg_structures, rule_decoded_form, rule_structures

TREES = ["(S (NP (DT the) (NN dog)) (VP (VBZ barks)))", "(S (NP (PRP it)) (VP (VBD saw) (NP (PRP us))))",
         "(S (NP (NNP Kim)) (VP (VBD ran) (ADVP (RB far) (RB away))))"]


def _problem(tmp_path, spec: str, lines: list[str], options: dict, overrides: dict):
    """The lines unlabeled, then the same lines as labeled examples."""
    model = Model.from_text((ROOT / "specs" / spec).read_text(encoding="utf-8"), spec, overrides)
    path = write_lines(tmp_path / "data.txt", lines)
    vocabs: dict = {}
    corpus = model.read(str(path), options, vocabs)
    corpus = corpus.concat(model.read(str(path), options, vocabs), labeled=True)
    return bind(model, corpus, vocabs, options)


def _firings(program, form, n: int, args: dict):
    for name, values in form:
        rule = next(r for r in program.parts if r.name == name)
        yield rule, {"n": n, **args, **dict(zip(rule.params, values))}


def _heads(program, form, n: int, args: dict) -> tuple[int, ...]:
    heads = [-1] * n
    for rule, env in _firings(program, form, n, args):
        if rule.attach is not None:
            dependent, head = rule.attach
            heads[evaluate(dependent, env)] = 0 if head is None else evaluate(head, env) + 1
    return tuple(heads)


def _tags(program, form, n: int, args: dict) -> tuple[int, ...]:
    tags = [-1] * n
    for rule, env in _firings(program, form, n, args):
        if rule.label is not None:
            tags[evaluate(rule.label[1], env)] = env[rule.label[3]]
    return tuple(tags)


def _head_spans(program, form, n: int, args: dict) -> set[tuple[int, int]]:
    spans = set()
    for rule, env in _firings(program, form, n, args):
        positions = program.items[rule.head.name].positions
        if len(positions) == 2:
            spans.add(tuple(evaluate(rule.head.args[d], env) for d in positions))
    return spans


def _words(program, form, n: int, args: dict) -> set[tuple[int, int]]:
    words = set()
    for rule, env in _firings(program, form, n, args):
        for attr in rule.where:
            if attr.kind == "span":
                words.add((evaluate(attr.index, env), evaluate(attr.end, env)))
    return words


def _crosses(span, brackets) -> bool:
    i, j = span
    return any(a < i < b < j or i < a < j < b for a, b in brackets)


def _agree(problem, example: int, form) -> bool:
    """Whether a derivation (its parts, as rule_structures gives them) agrees with the gold."""
    program = problem.model.checked.code_model.structure.program
    n = int(problem.corpus.lengths()[example])
    gold = problem.corpus.gold
    if any(rule.label is not None for rule in program.parts):  # a tag per token, named by the labels
        names = problem.labels[next(iter(problem.labels))]
        return _tags(program, form, n, problem.args) == tuple(names.index(t) for t in gold["tags"].tokens(example))
    if "heads" in gold and any(rule.attach is not None for rule in program.parts):
        return _heads(program, form, n, problem.args) == tuple(gold["heads"][example])
    if program.kind == "width":
        return not any(_crosses(s, gold["brackets"][example]) for s in _head_spans(program, form, n, problem.args))
    starts = [int(i) for i in np.flatnonzero(gold["words"][example])] + [n]
    return _words(program, form, n, problem.args) == set(zip(starts[:-1], starts[1:]))


TAGGED = ["a X\nb Y\na X\n", "b Y\nb X\n", "a Y\nc X\nb Y\n"]
CASES = [
    ("rules/chain.em", TAGGED, {"format": "conll", "gold_column": 2}, {}),
    ("rules/dmv.em", TREES, {"format": "ptb"}, {}),
    ("rules/pcfg.em", TREES, {"format": "ptb"}, {"labels": 2}),
    ("rules/segment.em", ["ab c", "a bca", "abc"], {"gold_spaces": True}, {"maxlen": 3}),
]


@pytest.mark.parametrize("spec, lines, options, overrides", CASES, ids=[c[0] for c in CASES])
def test_a_labeled_example_keeps_the_derivations_agreeing_with_its_gold(tmp_path, spec, lines, options, overrides):
    problem = _problem(tmp_path, spec, lines, options, overrides)
    for seed in (0, 1):
        params = random_params(problem, np.random.default_rng(seed))
        for example in range(problem.n_examples):
            structures = list(rule_structures(problem, example))
            given = [s for s in structures if _agree(problem, example, s[1])]
            if example >= len(lines):  # the labeled copy
                assert 0 < len(given) < len(structures)
                structures = given
            check_against_enumeration(problem, params, example, structures,
                                      lambda decoded: rule_decoded_form(problem, decoded))


def test_the_built_in_pcfg_takes_a_partially_bracketed_corpus(tmp_path):
    """pcfg.em (the span tree with labels, restated as rules): a labeled tree's brackets."""
    problem = _problem(tmp_path, "pcfg.em", TREES, {"format": "ptb"}, {"labels": 2})
    params = random_params(problem, np.random.default_rng(2))
    for example in range(problem.n_examples):
        trees = list(pcfg_structures(problem, example))
        if example >= len(TREES):
            brackets = problem.corpus.gold["brackets"][example]
            trees = [(firings, tree) for firings, tree in trees if not any(_crosses(s, brackets) for s in tree)]
        check_against_enumeration(problem, params, example, trees)


def test_a_program_declaring_no_structure_to_give_refuses_labeled_examples(tmp_path):
    with pytest.raises(DataError, match="label spans of tokens"):
        _problem(tmp_path, "hsmm.em", ["a b", "b a"], {}, {"classes": 2, "maxlen": 2})
