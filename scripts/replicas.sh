#!/usr/bin/env bash
# Run N replicas of the web app behind nginx with sticky sessions, without Docker: scripts/replicas.sh [N] [PORT]
# (default 4 replicas on http://127.0.0.1:8080). Needs Debian's nginx: apt-get install -y nginx.
# Creates .venv and installs requirements.txt on first use; Ctrl-C stops nginx and every replica.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv requirements.txt
exec .venv/bin/python deploy/replicas.py --replicas "${1:-4}" --port "${2:-8080}"
