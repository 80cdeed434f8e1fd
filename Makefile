# Development tasks. `make test` sets itself up: it creates .venv when missing and installs the
# package editable with its test extras, then runs pytest over tests/ (an embedded PostgreSQL,
# or the server named by PGQ_TEST_DSN). Pass pytest options with PYTEST_ARGS="-k foo -x".

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
STAMP := $(VENV)/.pgq-thin-installed

.PHONY: test lint venv demo clean

test: $(STAMP)
	$(PY) -m pytest tests $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check pgq_thin tests
	$(VENV)/bin/mypy --strict pgq_thin

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# The demo: uses PGQ_DSN (or libpq's PG* variables) when set, else an embedded PostgreSQL in
# ./.pgq-thin/pgdata; installs the schema, runs a few hundred jobs, prints a summary.
demo: $(STAMP)
	$(VENV)/bin/pgq-thin demo

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache .pgdata-test
