#!/usr/bin/env bash
# Run every test: creates .venv and installs requirements-dev.txt on first use. Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv requirements-dev.txt
exec .venv/bin/python -m pytest "$@"
