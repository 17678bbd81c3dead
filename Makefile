# dualgpu: the two commands of the quick start are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-gpu lint bench bench-build fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,lint]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m dualgpu demo

test: $(STAMP)
	$(PY) -m pytest tests

# On the GPU machine the packages are preinstalled: run without a virtual environment.
test-gpu:
	PYTHONPATH=. $(PYTHON) -m pytest -m gpu tests/gpu -rs

lint: $(STAMP)
	$(VENV)/bin/ruff check dualgpu tests examples benchmarks

bench:
	PYTHONPATH=. $(PYTHON) -m benchmarks.run

# CPU only: build time (trace, transform, codegen) against program length, 1k-100k equations.
bench-build:
	PYTHONPATH=. $(PYTHON) -m benchmarks.build_time

fuzz: $(STAMP)
	$(PY) -m pytest tests/test_fuzz.py --fuzz-long

clean:
	rm -rf $(VENV) build *.egg-info
