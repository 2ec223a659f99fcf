"""Share links: the inputs of a page <-> the URL query string, versioned and tolerant of bad input.

A link such as `?v=1&p=inference&params=70&conc=8&seq=8192` reproduces the same inputs, hence the same
numbers, in a fresh browser. Keys are short and readable; a value equal to its default is left out so links
stay short, which is safe because the defaults are pinned per link version (`VERSION`): changing a default
means a new version. Compared scenarios ride along as `c1.*`, `c2.*`, ... with the same keys, and a pasted
config.json travels as `cfg` (zlib-compressed, base64url).

Decoding never raises. An unknown key, a malformed or out-of-range value, or a combination the estimator
rejects (active > total parameters, a LoRA rank wider than the model) falls back to the default of the
offending field, and a warning names it.

The page state is a plain dict: one entry per `Field`, plus `src` (where the model comes from: "params",
"catalog" or "config"). `scenario(page, state)` turns it into the estimator's scenario.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from . import catalog
from .formats import WEIGHT_FORMATS
from .hf_config import architecture_from_config, parse_config_text
from .kv_cache import KV_DTYPE_BYTES
from .scenarios import (MAX_BATCH, MAX_CONCURRENCY, MAX_GPUS, MAX_OVERHEAD_GB, MAX_PARAMS_B, MAX_SEQ_LEN,
                        FinetuneScenario, InferenceScenario, ParamCount)
from .training import LORA_ROLES, OPTIMIZER_IMPLS, OPTIMIZERS, REGIMES, TECHNIQUES, parse_lora_targets

VERSION = "1"
PAGES = ("inference", "finetune", "compare", "methodology")
ESTIMATE_PAGES = ("inference", "finetune")
SOURCES = ("params", "catalog", "config")
MAX_COMPARE = 6
MAX_NAME_CHARS = 60
MAX_CONFIG_CHARS = 100_000  # a config.json is a few KB; this also bounds what a link can make us decompress
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"  # the catalog model preselected when the user switches to the catalog
DEFAULT_GPU = "rtx-4090"  # the 24 GB card most people have; the 7 B default fits it at 16-bit
INFERENCE_ROWS = ("16-bit", "8-bit", "4-bit", "custom")  # custom: the extra row of the chosen weight format
LORA_SHORT_NAMES = tuple(name.split("_")[0] for name in LORA_ROLES)  # q, k, v, o, gate, up, down


@dataclass(frozen=True)
class Field:
    """One input: its URL key (also its name in the page state), how the page labels it, and what it accepts.
    The type is the default's type; `optional` fields also accept "empty" (None)."""

    key: str
    label: str
    default: object
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    optional: bool = False
    check: Callable[[str], object] | None = None  # parser for free-text values (model id, targets, config)
    fallback: str = ""  # what replaces a bad value, when that is not simply the default

    @property
    def default_text(self) -> str:
        return self.fallback or self.format(self.default) or "none"

    def parse(self, text: str) -> object:
        """The value a URL string stands for; ValueError (naming the valid values) when it is not valid."""
        if self.optional and text == "":
            return None
        if self.check is not None:
            return self.check(text)
        kind = type(self.default) if self.default is not None else float
        if kind is bool:
            if text not in ("1", "0", "true", "false"):
                raise ValueError(f"{self.label} must be 1 or 0")
            return text in ("1", "true")
        if kind is str:
            if text not in self.choices:
                raise ValueError(f"{self.label} must be one of {', '.join(c or '(empty)' for c in self.choices)}")
            return text
        try:
            value = int(text) if kind is int else float(text)
        except ValueError:
            raise ValueError(f"{self.label} must be a {'whole ' if kind is int else ''}number") from None
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.label} must be one of {', '.join(map(str, self.choices))}")
        if not math.isfinite(value) or (self.low is not None and not self.low <= value <= self.high):
            raise ValueError(f"{self.label} must be between {self.low:,g} and {self.high:,g}")
        return value

    def format(self, value: object) -> str:
        """The URL string of a value (the inverse of `parse`)."""
        if value is None:
            return ""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, float):
            text = repr(value)
            return text[:-2] if text.endswith(".0") else text
        return str(value)


def _catalog_id(text: str) -> str:
    ids = {m.id.lower(): m.id for m in catalog.models()}
    if text.lower() not in ids:
        raise ValueError(f"unknown catalog model {text[:60]!r}")
    return ids[text.lower()]


