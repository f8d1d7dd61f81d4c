"""Brute force over word alignments: every alignment of a small sentence pair as its factor firings."""
from __future__ import annotations

import itertools
from pathlib import Path

from conftest import ROOT
from emc.runtime.problem import Problem

NULL = -1


def spec_copy(folder: Path, spec: str) -> str:
    """specs/SPEC as folder/test.em: the CLI then compiles the same module as the API tests'
    problem_from_lines (named after test.em), so the suite compiles it once."""
    path = folder / "test.em"
    path.write_text((ROOT / "specs" / spec).read_text())
    return str(path)


def jump_bucket(jump: int, maxjump: int) -> int:
    return min(max(jump, -maxjump), maxjump) + maxjump


def shared_by(previous: int, l: int, jump: int, maxjump: int) -> int:
    """How many source positions the jump's bucket reaches from `previous` (1 unless it is an
    end bucket), counted one by one."""
    bucket = jump_bucket(jump, maxjump)
    if 0 < bucket < 2 * maxjump:
        return 1
    return sum(1 for i in range(l) if jump_bucket(i - previous, maxjump) == bucket)


def alignments(problem: Problem, example: int, blocks: dict[str, str]) -> list[tuple[list, tuple]]:
    """Every alignment of the example (each target word to a source position or NULL) as
    (its firings, the tuple of linked positions, NULL = -1). A firing 1/n (a number) shares an
    end jump bucket among the n positions it reaches. `blocks` names the spec's blocks by
    kind: "trans" P(a.target | a.source), "reverse" P(a.source.prefix(1) | a.target), "prior"
    P(a.source), "jump" P(a.jump), "weight" a weight over a.jump."""
    args = problem.args
    null, maxjump = int(args["null"]), args["maxjump"]
    e = [int(i) for i in problem.corpus.fields["e"].example(example)]
    f = [int(j) for j in problem.corpus.fields["f"].example(example)]
    null_e = len(problem.vocabs["vocab:e"])
    prefix = problem.vocabs.get("vocab:e.prefix(1)")
    if prefix is not None:
        words = problem.vocabs["vocab:e"].values
        e_prefix = [prefix.index[words[i][:1]] for i in e]
    choices = list(range(len(e))) + ([NULL] if null else [])
    out = []
    for links in itertools.product(choices, repeat=len(f)):
        firings = []
        previous = -1
        for j, i in enumerate(links):
            if "trans" in blocks:
                firings.append((blocks["trans"], null_e if i == NULL else e[i], f[j]))
            if "reverse" in blocks:
                firings.append((blocks["reverse"], f[j], len(prefix) if i == NULL else e_prefix[i]))
            if "prior" in blocks:
                firings.append((blocks["prior"], 0, null_e if i == NULL else e[i]))
            bucket = 2 * maxjump + 1 if i == NULL else jump_bucket(i - previous, maxjump)
            for kind in ("jump", "weight"):
                if kind in blocks:
                    firings.append((blocks[kind], 0, bucket))
            if i != NULL and args["jump"]:
                firings.append(1.0 / shared_by(previous, len(e), i - previous, maxjump))
            if i != NULL:
                previous = i
        out.append((firings, tuple(links)))
    return out
