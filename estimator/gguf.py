"""GGUF files read from their header only: the architecture, the context length and every tensor's type and shape,
so the weights are exact for any quant mix (llama-quantize recipes, imatrix and unsloth dynamic quants alike).

The format (ggml-org/llama.cpp `docs/gguf.md`; gguf-py `gguf/gguf_reader.py` and `gguf/constants.py`), little-endian:
    magic "GGUF" | version u32 (2 or 3) | tensor_count u64 | kv_count u64
    kv_count x (key: string, value_type u32, value)       string = u64 length + UTF-8 bytes
    tensor_count x (name: string, n_dims u32, n_dims x u64 dims (ne0 first: the row length), type u32, offset u64)
    then the tensor data, which is never read.
Bytes of a tensor: ne0 / block_size x block_bytes x (the product of the other dims) (gguf-py `GGML_QUANT_SIZES`,
ggml `ggml_row_size`). The header is read through a reader of byte ranges: a local file, or range requests to the
Hub (estimator/hub.py), growing the window as needed up to MAX_HEADER_BYTES; nothing past the tensor infos.

Why a parser here rather than the `gguf` package: `gguf.GGUFReader` memory-maps a whole local file, so a Hub file
would have to be downloaded (GBs) first; this reader needs only the header's bytes and the standard library
(the core's rule). The tests write their GGUF files with the `gguf` package (gguf.GGUFWriter) and check this
reader against them.
Mapping to an Architecture: the llama.cpp metadata keys `{arch}.block_count`, `.embedding_length`,
`.feed_forward_length`, `.attention.head_count(_kv)`, `.attention.key_length`, `.expert_count`, ... become the
config.json fields of the family (llama.cpp `convert_hf_to_gguf.py` writes them from those fields), read by
estimator/hf_config.py; the weights come from the tensors themselves (GgufWeights).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from .architecture import Architecture, Tensor, tensors
from .checkpoint import CheckpointFormat
from .formats import WEIGHT_FORMATS, WeightBytes, tensor_bytes, weight_format
from .hf_config import architecture_from_config

GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)  # gguf-py constants.py GGUF_VERSION = 3; version 2 has the same 64-bit counts and lengths
MAX_HEADER_BYTES = 64 * 2**20  # the vocabulary arrays of a 262k-token model take ~10 MB; more is refused
FIRST_READ = 256 * 2**10  # the first window; doubled while the header goes on (a few requests for a large vocab)
# Published GGUFs hold up to a few thousand tensors (DeepSeek-V3 and Kimi K2 with merged experts ~1,100; Mixtral with
# one tensor per expert ~1,000); a header declaring more is refused before its tensor list is built (the app keeps
# parsed headers in memory)
MAX_TENSORS = 100_000
MAX_KEYS = 100_000
MAX_DIMS = 4  # ggml.h GGML_MAX_DIMS
MAX_STRING = MAX_HEADER_BYTES
MAX_ARRAY_DEPTH = 4

# ggml types by id: (name, elements per block, bytes per block), gguf-py gguf/constants.py GGMLQuantizationType and
# GGML_QUANT_SIZES (gguf 0.19.0); ids 4, 5 (Q4_2, Q4_3) and 31-33 (Q4_0_4_4 ...) are retired in ggml
GGML_TYPE_SIZES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}
# Metadata value types (gguf-py GGUFValueType): id -> struct format; 8 = string, 9 = array
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
# llama.cpp general.file_type (gguf-py LlamaFileType) -> the --weights id of that recipe, where the estimator has it
FILE_TYPES = {0: "fp32", 1: "bf16", 32: "bf16", 7: "q8_0", 8: "q5_0", 2: "q4_0", 10: "q2_k", 12: "q3_k_m",
              14: "q4_k_s", 15: "q4_k_m", 17: "q5_k_m", 18: "q6_k", 25: "iq4_nl", 30: "iq4_xs", 38: "mxfp4_moe"}
# llama.cpp architecture names (gguf-py MODEL_ARCH_NAMES) -> the HF model_type whose reader applies, for the families
# whose fields FIELDS carries in full; any other architecture goes to the generic reader under its own name (the
# weights stay exact: they come from the tensors)
MODEL_TYPES = {"llama": "llama", "mistral3": "mistral", "qwen2": "qwen2", "qwen3": "qwen3", "qwen2moe": "qwen2_moe",
               "qwen3moe": "qwen3_moe", "gemma": "gemma", "gemma2": "gemma2", "gemma3": "gemma3_text",
               "phi3": "phi3", "granite": "granite", "olmo2": "olmo2", "smollm3": "smollm3",
               "starcoder2": "starcoder2"}
# {arch}.<key> -> config.json field (llama.cpp convert_hf_to_gguf.py TextModel.set_gguf_parameters)
FIELDS = {"block_count": "num_hidden_layers", "embedding_length": "hidden_size", "context_length":
          "max_position_embeddings", "feed_forward_length": "intermediate_size", "attention.head_count":
          "num_attention_heads", "attention.head_count_kv": "num_key_value_heads", "attention.key_length": "head_dim",
          "attention.sliding_window": "sliding_window", "expert_count": "num_experts", "expert_used_count":
          "num_experts_per_tok", "expert_feed_forward_length": "moe_intermediate_size",
          "expert_shared_feed_forward_length": "shared_expert_intermediate_size",
          "attention.kv_lora_rank": "kv_lora_rank", "attention.q_lora_rank": "q_lora_rank",
          "vocab_size": "vocab_size"}
# GGUF tensor names (gguf-py constants.py TENSOR_NAMES) -> estimator roles (estimator/architecture.py Tensor.role)
ROLE_OF = {"ffn_gate_exps": "expert_gate", "ffn_up_exps": "expert_up", "ffn_down_exps": "expert_down",
           "ffn_gate_inp": "router", "ffn_gate_shexp": "shared_gate", "ffn_up_shexp": "shared_up",
           "ffn_down_shexp": "shared_down"}
BLOCK_NAME = re.compile(r"blk\.(\d+)\.(.+)\.(weight|bias)")


@dataclass(frozen=True)
class GgufArray:
    """A metadata array, kept as its length only (a vocabulary's tokens, a per-layer list): never mistaken for a
    scalar of the same key."""

    count: int


@dataclass(frozen=True)
class GgufTensor:
    name: str
    dims: tuple[int, ...]  # ne0 (the row length) first, as ggml orders them
    type_id: int

    @property
    def type_name(self) -> str:
        return GGML_TYPE_SIZES[self.type_id][0]

    @property
    def numel(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """ggml_nbytes: (ne0 / block) x block_bytes for each row, times the rows."""
        _, block, block_bytes = GGML_TYPE_SIZES[self.type_id]
        return self.numel // block * block_bytes

    @property
    def is_matrix(self) -> bool:
        return len(self.dims) >= 2 and self.numel > self.dims[0]


@dataclass(frozen=True)
class GgufHeader:
    version: int
    metadata: tuple[tuple[str, object], ...]  # scalar and string values; arrays as GgufArray (their length)
    tensors: tuple[GgufTensor, ...]
    header_bytes: int  # bytes read: up to the end of the tensor infos

    def get(self, key: str, default: object = None) -> object:
        return dict(self.metadata).get(key, default)

    def bytes_by_type(self) -> tuple[tuple[str, int], ...]:
        """(ggml type, bytes) of every tensor, largest first."""
        totals: dict[str, int] = {}
        for t in self.tensors:
            totals[t.type_name] = totals.get(t.type_name, 0) + t.nbytes
        return tuple(sorted(totals.items(), key=lambda item: (-item[1], item[0])))


class _Window:
    """Bytes of a source read on demand: `read(offset, size)` is asked for growing windows, never past the cap."""

    def __init__(self, read: Callable[[int, int], bytes], limit: int = MAX_HEADER_BYTES):
        self.read, self.limit, self.data, self.pos = read, limit, b"", 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            if end > self.limit:
                raise ValueError(f"GGUF header is larger than {self.limit:,} bytes")
            want = min(self.limit, max(end, 2 * len(self.data), FIRST_READ)) - len(self.data)
            more = self.read(len(self.data), want)
            self.data += more[:want]
            if end > len(self.data):
                raise ValueError("GGUF file ends inside its header")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.unpack("<Q")
        if n > MAX_STRING:
            raise ValueError("GGUF header has a string longer than the header limit")
        return self.take(n).decode("utf-8", errors="replace")


def _value(w: _Window, kind: int, depth: int = 0) -> object:
    if kind in SCALARS:
        return w.unpack(SCALARS[kind])
    if kind == STRING:
        return w.string()
    if kind == ARRAY and depth < MAX_ARRAY_DEPTH:
        item, count = w.unpack("<I"), w.unpack("<Q")
        if item in SCALARS:  # skipped in one step: a vocabulary's scores and token types
            size = struct.calcsize(SCALARS[item])
            if count * size > MAX_HEADER_BYTES:
                raise ValueError("GGUF header has an array larger than the header limit")
            w.take(count * size)
        else:
            for _ in range(count):
                _value(w, item, depth + 1)
        return GgufArray(count)
    raise ValueError(f"GGUF header has an unknown value type {kind}")


def read_header(read: Callable[[int, int], bytes], limit: int = MAX_HEADER_BYTES) -> GgufHeader:
    """Parse a GGUF header through `read(offset, size)`; ValueError naming what is wrong."""
    w = _Window(read, limit)
    if w.take(4) != GGUF_MAGIC:
        raise ValueError("not a GGUF file (its first bytes are not 'GGUF')")
    version = w.unpack("<I")
    if version not in GGUF_VERSIONS:
        raise ValueError(f"GGUF version {version} is not supported (versions {GGUF_VERSIONS})")
    n_tensors, n_keys = w.unpack("<Q"), w.unpack("<Q")
    if n_tensors > MAX_TENSORS or n_keys > MAX_KEYS:
        raise ValueError(f"GGUF header declares {n_tensors:,} tensors and {n_keys:,} keys; the limits are "
                         f"{MAX_TENSORS:,} and {MAX_KEYS:,}")
    metadata = []
    for _ in range(n_keys):
        key, kind = w.string(), w.unpack("<I")
        metadata.append((key, _value(w, kind)))
    infos = []
    for _ in range(n_tensors):
        name, n_dims = w.string(), w.unpack("<I")
        if not 1 <= n_dims <= MAX_DIMS:
            raise ValueError(f"GGUF tensor {name[:80]!r} has {n_dims} dimensions (1 to {MAX_DIMS})")
        dims = tuple(w.unpack("<Q") for _ in range(n_dims))
        type_id = w.unpack("<I")
        w.unpack("<Q")  # the data offset: not needed
        if type_id not in GGML_TYPE_SIZES:
            raise ValueError(f"GGUF tensor {name[:80]!r} has an unknown ggml type {type_id}")
        block = GGML_TYPE_SIZES[type_id][1]
        if dims[0] % block or any(d > 2**40 for d in dims):
            raise ValueError(f"GGUF tensor {name[:80]!r}: shape {dims} does not fit its type "
                             f"{GGML_TYPE_SIZES[type_id][0]}")
        infos.append(GgufTensor(name, dims, type_id))
    return GgufHeader(version, tuple(metadata), tuple(infos), w.pos)


def file_reader(path: str) -> Callable[[int, int], bytes]:
    """`read(offset, size)` of a local regular file (a FIFO or a device is refused, never waited on)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{path}: not a regular file; give the path of a .gguf file")
    os.close(fd)

    def read(offset: int, size: int) -> bytes:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read(size)
    return read


def bytes_reader(data: bytes) -> Callable[[int, int], bytes]:
    """`read(offset, size)` of bytes in memory."""
    return lambda offset, size: data[offset:offset + size]


def _role(name: str) -> tuple[str, int] | None:
    """A GGUF tensor name as the estimator's (role, layer); None for names it does not group."""
    if name in ("token_embd.weight", "output.weight"):
        return name.split(".")[0], -1
    if name.startswith("output_norm."):
        return "norm", -1
    found = BLOCK_NAME.fullmatch(name)
    if not found:
        return None
    base, kind = found[2], found[3]
    role = "bias" if kind == "bias" else "norm" if base.endswith("norm") else ROLE_OF.get(base, base)
    return role, int(found[1])


@dataclass(frozen=True)
class GgufWeights(CheckpointFormat):
    """The weights as a GGUF file stores them: exact bytes from its tensor infos. `format_id` is the recipe of its
    general.file_type (for the engines' labels); bytes per tensor group come from the file where its names map to
    a role and layer (GGUF tensor names), else from that recipe's rules."""

    matrices: int = 0  # bytes of the file's 2-D (and 3-D expert) tensors
    vectors: int = 0  # bytes of its 1-D tensors (norms, biases)
    groups_bytes: tuple[tuple[tuple[str, int], int], ...] = ()  # ((role, layer), bytes) from the file

    def weight_bytes(self, a: Architecture) -> WeightBytes:
        return WeightBytes(self.matrices, self.vectors)

    def tensor_bytes(self, a: Architecture, t: Tensor) -> int:
        return _split(self, a)[t]


@functools.lru_cache(maxsize=64)
def _split(weights: GgufWeights, a: Architecture) -> dict[Tensor, int]:
    """Bytes of each of `a`'s tensor groups: the file's bytes of its (role, layer), shared among the groups with that
    key in proportion to their size in the file's recipe (two norms of one layer); the recipe's bytes where the file
    has no tensor of that name."""
    fmt = weight_format(weights.layout or "bf16")
    found = dict(weights.groups_bytes)
    every = tensors(a)
    estimate = {t: tensor_bytes(fmt, t, a) for t in every}
    by_key: dict[tuple[str, int], list[Tensor]] = {}
    for t in every:
        by_key.setdefault((t.role, t.layer), []).append(t)
    out = {}
    for key, same in by_key.items():
        total = sum(estimate[t] for t in same)
        for t in same:
            if key not in found:
                out[t] = estimate[t]
            else:
                share = Fraction(estimate[t], total) if total else Fraction(1, len(same))
                out[t] = int(found[key] * share)
    return out


def config_of(header: GgufHeader) -> dict:
    """The config.json fields the header's llama.cpp keys stand for (an app share link carries them as a config)."""
    arch = header.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ValueError("GGUF header has no general.architecture")
    config: dict = {"model_type": MODEL_TYPES.get(arch, arch)}
    for key, field in FIELDS.items():
        value = header.get(f"{arch}.{key}")
        if isinstance(value, int) and not isinstance(value, bool):
            config[field] = value
    by_name = {t.name: t for t in header.tensors}
    embed = by_name.get("token_embd.weight")
    if "vocab_size" not in config:
        tokens = header.get("tokenizer.ggml.tokens")
        config["vocab_size"] = embed.dims[1] if embed and len(embed.dims) == 2 else \
            tokens.count if isinstance(tokens, GgufArray) else None
    config["tie_word_embeddings"] = "output.weight" not in by_name
    if "blk.0.attn_q.bias" in by_name and config["model_type"] not in ("qwen2", "qwen2_moe"):
        config["attention_bias"] = True
    if config.get("num_experts") and config["model_type"] == "llama":
        config["model_type"] = "mixtral"  # llama.cpp stores Mixtral as llama with experts
        config["num_local_experts"] = config.pop("num_experts")
    return config


def architecture_from_gguf(header: GgufHeader, name: str = "") -> Architecture:
    """The Architecture of a GGUF header, with its exact weights (GgufWeights) as the checkpoint's own format."""
    a = architecture_from_config(config_of(header), name or str(header.get("general.name") or "")[:80])
    file_type = header.get("general.file_type")
    recipe = FILE_TYPES.get(file_type) if isinstance(file_type, int) else None
    matrices = sum(t.nbytes for t in header.tensors if t.is_matrix)
    vectors = sum(t.nbytes for t in header.tensors if not t.is_matrix)
    groups: dict[tuple[str, int], int] = {}
    for t in header.tensors:
        key = _role(t.name)
        if key is not None:
            groups[key] = groups.get(key, 0) + t.nbytes
    mix = ", ".join(f"{size:,} bytes {kind}" for kind, size in header.bytes_by_type())
    label = f"GGUF {recipe.upper() if recipe else 'file'} as stored"
    note = (f"Weights: exactly as the GGUF file stores them, {matrices + vectors:,} bytes in {len(header.tensors):,} "
            f"tensors ({mix}), read from its header")
    weights = GgufWeights(format_id=recipe or "bf16", layout=WEIGHT_FORMATS[recipe or "bf16"],
                          unquantized=frozenset(), label=label, method="gguf", notes=(note,), matrices=matrices,
                          vectors=vectors, groups_bytes=tuple(sorted(groups.items())))
    return dataclasses.replace(a, checkpoint=weights)


def with_projector(a: Architecture, header: GgufHeader, name: str) -> Architecture:
    """`a` with a vision projector file (llama.cpp's `mmproj-*.gguf`, general.architecture "clip"): its tensors'
    elements become the vision tower's parameters, counted 16-bit beside the model as every tower is (exact for the
    F16 / BF16 projector files, which is how they are published; the stored bytes are in the note)."""
    if header.get("general.architecture") != "clip":
        raise ValueError(f"{name[:80]} is not a vision projector (its general.architecture is not 'clip')")
    params = sum(t.numel for t in header.tensors)
    mix = ", ".join(f"{size:,} bytes {kind}" for kind, size in header.bytes_by_type())
    note = (f"Vision: the projector file {name[:80]} (mmproj, read from its header): {params:,} parameters in "
            f"{len(header.tensors):,} tensors ({mix}), counted 16-bit with the model")
    return dataclasses.replace(a, vision_parameters=params, notes=(*a.notes, note))
