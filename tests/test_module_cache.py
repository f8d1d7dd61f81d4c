"""The generated module's cache name hashes the emc code it depends on and nothing else: an edit to
another structure (emc/structures/rules/, the DMV's DP) keeps a cached HMM and its machine code, an
edit to the chain's DP or the ABI gives it a new name (so numba never serves stale machine code)."""
from __future__ import annotations

from pathlib import Path

import emc
from conftest import ROOT
from emc.codegen import render
from emc.runtime import compiled
from emc.runtime.problem import Model

EMC = Path(emc.__file__).resolve().parent  # the package imported: installed (CI, plain pip install) or the clone


def hmm_source() -> str:
    return compiled.module_source(Model.from_text((ROOT / "specs" / "hmm.em").read_text(), "hmm.em").checked)[1]


def test_the_hash_covers_what_the_module_imports_transitively():
    files = {path.relative_to(EMC).as_posix() for path in compiled._imported_files(hmm_source())}
    assert {"codegen/abi.py", "structures/chain/dp.py", "structures/semiring.py", "structures/sampling.py"} <= files
    assert not any(f.startswith(("structures/rules/", "structures/deptree/", "runtime/")) for f in files), files


def test_an_edit_changes_the_name_only_of_modules_that_depend_on_it(monkeypatch):
    source = hmm_source()
    before = compiled.emc_fingerprint(source)
    edited = {EMC / "structures" / "deptree" / "dp.py", EMC / "structures" / "rules" / "program.py"}
    read = compiled._file_bytes
    monkeypatch.setattr(compiled, "_file_bytes", lambda path: read(path) + (b"\n# edited" if path in edited else b""))
    assert compiled.emc_fingerprint(source) == before
    edited.add(EMC / "structures" / "chain" / "dp.py")
    assert compiled.emc_fingerprint(source) != before


def test_specs_that_differ_only_in_names_share_one_module():
    """Block, model and variable names reach the generated code only in its comments and in the
    names of its packed arrays (ARRAYS), which the cached module leaves to the model's CodeLayout."""
    hmm = (ROOT / "specs" / "hmm.em").read_text()
    renamed = ("model tagger\nobserved words : tokens\nlatent tags : chain(words, states=45)\n"
               "multinomial moves : P(tags | tags.prev)\nmultinomial says : P(words | tags)\n")
    model = Model.from_text(renamed, "tagger.em")
    name, source = compiled.module_source(model.checked)
    assert not any(word in source for word in ("words", "tags", "moves", "says", "ARRAYS"))
    assert name == compiled.module_source(Model.from_text(hmm, "hmm.em").checked)[0]
    assert model.code_layout.arrays[-1] == "tokens:words"
    compile(source, name, "exec")


def test_the_templates_bytecode_is_kept_in_the_cache():
    """A warm start renders the module's source (its name hashes it) without compiling the
    templates again: jinja keeps their bytecode in emc's cache folder."""
    hmm_source()
    cache = render._environment().bytecode_cache  # made on the process's first render
    assert cache is not None and list(Path(cache.directory).glob("__jinja2_*.cache"))
