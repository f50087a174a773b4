# Assay. `make run` starts the product with a demo; `make test` runs the whole suite.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha256sum requirements.lock | cut -c1-16)
ARGS ?=

.PHONY: run test lint format install lock benchmark clean-data

run: install
	$(BIN)/python -m config.stack run

test: install
	$(BIN)/python -m config.stack test $(ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m config.lint_templates
	$(BIN)/python -m config.lint_dead_code
	$(BIN)/python manage.py makemigrations --check --dry-run

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

install: $(STAMP)

$(STAMP): requirements.lock
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements.lock
	@rm -f $(VENV)/.installed-*
	@touch $@

# Re-pin every package, with hashes, after editing pyproject.toml's dependencies.
lock:
	uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 -o requirements.lock

clean-data:
	@echo "Removes .data/ (the embedded databases and demo logins). Stop 'make run' first."
	rm -rf .data
