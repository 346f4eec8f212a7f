# One-command environment: `make test` and `make demo` create/refresh .venv first (idempotent:
# each step re-runs only when its inputs changed), then act.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
MSGS := $(wildcard perception_safety/io/msg/vision_msgs/*.msg)
DEMO_OUT ?= demo_out

.PHONY: env test lint demo bench clean help
help:
	@echo "make test   set up .venv (pinned), lint, run the test suite"
	@echo "make demo   set up .venv, run the end-to-end demo on the builtin simulator"
	@echo "make bench  run the benchmarks (prints ratios; see docs/performance.md)"

env: $(VENV)/.stamp-package

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "the pins are resolved for Python 3.11; $(PYTHON) is " + sys.version.split()[0] + " (make PYTHON=python3.11 ...)")'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.stamp-requirements: requirements.txt requirements-nodeps.txt constraints.txt | $(PY)
	$(PIP) install -q pip==25.3
	$(PIP) install -q -r requirements.txt -c constraints.txt
	$(PIP) install -q --no-deps -r requirements-nodeps.txt -c constraints.txt
	@touch $@

$(VENV)/.stamp-system: tools/ensure_system_packages.sh | $(PY)
	tools/ensure_system_packages.sh $(PY)
	@touch $@

$(VENV)/.stamp-vision-msgs: $(VENV)/.stamp-requirements $(VENV)/.stamp-system interfaces/vision_msgs/CMakeLists.txt $(MSGS)
	tools/build_vision_msgs.sh $(VENV) build/vision_msgs
	@touch $@

$(VENV)/.stamp-package: $(VENV)/.stamp-vision-msgs setup.py setup.cfg pyproject.toml
	$(PIP) install -q --no-deps --no-build-isolation -e .
	@touch $@

lint: env
	$(VENV)/bin/ruff check perception_safety tests benchmarks launch

test: env lint
	$(PY) -m pytest -q

demo: env
	$(VENV)/bin/perception-safety demo --out $(DEMO_OUT)

bench: env
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf build $(DEMO_OUT) .pytest_cache
