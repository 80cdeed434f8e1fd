#!/usr/bin/env bash
# Creates .venv-bench/ with the peer queue the benchmarks compare against (PgQueuer 1.6.0 and its
# drivers). A separate venv, so PgQueuer is never a runtime dependency of pgq_thin.
# Usage: bash benchmarks/setup_peers.sh   (idempotent; PYTHON=python3.11 to choose the interpreter)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-bench"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    'pgqueuer==1.6.0' 'asyncpg>=0.29' 'psycopg[binary]>=3.2'
"$venv/bin/python" -c 'import pgqueuer, asyncpg, psycopg; print("pgqueuer", pgqueuer.__version__, "asyncpg", asyncpg.__version__, "psycopg", psycopg.__version__)'