def _gpu_id(text: str) -> str:
    if text not in {g.id for g in catalog.gpus()}:
        raise ValueError(f"unknown GPU {text[:40]!r}")
    return text


def _lora_targets(text: str) -> str:
    """Canonical short form, e.g. 'q,v' or 'q,k,v,o,gate,up,down'."""
    names = parse_lora_targets(text)
    return ",".join(short for short, name in zip(LORA_SHORT_NAMES, LORA_ROLES) if name in names)


def pack_config(text: str) -> str:
    """config.json text -> the `cfg` value of a link (zlib + base64url, no padding)."""
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def unpack_config(token: str) -> str:
    """The inverse of `pack_config`; refuses anything that does not decode to at most MAX_CONFIG_CHARS."""
    try:
        data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(data, 4 * MAX_CONFIG_CHARS + 1)  # UTF-8 is at most 4 bytes a character
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError, zlib.error, UnicodeDecodeError):
        raise ValueError("the config.json in the link is not encoded correctly (truncated link?)") from None
    if inflater.unconsumed_tail or len(text) > MAX_CONFIG_CHARS:
        raise ValueError(f"the config.json in the link is longer than {MAX_CONFIG_CHARS:,} characters")
    return text


def _check_config(text: str) -> str:
    text = unpack_config(text)
    config_architecture(text)  # fails here, with the parser's message, rather than later on the page
    return text


MODEL_FIELDS = (
    Field("moe", "Model type (MoE)", False),
    Field("params", "Total parameters (B)", 7.0, 0.001, MAX_PARAMS_B),
    Field("active", "Active parameters (B)", None, 0.001, MAX_PARAMS_B, optional=True),
    Field("model", "Catalog model", DEFAULT_MODEL, check=_catalog_id, fallback="the parameter count"),
    Field("cfg", "config.json", "", check=_check_config, fallback="the parameter count"),
    Field("method", "Method", "detailed", choices=("detailed", "quick")),
)
COMMON_FIELDS = (
    Field("seq", "Sequence length", 2048, 1, MAX_SEQ_LEN),
    Field("batch", "Batch size", 1, 1, MAX_BATCH),
    Field("fa", "FlashAttention", True),
    Field("oh", "Overhead per GPU (GB)", 2.0, 0, MAX_OVERHEAD_GB),
    Field("act", "Activation precision (bits)", 16, choices=(16, 32)),
)
FIELDS = {
    "inference": MODEL_FIELDS + COMMON_FIELDS + (
        Field("conc", "Inference concurrency", 1, 1, MAX_CONCURRENCY),
        Field("w", "Extra weight format", "", choices=("", *WEIGHT_FORMATS)),
        Field("kv", "KV-cache dtype", "bf16", choices=tuple(KV_DTYPE_BYTES)),
        Field("tp", "Tensor parallel GPUs", 1, 1, 512),
        Field("mla", "Cache the MLA latent", True),
        Field("chunk", "Prefill chunk (tokens)", 0, 0, MAX_SEQ_LEN),
        Field("row", "Selected row", "16-bit", choices=INFERENCE_ROWS),
    ),
    "finetune": MODEL_FIELDS + COMMON_FIELDS + (
        Field("bits", "Parameter precision (bits)", 16, choices=(32, 16, 8, 4)),
        Field("opt", "Optimizer", "adamw", choices=tuple(OPTIMIZERS)),
        Field("regime", "Training regime", "pure-16bit", choices=tuple(REGIMES)),
        Field("osb", "Optimizer state precision (bits)", 32, choices=(32, 16)),
        Field("impl", "Optimizer step", "fused", choices=OPTIMIZER_IMPLS),
        Field("abits", "LoRA adapter precision (bits)", 32, choices=(32, 16)),
        Field("rank", "LoRA rank", 16, 1, 65_536),
        Field("targets", "LoRA targets", "q,v", check=_lora_targets),
        Field("gc", "Gradient checkpointing", False),
        Field("gpus", "Number of GPUs", 1, 1, MAX_GPUS),
        Field("zero", "ZeRO stage", 0, choices=(0, 1, 2, 3)),
        Field("offload", "Optimizer offload", False),
        Field("row", "Selected row", "full", choices=TECHNIQUES),
    ),
}
VIEW_FIELDS = (
    Field("unit", "Unit", "GB", choices=("GB", "GiB")),
    Field("gpu", "Target GPU", DEFAULT_GPU, check=_gpu_id),
)


