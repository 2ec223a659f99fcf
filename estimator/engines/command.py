"""Reading an engine's own command line (`vllm serve org/model --tensor-parallel-size 4 ...`) into scenario fields.

Each engine module declares how its command is recognised (`PROGRAMS`, the words it starts with), which options
carry the model (`MODEL_FLAGS`), and which options map to which `ServeScenario` field (`FLAGS`: option -> (field,
parser of its value; a parser may return a dict of several fields); `SWITCHES`: option without a value -> (field,
value); `REPEATABLE`: text fields a repeated option adds to, comma-separated; `BARE_VALUES`: options that older
releases took without a value -> (field, value) when no value follows). `ENV` maps the environment variables
an engine reads (`OLLAMA_NUM_PARALLEL=4 ollama run ...`). Options no engine table knows are kept in `ignored` and
reported, never an error: users paste whole production commands.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

MAX_COMMAND_CHARS = 20_000


@dataclass(frozen=True)
class ImportedCommand:
    engine: str
    model: str  # the model as the command names it ("" when it does not)
    fields: tuple[tuple[str, object], ...]  # ServeScenario field -> value
    ignored: tuple[str, ...]  # options read but not modelled


# A GGUF file's type as llama.cpp's file names end (Qwen3-8B-Q4_K_M.gguf, Llama-3.1-8B-Instruct.IQ4_XS.gguf)
GGUF_TYPE = re.compile(r"[-._](i?q\d(?:_[a-z0-9]+)*|f16|bf16|f32)$", re.IGNORECASE)
GGUF_SHARD = re.compile(r"-\d{5}-of-\d{5}$")
PACKAGING_WORDS = re.compile(r"-(gguf|ud)\b", re.IGNORECASE)  # words of a GGUF repo or file that name no model
OLLAMA_DEFAULT_TYPE = "q4_k_m"  # the type of an Ollama library tag that names none (ollama.com/library pages)


def model_reference(name: str, engine: str = "") -> tuple[str, str | None]:
    """(catalog id, weight format) of the model a command names: a Hub id, a GGUF file (its type read from the name:
    'models/Qwen3-8B-Q4_K_M.gguf' -> ('Qwen/Qwen3-8B', 'q4_k_m')) or an Ollama tag ('qwen3:8b' -> Qwen3 8B at
    Ollama's default Q4_K_M); ('', None) when the catalog has no such model."""
    from .. import catalog
    from ..formats import WEIGHT_FORMATS

    text, kind = str(name).strip(), None
    if text.lower().endswith(".gguf"):
        text = GGUF_SHARD.sub("", text.rsplit("/", 1)[-1][:-5])
    if engine == "ollama" and ":" in text:
        family, tag = text.rsplit(":", 1)
        text, kind = f"{family}-{tag}", OLLAMA_DEFAULT_TYPE
    found = GGUF_TYPE.search(text)
    if found:
        text, kind = text[:found.start()], found.group(1).lower()
    kind = "bf16" if kind in ("f16", "bf16") else (kind if kind in WEIGHT_FORMATS else None)
    text = PACKAGING_WORDS.sub("", text)  # unsloth/Qwen3-30B-A3B-GGUF, DeepSeek-R1-UD-IQ1_S
    spaced = re.sub(r"^(?:[^/]*/)?([a-z]+)(\d)", r"\1-\2", text, flags=re.IGNORECASE)  # llama3.1-8b -> llama-3.1-8b
    for candidate in (text, spaced, re.sub(r"^(?:[^/]*/)?meta-", "", text, flags=re.IGNORECASE)):
        try:
            return catalog.model(candidate).id, kind
        except ValueError:
            continue
    return "", kind


def choice_of(table: dict, what: str) -> Callable[[str], object]:
    """The parser of an option whose words map to scenario values (`--kv-cache-dtype fp8_e4m3` -> 'fp8'), any case;
    ValueError listing the words otherwise."""
    def parse(text: str) -> object:
        if text.lower() not in table:
            raise ValueError(f"{what} {text!r} is not one of {', '.join(table)}")
        return table[text.lower()]
    return parse


def human_int(text: str) -> int:
    """An integer as vLLM's `human_readable_int` reads it: 32768, 32k (x1000), 32K (x1024), 1M, 1m, 2G."""
    text = text.strip()
    units = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}
    try:
        if text and text[-1] in units:
            return round(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None


def _names(word: str, program: str) -> bool:
    """Whether a command word is `program`: by path (/usr/bin/llama-server) or as an image (vllm/vllm-openai:v0.11)."""
    last = word.rsplit("/", 1)[-1]
    return last == program or last.startswith(program + ":")


def _engine_of(words: list[str], modules: dict) -> tuple[str, int] | None:
    """(engine, index of the first word after the program) of a command line, None when no engine is named."""
    lowered = [w.lower() for w in words]
    for start in range(len(words)):  # env assignments, `docker run ... image`, `uv run` may come first
        for engine, module in modules.items():
            for program in module.PROGRAMS:
                parts = program.split()
                head = lowered[start:start + len(parts)]
                if len(head) == len(parts) and all(_names(h, p) for h, p in zip(head, parts)):
                    return engine, start + len(parts)
    return None


def parse_command(text: str, modules: dict) -> ImportedCommand:
    """The engine, model and scenario fields of an engine command line; ValueError naming what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the command is empty: paste e.g. `vllm serve Qwen/Qwen3-8B --max-model-len 32768`")
    if len(text) > MAX_COMMAND_CHARS:
        raise ValueError(f"the command is longer than {MAX_COMMAND_CHARS:,} characters")
    try:
        words = shlex.split(text.replace("\\\n", " "), comments=False)
    except ValueError as err:
        raise ValueError(f"the command cannot be read: {err}") from None
    found = _engine_of(words, modules)
    if found is None:
        raise ValueError("no engine command found: start with `vllm serve`, `python -m sglang.launch_server`, "
                         "`llama-server` or `ollama run`")
    engine, i = found
    module = modules[engine]
    fields: dict[str, object] = {}
    environment = getattr(module, "ENV", {})
    for word in words[:i]:  # VAR=value words before the program: the environment the engine reads
        name, eq, value = word.partition("=")
        if eq and name in environment:
            field, parse = environment[name]
            try:
                fields[field] = parse(value)
            except ValueError as err:
                raise ValueError(f"{name}: {err}") from None
    model, ignored = "", []
    while i < len(words):
        word = words[i]
        flag, eq, inline = word.partition("=") if word.startswith("-") else (word, "", "")
        if not word.startswith("-"):
            if not model:
                model = word  # the positional model (vllm serve MODEL, ollama run MODEL)
            else:
                ignored.append(word)
            i += 1
            continue
        bare = getattr(module, "BARE_VALUES", {}).get(flag)  # an option whose value older releases did not take
        following = words[i + 1] if i + 1 < len(words) else ""
        if flag in module.SWITCHES or bare is not None and not eq and (not following or following.startswith("-")):
            name, value = module.SWITCHES[flag] if flag in module.SWITCHES else bare
            fields[name] = value
            i += 1
            continue
        takes_value = flag in module.FLAGS or flag in module.MODEL_FLAGS
        value = inline if eq else (words[i + 1] if i + 1 < len(words) and takes_value else None)
        i += 1 if eq or not takes_value else 2
        if flag in module.MODEL_FLAGS and value is not None:
            model = value
        elif flag in module.FLAGS and value is not None:
            name, parse = module.FLAGS[flag]
            try:
                parsed = parse(value)
            except ValueError as err:
                raise ValueError(f"{flag}: {err}") from None
            if name in getattr(module, "REPEATABLE", ()) and fields.get(name):
                parsed = f"{fields[name]},{parsed}"  # a repeated option adds to the values before it
            fields.update(parsed if isinstance(parsed, dict) else {name: parsed})  # a dict sets several fields
        else:
            ignored.append(word if eq else flag)
            if not eq and i < len(words) and not words[i].startswith("-"):  # an unknown option's value goes with it
                ignored[-1] += f" {words[i]}"
                i += 1
    return ImportedCommand(engine=engine, model=model, fields=tuple(fields.items()), ignored=tuple(ignored))
