"""The model and GPU catalogs: data files under `estimator/data/`, each entry with its source.

Model entries keep the published `config.json` fields verbatim and are read through the same parser as a
user's config, so a catalog model and a pasted config can never disagree.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources

from .architecture import Architecture
from .hf_config import architecture_from_config


@dataclass(frozen=True)
class CatalogModel:
    id: str  # Hugging Face repo id
    name: str
    source: str  # where the config values were read
    architecture: Architecture
    published_params: tuple[tuple[str, str], ...]  # vendor-stated counts, e.g. (("total", "7.61B"), ...)


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    vendor: str
    memory_gb: float  # marketed capacity
    memory_bytes: int  # what frameworks can allocate: CUDA-visible total, else the driver's total
    bandwidth_gb_s: float
    bf16_tflops: float | None
    kind: str  # datacenter, workstation, consumer, apple
    source: str
    fp16_tflops: float | None = None  # dense FP16 tensor peak (FP32 accumulate) where BF16 is absent or differs
    fp8_tflops: float | None = None  # dense FP8 tensor peak; None: no FP8 tensor path (or none published)
    interconnect: str = ""  # GPU-to-GPU link, e.g. "NVLink 4 (18 links)", "PCIe 4.0 x16"; "" when not recorded
    interconnect_gb_s: float | None = None  # its bandwidth per GPU, one direction, decimal GB/s
    host_link_gb_s: float | None = None  # the link to host memory (PCIe), one direction, decimal GB/s; None: unknown
    aliases: tuple[str, ...] = ()  # the names nvidia-smi, rocm-smi or macOS print where they differ from `name`
    featured: bool = False  # one of the GPUs the fit table shows before "all GPUs" is asked for
    max_devices: int | None = None  # the most of this GPU one scenario combines (Apple: 4 over Thunderbolt 5, or 1)
    max_devices_note: str = ""  # what the fit says where that limit stops it ("one Mac: no Thunderbolt 5")


def _read(name: str) -> dict:
    return json.loads(resources.files("estimator").joinpath("data", name).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def models() -> tuple[CatalogModel, ...]:
    """Every catalog model, in file order."""
    out = []
    for entry in _read("models.json")["models"]:
        published = entry.get("published_params") or {}
        out.append(CatalogModel(
            id=entry["id"], name=entry["name"], source=entry["source"],
            architecture=architecture_from_config(entry["config"], entry["name"]),
            published_params=tuple((k, str(v)) for k, v in published.items() if k in ("total", "active"))))
    return tuple(out)


# Words of a model id that name a release of the same architecture: an instruct or chat tune, a base model,
# transformers' own weights (-hf) or a dated refresh (Qwen3-30B-A3B-Instruct-2507, Mistral-Nemo-Base-2407)
VARIANT_WORDS = {"instruct", "it", "chat", "base", "hf"}
DATE = re.compile(r"\d{4}")
SIZE = re.compile(r"\d+(\.\d+)?[bm]|\d+x\d+b|e\d+b|a\d+(\.\d+)?b")  # 8b, 0.5b, 8x7b, a3b


def model_key(model_id: str) -> str:
    """How people may type a catalog model: case-insensitive, with or without the organisation, with or without
    a variant word or date (`meta-llama/Llama-3.1-8B-Instruct`, `llama-3.1-8b`, `Qwen3-30B-A3B-Instruct-2507`)."""
    words = str(model_id).strip().lower().split("/")[-1].replace("_", "-").split("-")
    return "-".join(w for w in words if w not in VARIANT_WORDS and not DATE.fullmatch(w))


def _family(key: str) -> str:
    """The words before the first size: 'qwen3-32b' -> 'qwen3', 'llama-3.1-8b' -> 'llama-3.1'."""
    words = key.split("-")
    sized = next((i for i, w in enumerate(words) if SIZE.fullmatch(w)), len(words))
    return "-".join(words[:sized])


@functools.lru_cache(maxsize=1)
def _by_key() -> dict[str, CatalogModel]:
    keys: dict[str, CatalogModel] = {}
    for m in models():
        keys.setdefault(model_key(m.id), m)  # the first listed release of an architecture answers for all
    return keys


def model(model_id: str) -> CatalogModel:
    """A catalog model by id, as people type it (`model_key`: case, organisation and variant words do not
    matter); ValueError listing the closest ids, every size of the family included."""
    exact = {m.id.lower(): m for m in models()}
    found = exact.get(str(model_id).strip().lower()) or _by_key().get(model_key(model_id))
    if found is None:
        raise ValueError(f"unknown model {str(model_id)[:80]!r}{_suggestions(model_id)}")
    return found


def _suggestions(model_id: str) -> str:
    key = model_key(model_id)
    family = _family(key)
    same = [m.id for m in models() if family and _family(model_key(m.id)) == family]
    close = same or [_by_key()[k].id for k in difflib.get_close_matches(key, list(_by_key()), n=5, cutoff=0.6)]
    return (f"; did you mean {', '.join(close)}?" if close
            else "; run `python -m estimator models` for the list, or give a config.json or a parameter count")


def raw_config(model_id: str) -> dict:
    """The published config.json fields of a catalog model, as stored (for tools that need the HF config)."""
    wanted = model(model_id).id
    return next(dict(entry["config"]) for entry in _read("models.json")["models"] if entry["id"] == wanted)


def _host_link_gb_s(g: dict) -> float | None:
    """The GPU's link to host memory: `host_link_gb_s` where the card's GPU-to-GPU link is another (NVLink, Infinity
    Fabric), else its interconnect when that is PCIe; None where neither is recorded (unified memory, a superchip's
    C2C link, a datasheet that gives no host link)."""
    if "host_link_gb_s" in g:
        return g["host_link_gb_s"]
    return g.get("interconnect_gb_s") if g.get("interconnect", "").startswith("PCIe") else None


@functools.lru_cache(maxsize=1)
def gpus() -> tuple[Gpu, ...]:
    """Every catalog GPU, in file order."""
    out = []
    for g in _read("gpus.json")["gpus"]:
        usable = g.get("default_gpu_limit_bytes") or g.get("cuda_visible_bytes") or g["memory_bytes"]
        out.append(Gpu(id=g["id"], name=g["name"], vendor=g["vendor"], memory_gb=g["memory_gb"],
                       memory_bytes=usable, bandwidth_gb_s=g["bandwidth_gb_s"],
                       bf16_tflops=g.get("bf16_dense_tflops"), kind=g["kind"], source=g["source"],
                       fp16_tflops=g.get("fp16_dense_tflops"), fp8_tflops=g.get("fp8_dense_tflops"),
                       interconnect=g.get("interconnect", ""), interconnect_gb_s=g.get("interconnect_gb_s"),
                       host_link_gb_s=_host_link_gb_s(g),
                       aliases=tuple(g.get("aliases", ())), featured=bool(g.get("featured")),
                       max_devices=g.get("max_devices"), max_devices_note=g.get("max_devices_note", "")))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _gpus_by_id() -> dict[str, Gpu]:
    return {g.id: g for g in gpus()}


VENDOR_WORDS = ("nvidia", "amd")  # older drivers print 'GeForce RTX 2080 Ti', newer 'NVIDIA GeForce RTX 2080 Ti'


def name_key(text: str) -> str:
    """A printed GPU name as the catalog compares it: case, runs of spaces and a leading vendor word do not matter
    ('NVIDIA GeForce RTX 3070', 'geforce rtx  3070'; 'AMD Radeon RX 7900 XTX', 'Radeon RX 7900 XTX')."""
    words = str(text).lower().split()
    return " ".join(words[1:] if words[:1] and words[0] in VENDOR_WORDS else words)


@functools.lru_cache(maxsize=1)
def _gpus_by_name() -> dict[str, tuple[Gpu, ...]]:
    """name_key of every catalog name and alias -> the GPUs that carry it (several: a card sold in several memory
    sizes under one printed name, e.g. 'NVIDIA GeForce RTX 4060 Ti')."""
    names: dict[str, tuple[Gpu, ...]] = {}
    for g in gpus():
        for text in dict.fromkeys(name_key(t) for t in (g.name, *g.aliases)):
            names[text] = names.get(text, ()) + (g,)
    return names


def gpu(gpu_id: str) -> Gpu:
    """A catalog GPU by id; by the name nvidia-smi (--query-gpu=name), rocm-smi (--showproductname card series) or
    macOS (System Information chipset, 'Apple M2 Ultra (76-core GPU)') print, case-insensitive; or by words of its
    name that pick out one GPU ('RTX 4090', 'h100 sxm'). ValueError naming the GPUs the text fits (a printed name
    shared by several memory sizes, or words that fit several), or close names when it fits none."""
    text = str(gpu_id)
    found = _gpus_by_id().get(text.strip().lower())
    if found is not None:
        return found
    named = _gpus_by_name().get(name_key(text), ())
    matches = named or (find_gpus(text) if name_tokens(text) else ())  # no words: no GPU (not all of them)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ValueError(f"GPU {text[:60]!r} could be {', '.join(g.id for g in matches)}; give one of these ids"
                         + (" or add the memory size ('... 16GB')" if named else ""))
    raise ValueError(f"unknown GPU {text[:40]!r}{_gpu_suggestions(text)}")


def _gpu_suggestions(text: str) -> str:
    close = difflib.get_close_matches(str(text).strip().lower(), list(_gpus_by_id()), n=5, cutoff=0.6)
    return (f"; did you mean {', '.join(close)}?" if close
            else "; run `python -m estimator gpus` for the ids, or give the name nvidia-smi, rocm-smi or macOS prints")


TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?")  # words and numbers: 'h100' -> 'h', '100'; 'mi300x' -> 'mi', '300', 'x'


def name_tokens(text: str) -> list[str]:
    """The words and numbers of a GPU's name or of a search: 'NVIDIA A100 SXM4 80GB' -> nvidia a 100 sxm 4 80 gb."""
    return TOKEN.findall(str(text).lower())


