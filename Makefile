# dualgpu: the two commands of the quick start are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-gpu lint bench bench-build bench-cpu fuzz clean op-matrix

$(STAMP): pyproject.toml
	@echo "dualgpu: creating $(VENV) and installing dualgpu with its test and lint tools (first run, about a minute)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,lint]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m dualgpu demo

# the tests, the docstring examples of dualgpu/ (conftest.py sets them up), then the linters
test: $(STAMP)
	$(PY) -m pytest -n auto tests
	$(PY) -m pytest --doctest-modules dualgpu
	$(MAKE) lint

# On the GPU machine the packages are preinstalled: run without a virtual environment
# (a PYTHONPATH already set, e.g. to carried Dask wheels, is kept after the repository).
test-gpu:
	PYTHONPATH=.$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) -m pytest -m gpu tests/gpu -rs

# Fails on any finding (CI runs it through `make test`): ruff, the layers contract of
# docs/architecture.md ([tool.importlinter] in pyproject.toml: imports only go downward), and
# mypy ([tool.mypy]: the package, strict on dualgpu.core and dualgpu.runtime).
lint: $(STAMP)
	$(VENV)/bin/ruff check dualgpu tests examples benchmarks conftest.py
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

bench:
	PYTHONPATH=.$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) -m benchmarks.run $(BENCH_ARGS)

# CPU only: build time (trace, transform, codegen) against program length, 1k-100k equations.
bench-cpu:
	PYTHONPATH=. $(PYTHON) -m benchmarks.cpu

bench-build:
	PYTHONPATH=. $(PYTHON) -m benchmarks.build_time

# The long fuzzing campaigns: random programs (tests/test_fuzz.py), every op's derivatives to
# order 4 on more examples (tests/test_jet.py), and random call sequences
# (tests/test_call_sequences.py). FUZZ_SEEDS is the call-sequence seed range; split it across
# several `make fuzz` to run in parallel or to resume (make fuzz FUZZ_SEEDS=10000:20000);
# DUALGPU_FUZZ_REPORT / DUALGPU_CALLS_REPORT=path write the failures to files.
FUZZ_SEEDS ?= 0:10000
fuzz: $(STAMP)
	$(PY) -m pytest tests/test_fuzz.py tests/test_jet.py tests/test_separability_operands.py --fuzz-long; s1=$$?; \
	$(PY) -m pytest tests/test_call_sequences.py --fuzz-long --calls-seeds=$(FUZZ_SEEDS); \
	s2=$$?; exit $$((s1 || s2))

# docs/op_matrix.md: how each interpreter handles each op (tests/test_op_matrix.py checks it)
op-matrix: $(STAMP)
	$(PY) -m dualgpu.coverage > docs/op_matrix.md

clean:
	rm -rf $(VENV) build *.egg-info
