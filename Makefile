# The two commands of the course (README.md): `make build` and `make test`.
# Each sets everything up in .venv/ first, so a fresh clone needs nothing but Python 3.10+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build that CI uses; on a GPU machine an already installed torch is kept.
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup build lint test test-fast docs clean

setup: $(VENV)/.installed
	@scripts/setup_system.sh
	@scripts/fetch_data.sh

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev,instructor,docs]"
	touch $@

# Seconds one notebook cell may run in `course build` and `course slides`; on a slow machine,
# `make build CELL_TIMEOUT=1800` (or COURSE_PROFILE=smoke for a dry run).
CELL_TIMEOUT ?= 900

# A notebook that fails or times out is its row in the table; the later steps still run, and the
# build exits non-zero at the end.
build: setup
	status=0; \
	$(BIN)/course build --cell-timeout $(CELL_TIMEOUT) || status=1; \
	$(BIN)/course slides --cell-timeout $(CELL_TIMEOUT) || status=1; \
	$(BIN)/course sample --jobs 2 || status=1; \
	exit $$status

# Unused and undefined names, long lines (pyproject.toml's [tool.ruff]).
lint: setup
	$(BIN)/ruff check .

# --dist loadgroup keeps each xdist_group (one Chromium, one JupyterLab) on one worker.
test: lint
	$(BIN)/python -m pytest -n 2 --dist loadgroup

# The loop while editing: everything but the tests marked notebook, browser or slow.
test-fast: lint
	$(BIN)/python -m pytest -n 2 -m "not notebook and not browser and not slow"

# The guides as an offline site (Sphinx with MyST, docs/conf.py): build/docs/index.html, with search.
# Any warning (a broken cross-reference, a missing image) fails the build; --keep-going lists them all.
docs: $(VENV)/.installed
	$(BIN)/sphinx-build -W --keep-going -q -b html docs build/docs

clean:
	rm -rf $(VENV) build runs gradebook.db
