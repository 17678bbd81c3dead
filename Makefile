# dualgpu: the two commands of the quick start are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BASE   := $(VENV)/.installed-package

.PHONY: demo test test-gpu lint bench bench-peers bench-build bench-cpu fuzz clean op-matrix dist coverage

# the package alone (what `make demo` needs); $(STAMP) adds the test and lint tools.
# --no-compile: Python compiles the modules a run imports, not all of SciPy's, Dask's, mypy's
# (22 -> 12 s for the test and lint tools from pip's cache)
$(BASE): pyproject.toml
	@echo "dualgpu: creating $(VENV) and installing dualgpu (first run, about 20 s)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-compile --upgrade pip
	$(PY) -m pip install -q --no-compile -e .
	touch $(BASE)

$(STAMP): $(BASE)
	@echo "dualgpu: installing the test and lint tools into $(VENV)"
	$(PY) -m pip install -q --no-compile -e '.[test,lint]'
	touch $(STAMP)

demo: $(BASE)
	$(PY) -m dualgpu demo

# the tests under line coverage (slipcover: the figure and the floor below), the docstring
# examples of dualgpu/ (conftest.py sets them up), the linters, then the built wheel
test: $(STAMP)
	$(COVERED_TESTS)
	@$(PY) -c "$$COVERAGE_CHECK" $(COVERAGE_JSON) $(COVERAGE_FLOOR)
	$(PY) -m pytest --doctest-modules dualgpu
	$(MAKE) lint
	$(MAKE) dist

# Line coverage of dualgpu/ by the CPU suite (CI's, through `make test`), measured by slipcover:
# it instruments the bytecode and removes each probe once its line has run, so the suite runs
# near its speed (coverage.py's tracer costs 2.6x on Python 3.11, over CI's budget). Every
# module counts, the never-imported too; the CuPy-only ones run partly (dualgpu/backends/:
# 65-90 %), dualgpu/__main__.py only in the CLI tests' subprocesses (0 %): 93.5-94.4 % in all
# on 2026-12-05 (one run missed a worker's figure for one module, the demo: 0.9 points), hence
# the floor. pytest-xdist's workers write their coverage for the controller (slipcover's pytest
# plugin). slipcover's own --fail-under is not used with -m pytest: in 1.1.0 it consumes the
# workers' data before the report is written, which then shows the controller's alone (25 %);
# the figure is checked from the report instead.
# `make coverage`: the same run, then the lines not covered, by file.
COVERAGE_FLOOR := 92
COVERAGE_JSON  := build/coverage.json
# glibc's allocator gives freed memory back to the kernel and faults it in again at the next
# allocation, page by page: in the examples' training loops that was a third of their CPU time
# (21 s of system time in 62 s; 2 s with these settings, which keep freed memory in the process).
MALLOC_ENV := MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_TOP_PAD_=67108864 MALLOC_MMAP_THRESHOLD_=67108864
COVERED_TESTS   = mkdir -p build && $(MALLOC_ENV) $(PY) -m slipcover --source dualgpu --json --out $(COVERAGE_JSON) \
    -m pytest -n auto \
    -W "ignore:Module already imported so cannot be rewritten; slipcover:pytest.PytestAssertRewriteWarning" tests
define COVERAGE_CHECK
import json, sys
percent, floor = json.load(open(sys.argv[1]))["summary"]["percent_covered"], float(sys.argv[2])
print(f"dualgpu: line coverage of the package {percent:.1f} % (floor {floor:g} %, make coverage for the lines)")
sys.exit(0 if percent >= floor else f"dualgpu: line coverage {percent:.1f} % is under the floor {floor:g} %")
endef
export COVERAGE_CHECK

coverage: $(STAMP)
	$(COVERED_TESTS)
	$(PY) -m slipcover --merge $(COVERAGE_JSON) --json --out $(COVERAGE_JSON) --skip-covered --missing-width 60
	@$(PY) -c "$$COVERAGE_CHECK" $(COVERAGE_JSON) $(COVERAGE_FLOOR)

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

# Issue 40's table: every workload with its peers (folx, jet-for-pytorch, JAX, asdex,
# curvlinops: installed from the git-ignored .wheels/ at first use) in one process; writes
# benchmarks/peer/results/peers-<time>.{md,json,log} (BENCH_ARGS="--quick --write-docs").
bench-peers:
	PYTHONPATH=.$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) -m benchmarks.side_by_side $(BENCH_ARGS)

# CPU only: build time (trace, transform, codegen) against program length, 1k-100k equations.
bench-cpu:
	PYTHONPATH=. $(PYTHON) -m benchmarks.cpu

bench-build:
	PYTHONPATH=. $(PYTHON) -m benchmarks.build_time

# The long fuzzing campaigns: random programs (tests/fuzz/test_fuzz.py), every op's derivatives to
# order 4 on more examples (tests/ops/test_jet.py), and random call sequences
# (tests/runtime/test_call_sequences.py). FUZZ_SEEDS is the call-sequence seed range; split it across
# several `make fuzz` to run in parallel or to resume (make fuzz FUZZ_SEEDS=10000:20000);
# DUALGPU_FUZZ_REPORT / DUALGPU_CALLS_REPORT=path write the failures to files.
FUZZ_SEEDS ?= 0:10000
fuzz: $(STAMP)
	$(PY) -m pytest tests/fuzz/test_fuzz.py tests/ops/test_jet.py tests/transforms/test_separability_operands.py --fuzz-long; s1=$$?; \
	$(PY) -m pytest tests/runtime/test_call_sequences.py --fuzz-long --calls-seeds=$(FUZZ_SEEDS); \
	s2=$$?; exit $$((s1 || s2))

# docs/op_matrix.md: how each interpreter handles each op (tests/ops/test_op_matrix.py checks it)
op-matrix: $(STAMP)
	$(PY) -m dualgpu.tools.op_matrix > docs/op_matrix.md

# The sdist and the wheel (dist/), checked by twine; then the wheel, and the checkout itself
# (non-editable), each installed in a fresh virtual environment (their dependencies read
# from .venv's, no download) and imported from outside the checkout. Part of `make test`:
# built without an isolated environment (the test tools hold the build-system's setuptools)
# and installed by .venv's pip into environments made without pip, about 10 s in all.
CHECK_INSTALL = import dualgpu, numpy as np, os; \
    assert 'site-packages' in dualgpu.__file__, dualgpu.__file__; \
    print('dualgpu', dualgpu.__version__, 'from', os.path.dirname(dualgpu.__file__), \
          dualgpu.grad(lambda x: np.sum(x ** 2))(np.ones(2)), dualgpu.testing.strategies)
dist: $(STAMP)
	rm -rf dist build/dist-venv build/src-venv && mkdir -p build
	$(PY) -m build --no-isolation --outdir dist . > build/dist.log 2>&1 || { cat build/dist.log; exit 1; }
	$(PY) -m twine check --strict dist/*
	for v in dist-venv src-venv; do \
	    $(PYTHON) -m venv --without-pip build/$$v && \
	    $(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
	        "$$(build/$$v/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/deps.pth" \
	    || exit 1; done
	$(PY) -m pip --python build/dist-venv/bin/python install -q --no-deps dist/*.whl
	$(PY) -m pip --python build/src-venv/bin/python install -q --no-deps --no-build-isolation .
	cd /tmp && $(CURDIR)/build/dist-venv/bin/python -c "$(CHECK_INSTALL)"
	cd /tmp && $(CURDIR)/build/src-venv/bin/python -c "$(CHECK_INSTALL)"

clean:
	rm -rf $(VENV) build dist *.egg-info
