"""Serving engines: each engine's own memory accounting, from its source (issue 13).

    >>> import estimator as est
    >>> from estimator.engines import ServeScenario, serve
    >>> r = serve(ServeScenario(est.model("Qwen/Qwen3-8B").architecture, engine="vllm", gpu="h100-sxm"))
    >>> r.kv_cache_tokens > 0
    True

`serve(s)` -> ServeReport (bytes per GPU by component, KV-cache tokens, maximum concurrency, the start-up lines
the engine would log, its refusal text); `import_command(text)` reads an engine's command line into a scenario.
"""

from __future__ import annotations

from dataclasses import replace

from . import transformers, vllm
from .base import ENGINE_COMPONENTS, ENGINES, REFUSAL, ServeReport, ServeScenario
from .command import ImportedCommand, parse_command

MODULES = {"vllm": vllm, "transformers": transformers}
for _name, _module in (("sglang", "sglang"), ("llama.cpp", "llama_cpp"), ("ollama", "ollama")):
    try:  # engines land one by one; an engine without its module is refused by `serve`
        MODULES[_name] = __import__(f"{__name__}.{_module}", fromlist=["estimate"])
    except ImportError:
        pass


def serve(s: ServeScenario) -> ServeReport:
    """The start-up report of `s.engine` for scenario `s`."""
    if s.engine not in MODULES:
        raise ValueError(f"engine {s.engine!r} is not modelled yet; choose one of {', '.join(MODULES)}")
    return MODULES[s.engine].estimate(s)


def launch_command(s: ServeScenario) -> str:
    """The engine's own command line for `s`."""
    return MODULES[s.engine].command(s) if s.engine in MODULES else ""


def import_command(text: str) -> ImportedCommand:
    """The engine, model and options of an engine command line (unknown options listed in `ignored`)."""
    return parse_command(text, {name: m for name, m in MODULES.items() if m.PROGRAMS})


def apply_command(s: ServeScenario, imported: ImportedCommand) -> ServeScenario:
    """`s` with the engine and the options of an imported command (the model is the caller's to resolve)."""
    return replace(s, engine=imported.engine, **dict(imported.fields))


__all__ = ["ENGINES", "ENGINE_COMPONENTS", "REFUSAL", "ImportedCommand", "ServeReport", "ServeScenario",
           "apply_command", "import_command", "launch_command", "serve"]
