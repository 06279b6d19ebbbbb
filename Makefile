# bert_tf: `make demo` and `make test` do all the set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_DIR ?= demo_output
export KERAS_BACKEND := tensorflow
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: setup test test-fast demo bench bench-full clean

# Creates .venv, installs the pinned requirements (plus the test extras), then
# bert_tf itself in editable mode (pyproject.toml), so the tools and the tests
# import this clone's package, as they do from the clone directly.
setup: $(VENV)/.installed

# pip runs quiet (-q): a line before each step says what the wait is for.
$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-dev-nodeps.txt pyproject.toml
	@test -x $(PY) || echo "setup: creating the virtual environment $(VENV)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setup: installing the pinned requirements into $(VENV) (a few minutes the first time)"
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-dev-nodeps.txt
	@echo "setup: installing bert_tf into $(VENV) (editable)"
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@
	@echo "setup: done ($(VENV))"

# Test processes side by side (pytest-xdist; a file's tests stay in one process): one
# more than the 2 cores of the reference machine, as some tests wait on the processes
# they start (signals, clusters, kill -9) and a third test process fills that time.
PYTEST_WORKERS ?= 3
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadfile

# The whole suite, differential tests against the original code included (CI runs it);
# the 15 slowest tests are listed at the end.
test: setup
	$(PY) -m pytest -q $(PYTEST_PARALLEL) --durations=15

# The edit loop: without the tests that run the original code or are marked slow
# (processes killed, clusters, installs, exhaustive sweeps).
test-fast: setup
	BERT_TF_TEST_ORACLE=skip $(PY) -m pytest -q $(PYTEST_PARALLEL) -m "not original and not slow" \
	  --durations=10

# The main job end to end on bundled defaults; see README.md.
demo: setup
	bash tools/demo.sh $(PY) $(DEMO_DIR)

# The benchmark suite, quick (about 24 minutes on 2 cores; BENCHMARKS.md). The peers (keras-hub,
# TF Model Garden) go into their own venv, bench/.peers, Hugging Face transformers into
# bench/.hf-peer; `make bench BENCH_FLAGS=--full` or
# `make bench-full` runs the full sizes, for a quiet machine; BENCH_FLAGS="--only forward_bench"
# runs one.
BENCH_FLAGS ?=

bench: setup
	bash bench/setup_peers.sh $(PY)
	bash bench/setup_hf_peer.sh $(PY)
	$(PY) bench/run.py --quick $(BENCH_FLAGS)

bench-full: setup
	bash bench/setup_peers.sh $(PY)
	bash bench/setup_hf_peer.sh $(PY)
	$(PY) bench/run.py --full $(BENCH_FLAGS)

clean:
	rm -rf $(DEMO_DIR) .pytest_cache build dist *.egg-info
