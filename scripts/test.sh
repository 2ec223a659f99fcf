#!/usr/bin/env bash
# Run every test: creates .venv and installs requirements-dev.txt on first use. Extra arguments go to pytest.
# The test files run in parallel, one worker per core (pytest-xdist; a file's tests stay together in one worker,
# so its module and session fixtures are built once there); `-n 0` runs them in this process.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv requirements-dev.txt
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