@functools.lru_cache(maxsize=1)
def _gpu_tokens() -> tuple[tuple[Gpu, tuple[tuple[str, ...], ...]], ...]:
    """Each GPU with the tokens of its name, its id and each alias, kept apart (a search matches within one)."""
    return tuple((g, tuple(tuple(name_tokens(t)) for t in (g.name, g.id, *g.aliases))) for g in gpus())


def _token_matches(typed: str, token: str) -> bool:
    """A typed number matches only the whole number ('20' is not '200'); a typed word, the start of a word
    ('nvid' is 'nvidia'), so a search can be typed letter by letter."""
    return typed == token if typed[0].isdigit() else token.startswith(typed)


def _follows(typed: list[str], tokens: tuple[str, ...]) -> bool:
    """Whether the typed tokens occur, in order and each next to the one before, somewhere in `tokens` ('a 100'
    in 'nvidia a 100 sxm 4 80 gb'), words as word starts and numbers whole ('rtx 40' is not 'rtx 4090')."""
    n = len(typed)
    return any(all(_token_matches(t, tokens[i + k]) for k, t in enumerate(typed)) for i in range(len(tokens) - n + 1))


def find_gpus(query: str) -> tuple[Gpu, ...]:
    """The catalog GPUs whose name (or id, or a printed alias) has the searched words and numbers, in catalog
    order. Each typed group of letters and digits ('A100', 'H20', 'rtx 4090') must match the tokens of one of those
    names in a row: 'A100' finds the A100s only (not the Apple M3 Max), 'H20' finds no H200, 'RTX 4090' the
    RTX 4090. Empty: every GPU."""
    groups = [name_tokens(word) for word in re.split(r"[\s,/()·]+", str(query).lower()) if word]
    groups = [group for group in groups if group]
    return tuple(g for g, names in _gpu_tokens()
                 if all(any(_follows(group, tokens) for tokens in names) for group in groups))
