"""Layering: the `estimator` core uses the Python standard library only, and never the app or the tracing harness.

The app (app.py, views/, ui/) and the validation package (validation/) sit on top of the core; the core must
not reach up into them, nor into their third-party stacks (streamlit, plotly, pandas, torch, transformers,
peft). Two checks: every core module is imported in a `python -S -I` subprocess (no site-packages, so any
third-party import fails), and every core source file is parsed so imports inside functions count too.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORE = REPO / "estimator"
# the upper layers of this repository and the third-party stacks they bring
UPPER_LAYERS = {"ui", "views", "app", "validation"}
APP_AND_TRACING_STACKS = {"streamlit", "plotly", "pandas", "torch", "transformers", "peft", "accelerate"}


def _core_modules(path: Path = CORE, prefix: str = "estimator") -> list[str]:
    """Every module of the package, found on disk with pkgutil (nothing is imported)."""
    names = [prefix]
    for info in pkgutil.iter_modules([str(path)]):
        name = f"{prefix}.{info.name}"
        names.extend(_core_modules(path / info.name, name) if info.ispkg else [name])
    return names


def _core_files() -> list[Path]:
    return sorted(p for p in CORE.rglob("*.py") if "__pycache__" not in p.parts)


# Run with `python -S -I`: no site module (so no site-packages), no PYTHONPATH, no current directory on the
# path. Only the standard library and the repository root (inserted first) can be imported. estimator.__main__
# would run the CLI when imported, so it is run as `python -m estimator gpus --json` would run it.
_IMPORT_ALL = r"""
import contextlib, importlib, io, json, runpy, sys
repo, modules = sys.argv[1], sys.argv[2:]
sys.path.insert(0, repo)
failures = {}
leaked = [p for p in sys.path if "site-packages" in p or "dist-packages" in p]
if leaked:
    failures["<sys.path>"] = f"site-packages on the path: {leaked}"
for name in modules:
    try:
        if name.endswith(".__main__"):
            sys.argv = [name, "gpus", "--json"]
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    runpy.run_module(name.rsplit(".", 1)[0], run_name="__main__", alter_sys=True)
                except SystemExit as done:
                    if done.code not in (0, None):
                        raise RuntimeError(f"exit code {done.code}") from None
        else:
            importlib.import_module(name)
    except BaseException as err:
        failures[name] = f"{type(err).__name__}: {err}"
foreign = sorted({m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names) - {"estimator", "__main__"})
print(json.dumps({"failures": failures, "foreign": foreign}))
"""


def test_every_core_module_imports_without_site_packages():
    modules = _core_modules()
    assert {"estimator", "estimator.cli", "estimator.__main__", "estimator.catalog"} <= set(modules)
    proc = subprocess.run([sys.executable, "-S", "-I", "-c", _IMPORT_ALL, str(REPO), *modules],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    failures = "\n".join(f"  {name}: {why}" for name, why in report["failures"].items())
    assert not report["failures"], (
        f"core modules that do not import with the standard library only (python -S -I):\n{failures}")
    # under -S third-party imports fail above; what the repository root could still supply (ui, validation...)
    assert not report["foreign"], f"importing the core loaded non-standard-library modules: {report['foreign']}"


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import in a file, at any depth (functions, try blocks), and
    of importlib.import_module("...") / __import__("...") with a literal name. Relative imports are skipped."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            found.append((node.lineno, node.args[0].value.split(".")[0]))
    return found


def _violations(allowed) -> list[str]:
    return [f"  {path.relative_to(REPO)}:{line}: imports {name}"
            for path in _core_files() for line, name in _imports(path) if not allowed(name)]


def test_core_does_not_import_the_app_or_the_validation_package():
    forbidden = UPPER_LAYERS | APP_AND_TRACING_STACKS
    bad = _violations(lambda name: name not in forbidden)
    assert not bad, "the estimator core imports the app / validation layers or their stacks:\n" + "\n".join(bad)


# Optional packages the core may import inside the one function that needs them (the core still imports without
# them, test_every_core_module_imports_without_site_packages): the Hub path reads models with huggingface_hub
# (issue 16) and says how to install it when it is missing.
OPTIONAL_IMPORTS = {("estimator/hub.py", "huggingface_hub")}


def test_core_imports_only_the_standard_library():
    # the -S subprocess cannot see imports inside functions; this catches them
    bad = [line for line in _violations(lambda name: name in sys.stdlib_module_names or name == "estimator")
           if not any(line.strip().startswith(path + ":") and line.endswith(f"imports {name}")
                      for path, name in OPTIONAL_IMPORTS)]
    assert not bad, "the estimator core imports beyond the standard library:\n" + "\n".join(bad)


def test_the_static_check_sees_imports_inside_functions(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import json\nfrom . import units\n\ndef f():\n    import validation.trace\n"
                      "    from pandas import DataFrame\n    return importlib.import_module('ui.forms')\n")
    assert _imports(sample) == [(1, "json"), (5, "validation"), (6, "pandas"), (7, "ui")]
