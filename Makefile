# The two commands of the README: `make demo` (set up, run the main job) and `make test`
# (set up, run the test suite). Both start from a clean clone; .ci/run calls `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test install generated bench docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# A plain (non-editable) install: the tests run against what users get from `pip install .`.
install: $(BIN)/python
	$(BIN)/python -m pip install --quiet '.[test]'

demo: install
	$(BIN)/emc demo

test: install
	$(BIN)/pytest -q --durations=20

generated: install
	for spec in specs/*.em; do $(BIN)/emc compile $$spec --out-dir generated || exit 1; done
	for spec in specs/rules/*.em; do $(BIN)/emc compile $$spec --out-dir generated/rules || exit 1; done
	$(BIN)/emc compile emc/structures/deptree/chart.em --out-dir emc/structures/deptree

# The headline peer comparison; bench/README.md lists every benchmark and its command.
bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet '.[bench,test]'
	cd bench && NUMBA_NUM_THREADS=1 ../$(BIN)/python hmm_vs_hmmlearn.py

clean:
	rm -rf $(VENV) build *.egg-info runs

# Rewrite the reference section of docs/writing-models.md from the registry (a test checks it).
docs: install
	$(BIN)/python -c "import re, pathlib; from emc.structures.catalog import catalog_markdown as c; \
	p = pathlib.Path('docs/writing-models.md'); t = p.read_text(); \
	p.write_text(re.sub(r'(<!-- begin reference[^\n]*\n).*?(<!-- end reference -->)', lambda m: m.group(1) + c() + '\n' + m.group(2), t, flags=re.S))"
