# Sourced by the scripts: create .venv with python3 if missing and install a requirements file into it.
# Usage: ensure_venv requirements-dev.txt
ensure_venv() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$1"
}
