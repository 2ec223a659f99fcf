"""A quantized checkpoint's own weight format, read from the `quantization_config` of its config.json.

A published checkpoint that is already quantized says how in `quantization_config` (top level, or inside
`text_config` for multimodal wrappers such as Kimi K2.5). This module turns that block into:
    format_id    the --weights id of its layout family (formats.WEIGHT_FORMATS)
    layout       the exact storage (a formats.WeightFormat: group size, scale dtype, zero points, per-tensor
                 scales), which may differ from the registered id's (a GPTQ group of 32, static input scales)
    unquantized  the Tensor roles the checkpoint leaves in its original 16-bit dtype, from its `ignore` /
                 `modules_to_not_convert` / `exclude_modules` / `llm_int8_skip_modules` lists: "output",
                 "attn_*", "shared_*", "ffn_*@0" (estimator/architecture.py roles; "@N" = layer N only)
    notes        the assumptions, in words

What each method stores (bytes per tensor: estimator/formats.py, whose docstring cites each layout):
- "fp8" (DeepSeek-V3/V3.1/V3.2, Kimi K2, MiniMax-M2.5; transformers `quantizers/quantizer_finegrained_fp8.py`,
  vLLM `quantization/fp8.py`): fp8 E4M3 weights; `weight_block_size [128, 128]` -> fp32 `weight_scale_inv` per
  block, no block size -> one fp32 scale per tensor (+ an fp32 input scale when `activation_scheme` is static).
- "compressed-tensors" (llm-compressor / RedHatAI / Kimi K2.5; vllm-project/compressed-tensors @ac8e2ba):
  `config_groups.*.weights` {type, num_bits, strategy, group_size, block_structure, symmetric, actorder};
  `ignore` entries are exact module names or "re:" regexes (`utils/match.py::match_name`: `re.match`). Groups
  whose `targets` name modules ("mixed-precision": FP8 attention, NVFP4 experts) apply to the roles they name,
  before the group that targets every "Linear" (CheckpointFormat.groups; only `weight_bytes(a)` of the
  CheckpointFormat sees them, formats.weight_bytes takes one layout).
- "modelopt" (NVIDIA TensorRT Model Optimizer; vLLM `quantization/modelopt.py`): `quant_algo` FP8 (fp8 + fp32
  weight and input scales per tensor) or NVFP4 (E2M1 + fp8 scale per 16 + fp32 weight_scale_2 and input_scale);
  `exclude_modules` (or `ignore`) are fnmatch globs.
- "mxfp4" (gpt-oss; transformers `quantizers/quantizer_mxfp4.py`): the MoE experts only.
- "gptq" (transformers `quantizers/quantizer_gptq.py`, AutoGPTQ/GPTQModel): bits, group_size (-1 = one group
  per row), desc_act, sym; qweight, qzeros and g_idx are stored whatever desc_act and sym say.
- "awq" (AutoAWQ GEMM): bits (or w_bit), group_size (or q_group_size), zero_point.
- "bitsandbytes" (transformers `quantizers/quantizer_bnb_4bit.py`, `quantizer_bnb_8bit.py`): load_in_8bit ->
  LLM.int8; load_in_4bit -> bnb_4bit_quant_type nf4 / fp4, bnb_4bit_use_double_quant.
- "fbgemm_fp8" (transformers `quantizers/quantizer_fbgemm_fp8.py`): fp8 + fp32 scale per output row.
transformers matches `modules_to_not_convert` entries with `quantizers/quantizers_utils.py::should_convert_module`:
`re.match(key + r"\\.", name) or re.match(key, name) or name.endswith(key)`; this module applies each method's own
rule to the module names of the model's layers (Llama/Qwen/DeepSeek naming, Mixtral/MiniMax `block_sparse_moe`,
gpt-oss `mlp.router` and fused experts, and multimodal `language_model` prefixes) to find the roles it names.
An unknown `quant_method` is never an error: the weights are then assumed 16-bit, and a note says so. Malformed
values of the fields read (a group_size of "abc", 99 bits, an ignore list of 100,000 entries) raise ValueError
naming the field. Embeddings, norms and MoE routers stay 16-bit in every method (none of them quantizes
nn.Embedding, vectors, or the router gate, which every published config above leaves out), and so does lm_head:
vLLM loads it unquantized under every method here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from fractions import Fraction

from .architecture import MAX_LAYERS, Architecture, Tensor, tensors
from .formats import (WEIGHT_FORMATS, WeightBytes, WeightFormat, is_unquantized, tensor_bytes, weight_bytes,
                      weight_format)
from .units import BF16_BYTES

NESTED_TEXT_CONFIGS = ("text_config", "llm_config", "language_config")  # where multimodal configs keep theirs
MAX_LIST_ENTRIES = 5_000  # ignore lists name modules one by one (a few thousand for large MoE models)
MAX_PATTERN_CHARS = 500  # one module name or regex
MAX_CONFIG_GROUPS = 64  # compressed-tensors config_groups
MAX_GROUP_SIZE = 1_000_000
ALWAYS_16_BIT = frozenset({"output", "token_embd", "router"})  # outside every method's scope (formats._in_scope)
SAMPLE_LAYER = 987_654  # a layer index no model has: a pattern that matches it names every layer
# Config patterns are untrusted regexes run by Python's backtracking engine: a repeated group ("(a+)+", "(.|.)*")
# can take exponential time and k unbounded repeats ("*", "+", "{n,}") up to n^k steps on an n-character name. So a
# group may not be repeated, a pattern holds at most MAX_REPEATS unbounded repeats, and a list at most
# MAX_REPEATING_ENTRIES regexes that repeat at all (published lists hold a handful: Kimi K2.5 has 3; ModelOpt's
# globs, e.g. NVIDIA's Gemma 4 31B NVFP4 with one "...layers.N.self_attn*" per layer, are fnmatch, not regexes).
REPEATED_GROUP = re.compile(r"\)\s*[*+{]")
UNBOUNDED_REPEAT = re.compile(r"(?<!\\)[*+]|\{\d*,\}")
MAX_REPEATS = 3
MAX_REPEATING_ENTRIES = 64


@dataclass(frozen=True)
class CheckpointFormat:
    """How a published checkpoint stores its weights, read from its quantization_config."""

    format_id: str | None  # the --weights id of its layout family, or None: not recognised, weights 16-bit
    layout: WeightFormat | None  # the exact storage (group size, scale dtypes, per-tensor scales)
    unquantized: frozenset[str]  # role patterns left in 16-bit: "output", "attn_*", "ffn_*@0"
    label: str  # e.g. "compressed-tensors W4A16, int4 groups of 32, symmetric"
    method: str = ""  # quant_method as written in the config
    notes: tuple[str, ...] = field(default=(), compare=False)  # the assumptions, in words
    # compressed-tensors groups that target modules by name: (layout, role patterns), before the default layout
    groups: tuple[tuple[WeightFormat, frozenset[str]], ...] = ()
    covers_linear: bool = True  # the default layout applies to every decoder linear (a group targets "Linear")

    def weight_bytes(self, a: Architecture) -> WeightBytes:
        """Bytes of `a`'s weights as this checkpoint stores them (16-bit when the method is not recognised)."""
        if not self.groups and self.covers_linear:
            return weight_bytes(a, self.layout or "bf16", self.unquantized)
        return _grouped_bytes(a, self.layout if self.covers_linear else None, self.unquantized, self.groups)

    def tensor_bytes(self, a: Architecture, t: Tensor) -> int:
        """Bytes of one tensor group of `a` as this checkpoint stores it (the engines split weights by role)."""
        if not self.groups and self.covers_linear:
            return tensor_bytes(weight_format(self.layout or "bf16"), t, a, self.unquantized)
        return _grouped_tensor_bytes(a, t, self.layout if self.covers_linear else None, self.unquantized, self.groups)