def fields(page: str) -> dict[str, Field]:
    """The fields of an estimate page ("inference" or "finetune"), by key."""
    return {f.key: f for f in FIELDS[page]}


def defaults(page: str) -> dict:
    """A fresh page state with every field at its default (a bare 7 B parameter count, quick method)."""
    return {"src": "params", **{f.key: f.default for f in FIELDS[page]}}


def view_defaults() -> dict:
    return {f.key: f.default for f in VIEW_FIELDS}


@functools.lru_cache(maxsize=32)
def config_architecture(text: str):
    """The Architecture of a pasted config.json (cached: pages re-read it on every rerun)."""
    return architecture_from_config(parse_config_text(text))


def model_of(state: Mapping) -> object:
    """The scenario's model: a catalog Architecture, a parsed config's Architecture, or a ParamCount."""
    if state["src"] == "catalog":
        return catalog.model(state["model"]).architecture
    if state["src"] == "config":
        return config_architecture(state["cfg"])
    active = state["active"] if state["moe"] else None
    return ParamCount.from_billions(state["params"], active)


def model_name(state: Mapping) -> str:
    """How the page names the model: the catalog name, the config's name, or '7B' / '47B MoE (13B active)'."""
    if state["src"] == "catalog":
        return catalog.model(state["model"]).name
    if state["src"] == "config":
        return config_architecture(state["cfg"]).name
    if state["moe"] and state["active"] is not None:
        return f"{state['params']:g}B MoE ({state['active']:g}B active)"
    return f"{state['params']:g}B"


def scenario(page: str, state: Mapping) -> InferenceScenario | FinetuneScenario:
    """The estimator scenario a page state describes; ValueError naming the field when it is not valid."""
    model = model_of(state)
    method = "quick" if state["src"] == "params" or state["method"] == "quick" else "detailed"
    common = dict(model=model, batch_size=state["batch"], seq_len=state["seq"], flash_attention=state["fa"],
                  overhead_gb=state["oh"], activation_bits=state["act"], method=method)
    if page == "inference":
        return InferenceScenario(**common, weights=state["w"] or "bf16", kv_dtype=state["kv"],
                                 concurrency=state["conc"], tensor_parallel=state["tp"],
                                 mla_latent_cache=state["mla"], prefill_chunk=state["chunk"])
    return FinetuneScenario(**common, technique=state["row"], optimizer=state["opt"], param_bits=state["bits"],
                            regime=state["regime"], optimizer_state_bits=state["osb"], optimizer_impl=state["impl"],
                            lora_rank=state["rank"], lora_targets=state["targets"], adapter_bits=state["abits"],
                            gradient_checkpointing=state["gc"], num_gpus=state["gpus"], zero_stage=state["zero"],
                            offload_optimizer=state["offload"])


@dataclass
class Item:
    """A scenario on the Compare page: an estimate page's state and the row it compares."""

    page: str  # "inference" or "finetune"
    state: dict  # that page's state; state["row"] is the compared row
    name: str = ""  # the user's name for it ("" = described automatically)
    uid: int = 0  # stable id for the page's widgets (not part of links)


@dataclass
class Link:
    """What a query string says. `state` is the estimate page's inputs (None on other pages)."""

    page: str
    state: dict | None
    view: dict
    compare: list[Item] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _state_with(page: str, given: Mapping) -> dict:
    state = {**defaults(page), **given}
    state["src"] = "config" if "cfg" in given else "catalog" if "model" in given else "params"
    return state


def _decode_state(page: str, query: dict, prefix: str, warnings: list[str]) -> dict:
    """Read `page`'s fields (keys `prefix` + key) out of `query`, consuming them."""
    given = {}
    for f in FIELDS[page]:
        raw = query.pop(prefix + f.key, None)
        if raw is None:
            continue
        try:
            given[f.key] = f.parse(raw)
        except ValueError as err:
            warnings.append(_ignored(prefix + f.key, raw, err, f.default_text))
    try:
        scenario(page, _state_with(page, given))
    except ValueError as err:
        for key in reversed(list(given)):  # the fields that come later depend on the earlier ones
            fewer = {k: v for k, v in given.items() if k != key}
            try:
                scenario(page, _state_with(page, fewer))
            except ValueError:
                continue
            f = fields(page)[key]
            shown = "(the config)" if key == "cfg" else f.format(given[key])
            warnings.append(_ignored(prefix + key, shown, err, f.default_text))
            given = fewer
            break
        else:
            warnings.append(f"Link inputs{' of comparison ' + prefix[1:-1] if prefix else ''} ignored: {err}. "
                            "Using the defaults.")
            given = {}
    return _state_with(page, given)


