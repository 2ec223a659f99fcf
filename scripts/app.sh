#!/usr/bin/env bash
# Launch the web app on http://localhost:8501: creates .venv and installs requirements.txt on first use.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv requirements.txt
exec .venv/bin/python -m streamlit run app.py "$@"