@functools.lru_cache(maxsize=256)
def _grouped_bytes(a: Architecture, default: WeightFormat | None, unquantized: frozenset[str],
                   groups: tuple[tuple[WeightFormat, frozenset[str]], ...]) -> WeightBytes:
    """Bytes when config groups target modules by name: `ignore` first, then the first group naming a tensor (any
    2-D weight it names, lm_head included), then the default layout (decoder linears), else 16-bit."""
    matrices = vectors = 0
    for t in tensors(a):
        size = _grouped_tensor_bytes(a, t, default, unquantized, groups)
        if t.is_matrix:
            matrices += size
        else:
            vectors += size
    return WeightBytes(matrices, vectors)


def _grouped_tensor_bytes(a: Architecture, t: Tensor, default: WeightFormat | None, unquantized: frozenset[str],
                          groups: tuple[tuple[WeightFormat, frozenset[str]], ...]) -> int:
    if not t.is_matrix or is_unquantized(t, unquantized):
        return t.numel * BF16_BYTES
    named = next((layout for layout, roles in groups if is_unquantized(t, roles)), None)
    return tensor_bytes(named or default or WEIGHT_FORMATS["bf16"], t, a)


# --- module names of each Tensor role, per naming convention -------------------------------------------------

_ATTENTION = {"attn_q": ("self_attn.q_proj",), "attn_k": ("self_attn.k_proj",), "attn_v": ("self_attn.v_proj",),
              "attn_output": ("self_attn.o_proj",), "attn_q_a": ("self_attn.q_a_proj",),
              "attn_q_b": ("self_attn.q_b_proj",), "attn_kv_a": ("self_attn.kv_a_proj_with_mqa",),
              "attn_kv_b": ("self_attn.kv_b_proj",), "attn_index_q": ("self_attn.indexer.wq_b",),
              "attn_index_k": ("self_attn.indexer.wk",), "attn_index_weights": ("self_attn.indexer.weights_proj",),
              "linear_in": ("linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.in_proj_qkv",
                            "linear_attn.in_proj_z", "linear_attn.in_proj_b", "linear_attn.in_proj_a"),
              "linear_out": ("linear_attn.out_proj",)}
