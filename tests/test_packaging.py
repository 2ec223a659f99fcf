"""`pip install .` in a fresh virtual environment installs the core with no dependencies and `llm-memory`.

The repository is copied to a temporary folder first (setuptools writes build/ and *.egg-info into the source
tree). pip builds the package as it would for a user: in an isolated build environment, with setuptools (the
build backend named in pyproject.toml) from the configured package index or pip's cache. About 20 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DIST = "llm-gpu-memory-estimator"
# what is not copied: environments, caches, and what a build leaves behind
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", "venv", ".hypothesis", ".pytest_cache", "__pycache__", "*.pyc",
                                    "build", "dist", "*.egg-info", "artifacts", "node_modules")

try:
    import ensurepip  # noqa: F401  (Debian's python3 without python3-venv lacks it)
    import venv
except ImportError:  # pragma: no cover
    venv = None

pytestmark = pytest.mark.skipif(venv is None, reason="the venv module (with ensurepip) is not available")


def _run(args, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONSAFEPATH")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, args))} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _build_outputs():
    return sorted(str(p.relative_to(REPO)) for pattern in ("build", "dist", "*.egg-info", "estimator/*.egg-info")
                  for p in REPO.glob(pattern))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, an unrelated working directory) after `pip install .` of a copy of the repository."""
    root = tmp_path_factory.mktemp("packaging")
    before = _build_outputs()
    source = root / "source"
    shutil.copytree(REPO, source, ignore=NOT_COPIED, symlinks=True)
    env_dir = root / "venv"
    _run([sys.executable, "-m", "venv", env_dir], cwd=root)
    _run([env_dir / "bin" / "python", "-m", "pip", "install", "--quiet", "."], cwd=source)
    assert _build_outputs() == before, "the install left build outputs in the working tree"
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return env_dir, elsewhere


def test_llm_memory_prints_the_reference_inference_table(installed):
    env_dir, elsewhere = installed
    data = json.loads(_run([env_dir / "bin" / "llm-memory", "inference", "--params", "7", "--json"], cwd=elsewhere))
    assert data["rows"][0]["scenario"] == "16-bit" and data["rows"][0]["total_bytes"] == 18_800_000_000
    assert [round(r["total_bytes"] / 1e9, 1) for r in data["rows"]] == [18.8, 11.8, 8.3]


def test_python_m_estimator_runs_the_installed_copy_with_its_data(installed):
    env_dir, elsewhere = installed
    python = env_dir / "bin" / "python"
    location = _run([python, "-c", "import estimator; print(estimator.__file__)"], cwd=elsewhere).strip()
    assert Path(location).is_relative_to(env_dir), location
    models = json.loads(_run([python, "-m", "estimator", "models", "--json"], cwd=elsewhere))
    gpus = json.loads(_run([python, "-m", "estimator", "gpus", "--json"], cwd=elsewhere))
    assert len(models) > 10 and any(m["id"] == "meta-llama/Llama-2-7b-hf" for m in models)
    assert len(gpus) > 10
    # the console command and the module are the same CLI
    assert (_run([env_dir / "bin" / "llm-memory", "models", "--json"], cwd=elsewhere)
            == _run([python, "-m", "estimator", "models", "--json"], cwd=elsewhere))


_INSTALLED = r"""
import json
from importlib import metadata
dist = metadata.distribution("llm-gpu-memory-estimator")
print(json.dumps({
    "distributions": sorted(d.metadata["Name"].lower() for d in metadata.distributions()),
    "requires": dist.requires or [],
    "files": [f.as_posix() for f in dist.files],
}))
"""


def test_the_core_installs_alone_with_no_dependencies(installed):
    env_dir, elsewhere = installed
    info = json.loads(_run([env_dir / "bin" / "python", "-c", _INSTALLED], cwd=elsewhere))
    assert set(info["distributions"]) == {DIST, "pip", "setuptools"}
    # the extras are optional: nothing is required without them
    assert all("extra ==" in r for r in info["requires"]), info["requires"]
    assert {r.split("=")[0].split(";")[0].strip() for r in info["requires"]} >= {"streamlit", "torch"}
    # only the estimator package (with its data) and the metadata; not ui/, views/, validation/, tests/...
    top = {f.split("/")[0] for f in info["files"] if not f.startswith("..")}
    assert top == {"estimator", "llm_gpu_memory_estimator-0.1.0.dist-info"}, top
    assert {"estimator/data/models.json", "estimator/data/gpus.json", "estimator/cli.py"} <= set(info["files"])