def _ignored(key: str, raw: str, err: Exception, instead: str) -> str:
    shown = raw if len(raw) <= 40 else raw[:40] + "..."
    return f"Link parameter {key}={shown!r} ignored: {err}. Using {instead} instead."


def _text(query: Mapping, key: str) -> str | None:
    value = query.get(key)
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else None
    return None if value is None else str(value)


def decode(query: Mapping[str, str | list[str]], landing_page: str) -> Link:
    """Read a query string (as st.query_params gives it). `landing_page` is used when the link names none."""
    query = {str(k): _text(query, k) for k in query}
    warnings: list[str] = []
    version = query.pop("v", VERSION)
    if version != VERSION:
        warnings.append(f"Link version v={version[:10]!r} is not supported; read as version {VERSION}.")
    page = query.pop("p", landing_page)
    if page not in PAGES:
        warnings.append(_ignored("p", page, ValueError(f"the page must be one of {', '.join(PAGES)}"), landing_page))
        page = landing_page
    view = view_defaults()
    for f in VIEW_FIELDS:
        raw = query.pop(f.key, None)
        if raw is not None:
            try:
                view[f.key] = f.parse(raw)
            except ValueError as err:
                warnings.append(_ignored(f.key, raw, err, f.default_text))
    state = _decode_state(page, query, "", warnings) if page in ESTIMATE_PAGES else None
    compare = []
    for i in range(1, MAX_COMPARE + 1):
        prefix = f"c{i}."
        if not any(key.startswith(prefix) for key in query):
            continue
        item_page = query.pop(prefix + "p", None)
        name = clean_name(query.pop(prefix + "name", None) or "")
        if item_page not in ESTIMATE_PAGES:
            warnings.append(f"Comparison {i} ignored: {prefix}p must be inference or finetune.")
            for key in [k for k in query if k.startswith(prefix)]:
                del query[key]
            continue
        compare.append(Item(item_page, _decode_state(item_page, query, prefix, warnings), name, uid=i))
    if query:
        unknown = sorted(query)
        shown = ", ".join(k if len(k) <= 20 else k[:20] + "..." for k in unknown[:8])
        warnings.append(f"Unknown link parameter{'s' if len(unknown) > 1 else ''} ignored: {shown}"
                        + (f" and {len(unknown) - 8} more." if len(unknown) > 8 else "."))
    return Link(page, state, view, compare, warnings)


def clean_name(text: str) -> str:
    """A scenario name: printable characters only, at most MAX_NAME_CHARS."""
    return "".join(ch for ch in text if ch.isprintable()).strip()[:MAX_NAME_CHARS]


def _encode_state(page: str, state: Mapping, prefix: str = "") -> dict[str, str]:
    """Non-default fields of a page state; the model by its source (catalog id, config, or counts)."""
    skip = {"params": {"model", "cfg", "method"}, "catalog": {"moe", "params", "active", "cfg"},
            "config": {"moe", "params", "active", "model"}}[state["src"]]
    out = {}
    for f in FIELDS[page]:
        value = state[f.key]
        always = (f.key == "model" and state["src"] == "catalog") or (f.key == "cfg" and state["src"] == "config")
        if f.key in skip or (f.key == "active" and not state["moe"]) or (value == f.default and not always):
            continue
        out[prefix + f.key] = pack_config(value) if f.key == "cfg" else f.format(value)
    return out


def encode(page: str, state: Mapping | None, view: Mapping, compare: list[Item] = ()) -> dict[str, str]:
    """The query parameters of a link to `page` with these inputs, view settings and comparison set."""
    out = {"v": VERSION, "p": page}
    if page in ESTIMATE_PAGES:
        out.update(_encode_state(page, state, ""))
    for f in VIEW_FIELDS:
        if view[f.key] != f.default:
            out[f.key] = f.format(view[f.key])
    for i, item in enumerate(compare[:MAX_COMPARE], start=1):
        out[f"c{i}.p"] = item.page
        if item.name:
            out[f"c{i}.name"] = item.name
        out.update(_encode_state(item.page, item.state, f"c{i}."))
    return out