_DENSE_MLP = {"ffn_gate": ("mlp.gate_proj",), "ffn_up": ("mlp.up_proj",), "ffn_down": ("mlp.down_proj",)}
_SHARED = {f"shared_{p}": (f"mlp.shared_experts.{p}_proj", f"mlp.shared_expert.{p}_proj")
           for p in ("gate", "up", "down")}
_CONVENTIONS = {
    # Llama, Qwen2/3(-MoE), DeepSeek-V2/V3, Kimi K2, GLM: mlp.gate is the router, experts one module each
    "default": {**_ATTENTION, **_DENSE_MLP, **_SHARED, "router": ("mlp.gate", "mlp.shared_expert_gate"),
                "expert_gate": ("mlp.experts.0.gate_proj",), "expert_up": ("mlp.experts.0.up_proj",),
                "expert_down": ("mlp.experts.0.down_proj",)},
    # gpt-oss (transformers models/gpt_oss): mlp.router, fused 3-D experts mlp.experts.gate_up_proj / down_proj
    "gpt_oss": {**_ATTENTION, "router": ("mlp.router",), "expert_gate": ("mlp.experts.gate_up_proj",),
                "expert_up": ("mlp.experts.gate_up_proj",), "expert_down": ("mlp.experts.down_proj",)},
    # Mixtral, MiniMax-M2: block_sparse_moe.gate router, experts w1 (gate), w3 (up), w2 (down)
    "block_sparse_moe": {**_ATTENTION, **_DENSE_MLP, "router": ("block_sparse_moe.gate",),
                         "expert_gate": ("block_sparse_moe.experts.0.w1",),
                         "expert_up": ("block_sparse_moe.experts.0.w3",),
                         "expert_down": ("block_sparse_moe.experts.0.w2",)},
}
_CONVENTION_OF = {"gpt_oss": "gpt_oss", "mixtral": "block_sparse_moe", "minimax_m2": "block_sparse_moe",
                  "minimax": "block_sparse_moe"}
_LAYER_PREFIXES = ("model.layers.{i}.", "model.language_model.layers.{i}.", "language_model.model.layers.{i}.")
_TOP_LEVEL = {"token_embd": ("model.embed_tokens", "model.language_model.embed_tokens",
                             "language_model.model.embed_tokens"),
              "output": ("lm_head", "language_model.lm_head")}
# what the roles are called in notes
_FAMILIES = (("output", "lm_head"), ("token_embd", "embeddings"), ("attn_", "attention"),
             ("linear_", "linear attention"), ("router", "routers"), ("shared_", "shared experts"),
             ("ffn_", "dense MLPs"), ("expert_", "routed experts"))


@functools.lru_cache(maxsize=65_536)
def _module_names(convention: str, role: str, layer: int) -> tuple[str, ...]:
    if role in _TOP_LEVEL:
        return _TOP_LEVEL[role]
    return tuple(prefix.format(i=layer) + name for prefix in _LAYER_PREFIXES
                 for name in _CONVENTIONS[convention].get(role, ()))


