# dualgpu: the two commands of the quick start are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-gpu lint bench fuzz clean

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

# FUZZ_SEEDS: the call-sequence seed range (split it across several `make fuzz` to run them
# in parallel or to resume: make fuzz FUZZ_SEEDS=10000:20000)
FUZZ_SEEDS ?= 0:10000
fuzz: $(STAMP)
	$(PY) -m pytest tests/test_fuzz.py tests/test_compose.py --fuzz-long
	DUALGPU_CALLS_REPORT=$${DUALGPU_CALLS_REPORT:-fuzz-calls-report.txt} \
	$(PY) -m pytest tests/test_call_sequences.py --fuzz-long --calls-seeds=$(FUZZ_SEEDS)

clean:
	rm -rf $(VENV) build *.egg-info
