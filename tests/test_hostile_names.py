"""A spec's names never become code (issue 33): `observed k` once turned into the state loop's `k`.

Every reference spec has its own names (the model, observed and latent variables, blocks, weights,
params) replaced by hostile ones: Python keywords and builtins, every identifier of the generated
code (so every local and constant of the templates), dunders, names in other scripts (with combining
marks, and some that Python's NFKC normalisation rewrites) and 200-character names. The renamed spec
must generate the same code, token for token, its comments and string literals aside, so the same
cached module (a renamed spec never compiles again); and a short fit of it must reach the original's
objective.
"""
from __future__ import annotations

import io
import keyword
import math
import tokenize
import unicodedata
from collections import defaultdict
from pathlib import Path

import pytest
from lark import Token

from conftest import ROOT
from emc.codegen.render import comment_text, render
from emc.runtime.compiled import module_source
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.spec.check import check
from emc.spec.parse import _parser, parse_text
from helpers import tiny_problem

SPECS = sorted((ROOT / "specs").glob("*.em"))
DATA = ROOT / "tests" / "data"
FIXED_FILES = {"interpolate": {"lm": DATA / "interpolate_lm.txt"}}  # a fixed block's table, by block name

# Where a NAME of the grammar is the language's or a structure's word, never one the spec chose:
# an observed variable's kind, the structure, an argument's name and word value, an attribute,
# a function, a smoother or prior, an option's argument.
_FIXED_NAMES = {"observed_item": 1, "latent_decl": 1, "keyword_arg": 0, "word": 0, "attr_step": 0, "call": 0,
                "smooth_option": 0, "prior_option": 0, "named_option_arg": 0, "example_constraint_decl": 1}
_DECLARATIONS = ("model_decl", "observed_item", "latent_decl", "block_decl", "weight_decl", "param_decl", "constraint_decl",
                 "example_constraint_decl", "symmetric_constraint_decl", "sparsity_constraint_decl")
# A structure written as rules names its own things (roles, items, parts, variables, attributes),
# which blocks reach as attribute steps: they stay as written, as a built-in's attribute names do.
_RULE_TREES = {"structure_decl", "keyword_param", "observed_param", "item_decl", "index_decl", "ix_range",
               "ix_name", "axiom_decl", "part_decl", "goal_decl", "item_ref", "for_clause", "var_range",
               "where_clause", "token_attr", "span_attr", "numeric_attr", "label_clause", "attach_clause", "body"}


PARSER = _parser()  # emc's own: its names are normalised as emc reads them


def _spec_name_tokens(text: str) -> tuple[dict[str, str], list[Token]]:
    """The names the spec declares, in order, each with its declaration's kind (`observed_item`,
    `block_decl`, ...), and every token that declares or refers to one."""
    declared: dict[str, Token] = {}
    kinds: dict[str, str] = {}
    candidates = []
    for tree in PARSER.parse(text).iter_subtrees():
        if tree.data in _RULE_TREES:
            continue
        for i, child in enumerate(tree.children):
            if isinstance(child, Token) and child.type == "NAME" and _FIXED_NAMES.get(tree.data) != i:
                candidates.append(child)
                if tree.data in _DECLARATIONS and i == 0:
                    declared.setdefault(str(child), child)
                    kinds.setdefault(str(child), str(tree.data))
    names = sorted(declared, key=lambda name: declared[name].start_pos)
    return {name: kinds[name] for name in names}, [t for t in candidates if str(t) in declared]


def spec_names(text: str) -> list[str]:
    return list(_spec_name_tokens(text)[0])


def renamed(text: str, renaming: dict[str, str]) -> str:
    """The spec with its names replaced (its comments keep the old ones)."""
    _, tokens = _spec_name_tokens(text)
    for token in sorted(tokens, key=lambda t: t.start_pos, reverse=True):
        text = text[:token.start_pos] + renaming[str(token)] + text[token.end_pos:]
    return text


def _code_identifiers() -> set[str]:
    """Every identifier of the generated code of the reference specs (so of every template)."""
    names = set()
    for path in (ROOT / "generated").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        names |= {t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.NAME}
    return names


# The .em language's own keywords, which its grammar refuses as names; `max` only right after `E[`
# (posterior sparsity's `E[max z per x]`), where a latent variable of that name would be read.
EM_KEYWORDS = {"model", "observed", "latent", "multinomial", "weight", "param", "from", "smooth", "prior", "fixed",
               "shares", "features", "l2", "P", "max"}
