"""The model and GPU catalogs: data files under `estimator/data/`, each entry with its source.

Model entries keep the published `config.json` fields verbatim and are read through the same parser as a
user's config, so a catalog model and a pasted config can never disagree.
"""

from __future__ import annotations

import functools
import json
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


def model(model_id: str) -> CatalogModel:
    """A catalog model by id (case-insensitive), with an error that suggests close ids."""
    by_id = {m.id.lower(): m for m in models()}
    found = by_id.get(str(model_id).lower())
    if found is None:
        close = [m.id for m in models() if str(model_id).lower().split("/")[-1][:6] in m.id.lower()][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else "; run `python -m estimator models` for the list"
        raise ValueError(f"unknown model {str(model_id)[:80]!r}{hint}")
    return found


def raw_config(model_id: str) -> dict:
    """The published config.json fields of a catalog model, as stored (for tools that need the HF config)."""
    wanted = model(model_id).id
    return next(dict(entry["config"]) for entry in _read("models.json")["models"] if entry["id"] == wanted)


@functools.lru_cache(maxsize=1)
def gpus() -> tuple[Gpu, ...]:
    """Every catalog GPU, in file order."""
    out = []
    for g in _read("gpus.json")["gpus"]:
        usable = g.get("default_gpu_limit_bytes") or g.get("cuda_visible_bytes") or g["memory_bytes"]
        out.append(Gpu(id=g["id"], name=g["name"], vendor=g["vendor"], memory_gb=g["memory_gb"],
                       memory_bytes=usable, bandwidth_gb_s=g["bandwidth_gb_s"],
                       bf16_tflops=g.get("bf16_dense_tflops"), kind=g["kind"], source=g["source"]))
    return tuple(out)


def gpu(gpu_id: str) -> Gpu:
    for g in gpus():
        if g.id == str(gpu_id).lower():
            return g
    raise ValueError(f"unknown GPU {str(gpu_id)[:40]!r}; choose one of {', '.join(g.id for g in gpus())}")
