#!/usr/bin/env bash
# Launch the web app on http://localhost:8501: creates .venv and installs requirements.txt on first use.
# Other Streamlit options pass through, e.g. ./scripts/app.sh --server.port 8600
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv requirements.txt
port=8501
args=("$@")
for i in "${!args[@]}"; do  # the port the user asked for, as --server.port N or --server.port=N
  case "${args[$i]}" in
    --server.port=*) port="${args[$i]#*=}" ;;
    --server.port) port="${args[$((i + 1))]:-$port}" ;;
  esac
done
echo "Starting the LLM GPU memory estimator: open http://localhost:${port} in a browser. Stop it with Ctrl+C."
exec .venv/bin/python -m streamlit run app.py "$@"