LONG_NAME = ("x_" * 100)[:200]
# Other scripts: Cyrillic, CJK, Greek, Arabic, Hebrew, Devanagari (spacing and non-spacing marks),
# a combining tilde with no precomposed letter, an e with a combining acute (NFKC: é), a ligature
# and a black-letter capital (NFKC: fi_H), and a 200-character name of several scripts.
LONG_UNICODE_NAME = ("слово_状態_λ\u0303_" * 20)[:200]
UNICODE_NAMES = ["слово", "状態", "λόγος", "كلمة", "שם", "हिन्दी", "q\u0303", "e\u0301tat", "\ufb01_\u210c",
                 LONG_UNICODE_NAME]
BUILTINS = {"len", "range", "min", "max", "sum", "abs", "int", "float", "bool", "str", "list", "tuple", "dict", "set",
            "object", "type", "print", "open", "exec", "eval", "compile", "globals", "locals", "vars", "getattr",
            "super", "iter", "next", "zip", "map", "enumerate", "Exception", "ValueError", "NotImplemented",
            "Ellipsis"}
HOSTILE = sorted((set(keyword.kwlist) | BUILTINS
                  | {"__class__", "__init__", "__name__", "__builtins__", "__import__", "__dict__", "__file__"}
                  | _code_identifiers() | {LONG_NAME} | set(UNICODE_NAMES)) - EM_KEYWORDS)


def code_tokens(source: str) -> list[tuple[int, str]]:
    """The module's tokens but its comments; a string literal as its kind alone."""
    return [(t.type, "<string>" if t.type == tokenize.STRING else t.string)
            for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]


def _structure(spec: Path) -> str:
    return check(parse_text(spec.read_text(encoding="utf-8"), spec.name)).structure.name


def _renamings_by_structure() -> dict[str, list[tuple[Path, dict[str, str]]]]:
    """Every hostile name dealt, in rounds, over the names of a structure's specs: each hostile name
    stands for some name of every structure, and a spec takes each of its rounds' names once."""
    by_structure = defaultdict(list)
    for spec in SPECS:
        by_structure[_structure(spec)].append(spec)
    renamings = {}
    for structure, specs in by_structure.items():
        names = [(spec, name) for spec in specs for name in spec_names(spec.read_text(encoding="utf-8"))]
        rounds = math.ceil(len(HOSTILE) / len(names))
        renamings[structure] = []
        for r in range(rounds):
            dealt: dict[Path, dict[str, str]] = defaultdict(dict)
            for i, (spec, name) in enumerate(names):
                dealt[spec][name] = HOSTILE[(r * len(names) + i) % len(HOSTILE)]
            renamings[structure] += list(dealt.items())
    return renamings


RENAMINGS = _renamings_by_structure()


def test_the_renamings_cover_every_hostile_name_in_every_structure():
    assert {"k", "t", "first", "score", "import", "for", "__class__", "len", "range", "meta", "counts",
            "token_0", "T_0", "size_0", LONG_NAME, LONG_UNICODE_NAME, "状態"} <= set(HOSTILE)
    assert len(LONG_UNICODE_NAME) == 200 and any(unicodedata.combining(c) for c in LONG_UNICODE_NAME)
    # two hostile names are never one name once normalised (a spec would declare it twice)
    assert len({unicodedata.normalize("NFKC", name) for name in HOSTILE}) == len(HOSTILE)
    for structure, renamings in RENAMINGS.items():
        assert {new for _, renaming in renamings for new in renaming.values()} == set(HOSTILE), structure


@pytest.mark.parametrize("structure", sorted(RENAMINGS))
def test_names_change_only_comments_and_strings(structure):
    originals = {}
    for spec, renaming in RENAMINGS[structure]:
        text = spec.read_text(encoding="utf-8")
        if spec not in originals:
            originals[spec] = code_tokens(render(check(parse_text(text, spec.name))))
        model = check(parse_text(renamed(text, renaming), spec.name))
        hostile = render(model)
        compile(hostile, f"{spec.stem}.py", "exec")
        assert code_tokens(hostile) == originals[spec], (spec.stem, renaming)
        # the module a fit loads is the original's, so a renamed spec reuses its machine code
        assert module_source(model)[0] == module_source(check(parse_text(text, spec.name)))[0], (spec.stem, renaming)


def test_the_renaming_renames_declarations_and_references_only():
    text = ("model m\nobserved x : tokens, y : tokens\nlatent a : alignment(y from x, null=yes)\n"
            "param kappa = 0.1\nmultinomial trans : P(a.target | a.source) smooth add(1) l2(kappa)\n"
            "multinomial t2 : P(a.target) shares trans\n")
    assert spec_names(text) == ["m", "x", "y", "a", "kappa", "trans", "t2"]
    renaming = {"m": "k", "x": "import", "y": "len", "a": "score", "kappa": "first", "trans": "t", "t2": "T_0"}
    assert renamed(text, renaming) == (
        "model k\nobserved import : tokens, len : tokens\nlatent score : alignment(len from import, null=yes)\n"
        "param first = 0.1\nmultinomial t : P(score.target | score.source) smooth add(1) l2(first)\n"
        "multinomial T_0 : P(score.target) shares t\n")


