# The two commands of the course (README.md): `make build` and `make test`.
# Each sets everything up in .venv/ first, so a fresh clone needs nothing but Python 3.10+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build that CI uses; on a GPU machine an already installed torch is kept.
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup build test clean

setup: $(VENV)/.installed
	@scripts/setup_system.sh

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

build: setup
	$(BIN)/course build
	$(BIN)/course slides
	$(BIN)/course sample --jobs 2

test: setup
	$(BIN)/python -m pytest -n 2

clean:
	rm -rf $(VENV) build runs gradebook.db