def _matcher(style: str, pattern: str, where: str):
    """A predicate over module names with `style`'s semantics: "ct" (compressed-tensors: exact name or
    "re:" + re.match), "hf" (transformers should_convert_module), "glob" (modelopt: fnmatch, else as "hf")."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{where} must be a non-empty module name, got {pattern!r}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"{where} is longer than {MAX_PATTERN_CHARS} characters")
    regex = pattern[3:] if style == "ct" and pattern.startswith("re:") else pattern if style == "hf" else None
    if REPEATED_GROUP.search(regex or "") or len(UNBOUNDED_REPEAT.findall(regex or pattern)) > MAX_REPEATS:
        raise ValueError(f"{where} {pattern!r}: a repeated group or more than {MAX_REPEATS} repeats ('*', '+') "
                         f"is refused (matching it can take exponential time)")
    if regex is not None:
        try:
            compiled, dotted = re.compile(regex), re.compile(regex + r"\.")
        except (re.error, RecursionError, OverflowError) as err:
            raise ValueError(f"{where} {pattern!r} is not a valid regular expression ({err})") from None
        if style == "ct":
            return lambda name: compiled.match(name) is not None
        return lambda name: bool(dotted.match(name) or compiled.match(name) or name.endswith(pattern))
    if style == "ct":
        return lambda name: name == pattern
    if any(c in pattern for c in "*?["):
        return lambda name: fnmatchcase(name, pattern)
    return lambda name: name == pattern or name.startswith(pattern + ".") or name.endswith("." + pattern)


def unquantized_roles(entries: object, style: str, field_name: str, model_type: str = "",
                      num_layers: int = 0) -> tuple[frozenset[str], tuple[str, ...]]:
    """The Tensor roles a list of module names / patterns names, and the entries that name none of them (vision
    towers, MTP layers, modules the estimate does not count). A pattern that matches a role at every layer gives
    the role ("attn_*" for a whole self_attn); one that names layer N ("model.layers.0.mlp") gives "role@N"."""
    if entries is None:
        return frozenset(), ()
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, (list, tuple)):
        raise ValueError(f"quantization_config.{field_name} must be a list of module names")
    if len(entries) > MAX_LIST_ENTRIES:
        raise ValueError(f"quantization_config.{field_name} has {len(entries):,} entries; the limit is "
                         f"{MAX_LIST_ENTRIES:,}")
    if all(isinstance(entry, str) for entry in entries):  # the usual case: the same list is read again on every
        return _roles_of_cached(tuple(entries), style, field_name, model_type, num_layers)  # rerun, fuzz example
    return _roles_of(entries, style, field_name, model_type, num_layers)


@functools.lru_cache(maxsize=256)
def _roles_of_cached(entries: tuple[str, ...], style: str, field_name: str, model_type: str,
                     num_layers: int) -> tuple[frozenset[str], tuple[str, ...]]:
    return _roles_of(entries, style, field_name, model_type, num_layers)


def _roles_of(entries, style: str, field_name: str, model_type: str,
              num_layers: int) -> tuple[frozenset[str], tuple[str, ...]]:
    repeating = sum(1 for entry in entries if isinstance(entry, str) and (style == "hf" or entry.startswith("re:"))
                    and UNBOUNDED_REPEAT.search(entry))  # regexes only: fnmatch globs cannot backtrack badly
    if repeating > MAX_REPEATING_ENTRIES:
        raise ValueError(f"quantization_config.{field_name} has {repeating:,} patterns with '*' or '+'; the limit "
                         f"is {MAX_REPEATING_ENTRIES}")
    convention = _CONVENTION_OF.get(model_type, "default")
    roles = (*_TOP_LEVEL, *_CONVENTIONS[convention])
    found: dict[str, set[int] | None] = {}  # role -> layers (None: every layer)
    unmatched = []
    first = {}  # entry -> its first index; a repeated entry names the same modules
    for n, entry in enumerate(entries):
        first.setdefault(entry, n) if isinstance(entry, str) else _matcher(style, entry, f"{field_name}[{n}]")
    for entry, n in first.items():
        match = _matcher(style, entry, f"quantization_config.{field_name}[{n}]")
        hit = False
        layers = sorted({int(d) for d in re.findall(r"\d+", entry) if int(d) < min(num_layers or MAX_LAYERS,
                                                                                     MAX_LAYERS)})
        for role in roles:
            if found.get(role, set()) is None:
                hit = hit or any(match(name) for name in _module_names(convention, role, SAMPLE_LAYER))
                continue
            if any(match(name) for name in _module_names(convention, role, SAMPLE_LAYER)):
                found[role], hit = None, True
                continue
            for layer in layers:
                if any(match(name) for name in _module_names(convention, role, layer)):
                    found.setdefault(role, set()).add(layer)
                    hit = True
        if not hit:
            unmatched.append(entry)
    patterns = set()
    for role, layers in found.items():
        if layers is None or (num_layers and len(layers) >= num_layers):
            patterns.add(role)
        else:
            patterns.update(f"{role}@{layer}" for layer in sorted(layers))
    return frozenset(patterns), tuple(unmatched)


def describe_unquantized(unquantized: frozenset[str]) -> str:
    """The unquantized roles in words: "lm_head, attention, shared experts and dense MLPs (layer 0)"."""
    parts = []
    for prefix, words in _FAMILIES:
        layers = set()
        every = False
        for pattern in unquantized:
            role, _, at = pattern.partition("@")
            if role.startswith(prefix):
                every = every or not at
                layers.add(at)
        if every:
            parts.append(words)
        elif layers:
            shown = sorted(int(n) for n in layers if n.isdigit())
            parts.append(f"{words} (layer{'s' if len(shown) > 1 else ''} {', '.join(map(str, shown[:8]))}"
                         f"{', ...' if len(shown) > 8 else ''})")
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


# --- field readers ---------------------------------------------------------------------------------------------

def _int(q: Mapping, name: str, low: int, high: int, default: int | None = None, where: str = "") -> int | None:
    value = q.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"quantization_config.{where}{name} must be a whole number between {low:,} and {high:,}, "
                         f"got {value!r}"[:200])
    return value


def _bool(q: Mapping, name: str, default: bool, where: str = "") -> bool:
    value = q.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"quantization_config.{where}{name} must be true or false, got {value!r}"[:200])
    return value


def _str(q: Mapping, name: str, default: str = "", where: str = "") -> str:
    value = q.get(name, default)
    if value is None:
        return default
    if not isinstance(value, str) or len(value) > 100:
        raise ValueError(f"quantization_config.{where}{name} must be a short string, got {value!r}"[:200])
    return value


def _group_size(q: Mapping, names: tuple[str, ...], default: int, where: str = "") -> int:
    """A group size: a positive whole number, or -1 (one group per output row, GPTQ's convention)."""
    for name in names:
        value = q.get(name)
        if value is None:
            continue
        if value == -1 and not isinstance(value, bool):
            return -1
        return _int(q, name, 1, MAX_GROUP_SIZE, where=where)
    return default


def _grouped(base: str, label: str, value_bits: int, group: int, group_bits: int, **extra) -> WeightFormat:
    """A group-scaled layout; group -1 = one group per output row (the scales become row bits)."""
    fmt = WEIGHT_FORMATS[base]
    if group == -1:
        return replace(fmt, label=label, bits=Fraction(value_bits), value_bits=0, group=0, group_bits=0,
                       block_rows=1, row_bits=group_bits, **extra)
    return replace(fmt, label=label, bits=value_bits + Fraction(group_bits, group), value_bits=value_bits,
                   group=group, group_bits=group_bits, block_rows=1, **extra)


# --- methods ---------------------------------------------------------------------------------------------------

def _fp8(q: Mapping) -> tuple[str, WeightFormat, str, list[str], tuple[str, str]]:
    block = q.get("weight_block_size")
    scheme = _str(q, "activation_scheme", "dynamic")
    notes = []
    if _str(q, "scale_fmt"):
        notes.append(f"scale_fmt {_str(q, 'scale_fmt')}: block scales are powers of two, still stored as fp32")
    skip = ("modules_to_not_convert", "hf") if q.get("modules_to_not_convert") is not None else \
        ("ignored_layers", "glob")
    if block is None:
        fmt = WEIGHT_FORMATS["fp8"]
        if scheme == "static":
            fmt = replace(fmt, tensor_bits=fmt.tensor_bits + 32)
            notes.append("static activation scheme: an fp32 input scale per linear besides the weight scale")
        return "fp8", fmt, "FP8 E4M3, one fp32 scale per tensor", notes, skip
    if (not isinstance(block, (list, tuple)) or len(block) != 2
            or any(isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_GROUP_SIZE for b in block)):
        raise ValueError(f"quantization_config.weight_block_size must be two whole numbers, got {block!r}"[:200])
    rows, cols = block
    fmt = WEIGHT_FORMATS["fp8-block"]
    label = f"FP8 E4M3, {rows}x{cols} blocks with an fp32 scale each"
    if (rows, cols) != (128, 128):
        fmt = replace(fmt, label=label, bits=8 + Fraction(32, rows * cols), group=cols, block_rows=rows)
    return "fp8-block", fmt, label, notes, skip


def _ct_groups(q: Mapping) -> tuple[Mapping, str]:
    """compressed-tensors config_groups, checked, and the name of the group that targets every Linear (else the
    first)."""
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError("quantization_config.config_groups must be a non-empty JSON object")
    if len(groups) > MAX_CONFIG_GROUPS:
        raise ValueError(f"quantization_config.config_groups has {len(groups):,} groups; the limit is "
                         f"{MAX_CONFIG_GROUPS}")
    for name, group in groups.items():
        if not isinstance(group, Mapping):
            raise ValueError(f"quantization_config.config_groups.{name} must be a JSON object"[:200])
    return groups, next((n for n in groups if _targets_linear(groups[n])), next(iter(groups)))


def _targets_linear(group: Mapping) -> bool:
    targets = group.get("targets")
    return isinstance(targets, (list, tuple)) and "Linear" in targets


def _compressed_tensors(q: Mapping) -> tuple[str | None, WeightFormat | None, str, list[str], tuple[str, str]]:
    groups, primary = _ct_groups(q)
    return (*_ct_scheme(q, groups, primary), ("ignore", "ct"))


def _ct_scheme(q: Mapping, groups: Mapping, primary: str) -> tuple[str | None, WeightFormat | None, str, list[str]]:
    """The layout of one compressed-tensors group (`weights`: type, num_bits, strategy, group_size, ...)."""
    notes: list[str] = []
    where = f"config_groups.{primary}.weights."
    w = groups[primary].get("weights")
    if not isinstance(w, Mapping):
        return None, None, f"compressed-tensors group {primary} without weight quantization", notes
    kind = _str(w, "type", "int", where)
    bits = _int(w, "num_bits", 1, 16, where=where)
    if bits is None:
        raise ValueError(f"quantization_config.{where}num_bits is missing")
    strategy = _str(w, "strategy", "tensor", where)
    symmetric = _bool(w, "symmetric", True, where)
    actorder = w.get("actorder")
    if actorder is not None and not isinstance(actorder, (str, bool)):
        raise ValueError(f"quantization_config.{where}actorder must be a string, got {actorder!r}"[:200])
    group = _group_size(w, ("group_size",), 0, where)
    fmt_name = _str(q, "format")
    static_input = isinstance(groups[primary].get("input_activations"), Mapping) and \
        groups[primary]["input_activations"].get("dynamic") is False
    sym = "symmetric" if symmetric else "asymmetric (zero points stored)"
    if kind == "float" and bits == 8:
        input_bits = 16 if static_input else 0  # a bf16 input_scale per linear when activations are static
        if strategy == "channel":
            fmt = replace(WEIGHT_FORMATS["fp8-channel"], tensor_bits=input_bits)
            return "fp8-channel", fmt, "compressed-tensors FP8, a bf16 scale per output channel", notes
        if strategy == "tensor":
            fmt = replace(WEIGHT_FORMATS["fp8"], tensor_bits=16 + input_bits)
            return "fp8", fmt, "compressed-tensors FP8, a bf16 scale per tensor", notes
        if strategy == "block":
            block = w.get("block_structure")
            if (not isinstance(block, (list, tuple)) or len(block) != 2 or
                    any(isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_GROUP_SIZE for b in block)):
                raise ValueError(f"quantization_config.{where}block_structure must be two whole numbers, "
                                 f"got {block!r}"[:200])
            fmt = replace(WEIGHT_FORMATS["fp8-block"], bits=8 + Fraction(16, block[0] * block[1]), group=block[1],
                          block_rows=block[0], group_bits=16, tensor_bits=input_bits,
                          label=f"FP8 E4M3, {block[0]}x{block[1]} blocks with a bf16 scale each")
            return "fp8-block", fmt, fmt.label + " (compressed-tensors)", notes
    if kind == "int" and bits == 8 and strategy == "channel":
        fmt = replace(WEIGHT_FORMATS["w8a8-int8"], row_bits=16 + (0 if symmetric else 8))
        return "w8a8-int8", fmt, f"compressed-tensors INT8 W8A8, a bf16 scale per output channel, {sym}", notes
    if kind == "int" and bits <= 8 and strategy in ("group", "channel"):
        if strategy == "channel":
            group = -1
        elif group < 1:
            raise ValueError(f"quantization_config.{where}group_size must be a whole number for strategy group")
        # int32-packed values; a bf16 scale (+ a zero point packed like the values) per group; int64 weight_shape
        shown = "one group per row" if group == -1 else f"groups of {group}"
        label = f"compressed-tensors W{bits}A16, int{bits} {shown}, {sym}"
        fmt = _grouped("int4-g32" if group == 32 else "int4-g128", label, bits, group,
                       16 + (0 if symmetric else bits), col_bits=32 if actorder == "group" else 0)
        if actorder == "group":
            notes.append("actorder group: an int32 g_idx per input column")
        return ("int4-g32" if group == 32 else "int4-g128"), fmt, label, notes
    if kind == "float" and bits == 4 and strategy in ("tensor_group", "group") and group in (16, 32):
        if group == 16:  # NVFP4: fp8 scale per 16, fp32 weight_global_scale (+ input_global_scale)
            fmt = replace(WEIGHT_FORMATS["nvfp4"], tensor_bits=32 + (32 if groups[primary].get("input_activations")
                                                                    else 0))
            return "nvfp4", fmt, "compressed-tensors NVFP4, an fp8 scale per 16", notes
        fmt = replace(WEIGHT_FORMATS["mxfp4"], scope="linear", label="MXFP4 (compressed-tensors, every linear)")
        return "mxfp4", fmt, "compressed-tensors MXFP4, an E8M0 scale per 32", notes
    label = f"compressed-tensors {kind}{bits} {strategy} ({fmt_name or 'no format'})"
    return None, None, label, notes


def _modelopt(q: Mapping) -> tuple[str | None, WeightFormat | None, str, list[str], tuple[str, str]]:
    algo = _str(q, "quant_algo").upper()
    skip = ("exclude_modules", "glob") if q.get("exclude_modules") is not None else ("ignore", "glob")
    if algo == "FP8":  # fp8 weight, fp32 weight_scale and input_scale per tensor
        fmt = replace(WEIGHT_FORMATS["fp8"], tensor_bits=64)
        return "fp8", fmt, "ModelOpt FP8, fp32 weight and input scales per tensor", [], skip
    if algo == "NVFP4":
        group = _int(q, "group_size", 16, 16, 16)
        fmt = replace(WEIGHT_FORMATS["nvfp4"], tensor_bits=64)  # weight_scale_2 + input_scale, fp32 each
        return "nvfp4", fmt, f"ModelOpt NVFP4, an fp8 scale per {group}, fp32 weight_scale_2 and input_scale", \
            [], skip
    return None, None, f"ModelOpt {algo or 'without quant_algo'}", [], skip


def _gptq(q: Mapping) -> tuple[str, WeightFormat, str, list[str], tuple[str, str]]:
    bits = _int(q, "bits", 2, 8)
    if bits is None or bits not in (2, 3, 4, 8):
        raise ValueError(f"quantization_config.bits must be 2, 3, 4 or 8 for GPTQ, got {q.get('bits')!r}"[:200])
    group = _group_size(q, ("group_size",), 128)
    desc_act, sym = _bool(q, "desc_act", False), _bool(q, "sym", True)
    shown = "one group per row" if group == -1 else f"group {group}"
    label = f"GPTQ {bits}-bit, {shown}{', desc_act' if desc_act else ''}, {'symmetric' if sym else 'asymmetric'}"
    # qweight, qzeros (bits per group, stored even when symmetric), fp16 scales, int32 g_idx per input column
    fmt = _grouped("gptq-4bit", label, bits, group, 16 + bits)
    notes = []
    if q.get("modules_in_block_to_quantize") is not None or q.get("dynamic") is not None:
        notes.append("GPTQ per-module settings (modules_in_block_to_quantize / dynamic) are not read: every "
                     "decoder linear is assumed quantized")
    return "gptq-4bit", fmt, label, notes, ("modules_to_not_convert", "hf")


def _awq(q: Mapping) -> tuple[str, WeightFormat, str, list[str], tuple[str, str]]:
    bits = _int(q, "bits", 2, 8) or _int(q, "w_bit", 2, 8) or 4
    group = _group_size(q, ("group_size", "q_group_size"), 128)
    zero_point = _bool(q, "zero_point", True)
    shown = "one group per row" if group == -1 else f"group {group}"
    label = f"AWQ {bits}-bit, {shown}{'' if zero_point else ', no zero point'}"
    fmt = _grouped("awq-4bit", label, bits, group, 16 + bits)  # qzeros stored by the GEMM layout either way
    return "awq-4bit", fmt, label, [], ("modules_to_not_convert", "hf")


def _bitsandbytes(q: Mapping) -> tuple[str | None, WeightFormat | None, str, list[str], tuple[str, str]]:
    skip = ("llm_int8_skip_modules", "hf")
    if _bool(q, "load_in_8bit", False):
        return "int8", WEIGHT_FORMATS["int8"], "bitsandbytes LLM.int8, an fp32 statistic per row", [], skip
    if not _bool(q, "load_in_4bit", False):
        return None, None, "bitsandbytes without load_in_4bit or load_in_8bit", [], skip
    kind = _str(q, "bnb_4bit_quant_type", "fp4").lower()
    if kind not in ("nf4", "fp4"):
        raise ValueError(f"quantization_config.bnb_4bit_quant_type must be nf4 or fp4, got {kind!r}"[:200])
    double = _bool(q, "bnb_4bit_use_double_quant", False)
    fmt = WEIGHT_FORMATS[f"{kind}-dq" if double and kind == "nf4" else kind]
    if double and kind == "fp4":
        fmt = replace(WEIGHT_FORMATS["nf4-dq"], id="fp4", label="FP4 + double quantization (bitsandbytes)")
    label = f"bitsandbytes {kind.upper()}{' + double quantization' if double else ''}, blocks of 64"
    return ("nf4-dq" if double and kind == "nf4" else kind), fmt, label, [], skip


def _mxfp4(q: Mapping) -> tuple[str, WeightFormat, str, list[str], tuple[str, str]]:
    return "mxfp4", WEIGHT_FORMATS["mxfp4"], "MXFP4 MoE experts (an E8M0 scale per 32)", [], \
        ("modules_to_not_convert", "hf")


def _fbgemm_fp8(q: Mapping) -> tuple[str, WeightFormat, str, list[str], tuple[str, str]]:
    fmt = replace(WEIGHT_FORMATS["fp8-channel"], row_bits=32)  # fp32 weight_scale [out, 1]
    return "fp8-channel", fmt, "FBGEMM FP8, an fp32 scale per output channel", [], ("modules_to_not_convert", "hf")


METHODS = {"fp8": _fp8, "compressed-tensors": _compressed_tensors, "modelopt": _modelopt, "gptq": _gptq,
           "awq": _awq, "bitsandbytes": _bitsandbytes, "mxfp4": _mxfp4, "fbgemm_fp8": _fbgemm_fp8}


def _quantization_block(config: Mapping) -> tuple[Mapping | None, Mapping]:
    """The quantization_config and the (text) config that holds it."""
    q = config.get("quantization_config")
    holder = config
    if q is None:
        for key in NESTED_TEXT_CONFIGS:
            inner = config.get(key)
            if isinstance(inner, Mapping) and inner.get("quantization_config") is not None:
                q, holder = inner["quantization_config"], inner
                break
    if q is None:
        return None, holder
    if not isinstance(q, Mapping):
        raise ValueError("quantization_config must be a JSON object")
    if isinstance(q.get("quantization"), Mapping):  # ModelOpt hf_quant_config.json: {"producer", "quantization"}
        q = {"quant_method": "modelopt", **q["quantization"]}
    return q, holder


def _method(q: Mapping) -> str:
    method = q.get("quant_method")
    if method is None:
        if q.get("load_in_4bit") or q.get("load_in_8bit"):
            return "bitsandbytes"
        return "modelopt" if q.get("quant_algo") is not None else ""
    if not isinstance(method, str) or len(method) > 100:
        raise ValueError(f"quantization_config.quant_method must be a short string, got {method!r}"[:200])
    return method.lower()


def checkpoint_format(config: Mapping) -> CheckpointFormat | None:
    """The weight format a config.json's quantization_config declares, or None when it declares none.

    An unrecognised quant_method gives a CheckpointFormat with format_id None (weights assumed 16-bit) and a note;
    malformed values of the fields read raise ValueError naming the field."""
    if not isinstance(config, Mapping):
        raise ValueError("config must be a JSON object")
    q, holder = _quantization_block(config)
    if q is None:
        return None
    method = _method(q)
    model_type = holder.get("model_type") if isinstance(holder.get("model_type"), str) else ""
    layers = holder.get("num_hidden_layers")
    num_layers = layers if isinstance(layers, int) and not isinstance(layers, bool) and 0 < layers <= MAX_LAYERS else 0
    reader = METHODS.get(method)
    if reader is None:
        shown = method or "(no quant_method)"
        return CheckpointFormat(None, None, frozenset(), f"16-bit (quantization_config {shown!r} not recognised)",
                                method, (f"quantization_config {shown[:40]!r} not recognised; weights assumed "
                                         f"16-bit",))
    format_id, layout, label, notes, (skip_field, style) = reader(q)
    unquantized, unmatched = unquantized_roles(q.get(skip_field), style, skip_field, model_type, num_layers)
    if method == "fp8" and model_type == "deepseek_v32":
        # the lightning indexer's weights_proj is a bf16 Linear in the fp8 checkpoint (deepseek-ai/DeepSeek-V3.2-Exp
        # inference/model.py Indexer: `Linear(self.dim, self.n_heads, dtype=torch.get_default_dtype())`)
        unquantized |= {"attn_index_weights"}
    if format_id is None:
        return CheckpointFormat(None, None, frozenset(), f"16-bit ({label} not supported)", method,
                                (f"quantization_config {method!r}: {label} is not a layout the estimate knows; "
                                 f"weights assumed 16-bit",))
    groups, covers_linear = (), True
    if method == "compressed-tensors":
        groups, covers_linear, group_notes = _named_groups(q, model_type, num_layers)
        notes += group_notes
    kept = describe_unquantized(unquantized | ALWAYS_16_BIT)
    summary = f"Checkpoint format from quantization_config: {label}; {kept} unquantized (16-bit, as are the norms)"
    if unmatched:
        shown = ", ".join(map(repr, unmatched[:4])) + (f" and {len(unmatched) - 4:,} more" if len(unmatched) > 4
                                                       else "")
        notes.append(f"{skip_field} entries that name no quantizable weight the estimate counts (vectors, vision "
                     f"tower, MTP layers): {shown}")
    return CheckpointFormat(format_id, layout, unquantized, label, method, (summary, *notes), groups, covers_linear)


def _named_groups(q: Mapping, model_type: str, num_layers: int
                  ) -> tuple[tuple[tuple[WeightFormat, frozenset[str]], ...], bool, list[str]]:
    """compressed-tensors groups whose targets are module names or regexes ("mixed-precision" checkpoints: FP8
    attention and NVFP4 experts, say), each as (its layout for any 2-D weight it names, the roles it names)."""
    config_groups, primary = _ct_groups(q)
    covers_linear = _targets_linear(config_groups[primary])
    named, notes = [], []
    for name, group in config_groups.items():
        if _targets_linear(group):
            if name != primary:
                notes.append(f"config_groups.{name} also targets Linear; {primary}'s format is used for it")
            continue
        roles, _ = unquantized_roles(group.get("targets"), "ct", f"config_groups.{name}.targets", model_type,
                                     num_layers)
        if not roles:
            continue
        _, layout, label, _ = _ct_scheme(q, config_groups, name)
        named.append((replace(layout, scope="all") if layout else WEIGHT_FORMATS["bf16"], roles))
        notes.append(f"config_groups.{name}: {label if layout else label + ', estimated 16-bit'} on "
                     f"{describe_unquantized(roles) or 'the modules it names'}")
    if not covers_linear:
        notes.append("no config group targets every Linear: decoder linears that no group names stay 16-bit")
    return tuple(named), covers_linear, notes