def test_a_structure_written_as_rules_names_no_file():
    """A structure the spec writes as rules is named by the spec (`structure tags(...)`), and the
    cached module's file was named after it: a 200-character name in another script was longer than
    a file name may be (OSError: File name too long)."""
    path = ROOT / "specs" / "rules" / "chain.em"
    text = path.read_text(encoding="utf-8")
    assert "structure tags(" in text
    hostile = text.replace("tags(", f"{LONG_UNICODE_NAME}(")
    name = module_source(check(parse_text(hostile, path.name)))[0]
    assert name == module_source(check(parse_text(text, path.name)))[0]
    assert name.startswith("emc_rules_") and name.isascii() and len(name) < 40


def test_unprintable_text_stays_inside_comments():
    """The spec's file name reaches a comment: a newline, quotes, `#`, a NUL, a line separator and
    a lone surrogate there neither end the comment nor break the module."""
    assert comment_text("a\nb\x00\u2028\udc80 \u00e9 '\"#") == "a\\nb\\x00\\u2028\\udc80 \u00e9 '\"#"
    text = (ROOT / "specs" / "hmm.em").read_text(encoding="utf-8")
    source = render(check(parse_text(text, "we\nird '''\"\"\" # \u00e9\u2028\x00\udc80.em")))
    compile(source, "hostile.py", "exec")
    source.encode("utf-8")  # a lone surrogate would not write
    assert code_tokens(source) == code_tokens(render(check(parse_text(text, "hmm.em"))))


# The names the issue saw break a fit as an observed variable's, then others a template uses.
ISSUE_NAMES = ["k", "t", "first", "score", "import", "for", "__class__"]
SEVERE_NAMES = ["len", "range", "theta", "meta", "counts", "token_0", "tokens_0", "size_0", "T_0", "j", "n", "ex",
                LONG_NAME]


def _fit_renaming(index: int, spec: Path) -> dict[str, str]:
    """One renaming per spec for the fit: its observed variables take the issue's names or names in
    other scripts, its other names the templates' or other scripts' (never the same ones), all
    rotated over the specs."""
    kinds = _spec_name_tokens(spec.read_text(encoding="utf-8"))[0]
    observed = [name for name, kind in kinds.items() if kind == "observed_item"]
    others = [name for name in kinds if name not in observed]
    for_observed = ISSUE_NAMES + UNICODE_NAMES[::2]
    for_others = SEVERE_NAMES + UNICODE_NAMES[1::2]
    renaming = {name: for_observed[(index + i) % len(for_observed)] for i, name in enumerate(observed)}
    renaming |= {name: for_others[(3 * index + i) % len(for_others)] for i, name in enumerate(others)}
    return renaming


def test_the_fits_give_every_unicode_name_to_some_spec():
    dealt = {name for index, spec in enumerate(SPECS) for name in _fit_renaming(index, spec).values()}
    assert set(UNICODE_NAMES) <= dealt


def _objective(tmp_path: Path, text: str, fixed: dict[str, Path]) -> float:
    tmp_path.mkdir()
    options = {"fixed": {block: str(path) for block, path in fixed.items()}} if fixed else None
    problem = tiny_problem(tmp_path, text, options)
    # a symmetry constraint ties two directions, which only `emc fit`'s joint fit trains; one
    # direction of its spec (its module, every other name) fits with the constraints off
    constraints = "off" if problem.model.checked.symmetric is not None else "on"
    settings = FitSettings(iterations=2, tolerance=0, eval_every=0, seed=7, threads=1, constraints=constraints)
    return fit(problem, settings).objective


@pytest.mark.parametrize("index,spec", list(enumerate(SPECS)), ids=[p.stem for p in SPECS])
def test_a_renamed_spec_fits_to_the_same_objective(tmp_path, index, spec):
    text = spec.read_text(encoding="utf-8")
    renaming = _fit_renaming(index, spec)
    fixed = FIXED_FILES.get(spec.stem, {})
    original = _objective(tmp_path / "original", text, fixed)
    hostile = _objective(tmp_path / "renamed", renamed(text, renaming),
                         {renaming[block]: path for block, path in fixed.items()})
    assert math.isfinite(original)
    assert math.isclose(hostile, original, rel_tol=1e-12), (renaming, hostile, original)
