"""Vision towers of multimodal configs: their exact parameter counts and how many tokens an image becomes.

A multimodal `config.json` (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5, Llama 4, Gemma 3, Gemma 4, Mistral 3, Kimi K2.5,
Phi-4-multimodal, LLaVA with a CLIP, SigLIP or Pixtral encoder) keeps the language model under `text_config` (or at
the top level) and the vision encoder under `vision_config`. The language model is read by `hf_config`; this module
counts what it leaves out: the vision encoder and the projector (merger, adapter) that maps its features into the
language model's width, and the audio towers of Gemma 4 and Phi-4-multimodal. Every tensor is counted as the
transformers v5.24.0 modeling code builds it, so `parameters` equals `sum(p.numel())` over the vision submodules of
the model built from the config:

    patch embedding   = channels x [temporal x] patch^2 x h  (+ h with a bias)   Conv2d/Conv3d or Linear on patches
    positions         = learned table rows x h   (Qwen3-VL 2304, Llama 4 (image/patch)^2 + 1, SigLIP (image/patch)^2)
    encoder layer     = q, k, v, o (h x h, biases on most) + MLP (fc1/fc2, or gate/up/down) + 2 or 4 norms
    projector         = merger / adapter / projection Linear(s) into the text width  (+ norms)

with h the vision width. Sources, each at transformers v5.24.0 (huggingface/transformers, `src/transformers/models/`):
`qwen2_vl/modeling_qwen2_vl.py`, `qwen2_5_vl/modeling_qwen2_5_vl.py`, `qwen3_vl/modeling_qwen3_vl.py` (also
`qwen3_vl_moe`), `qwen3_5/modeling_qwen3_5.py` (also `qwen3_5_moe`), `llama4/modeling_llama4.py`,
`gemma3/modeling_gemma3.py` with `siglip/modeling_siglip.py`, `gemma4/modeling_gemma4.py`,
`llava/modeling_llava.py` with `clip/modeling_clip.py`,
`mistral3/modeling_mistral3.py` with `pixtral/modeling_pixtral.py`, `kimi_k25/modeling_kimi_k25.py`,
`phi4_multimodal/modeling_phi4_multimodal.py`.
tests/test_vision.py pins the counts to transformers' own builds.

Image tokens follow each family's processor (the `_get_num_multimodal_tokens` that vLLM also calls, or the prompt
string the processor writes); see `image_tokens`. Only the standard library and `estimator.checks` are imported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .checks import quoted

# Bounds on the fields read (a vision encoder is ~0.1-1B parameters; these are far above any published one and keep
# a hostile config from asking for absurd loops or numbers)
MAX_WIDTH = 1_000_000  # hidden / intermediate / output widths
MAX_DEPTH = 2_000  # encoder layers
MAX_HEADS = 16_384
MAX_PATCH = 1_024  # pixels on a patch side
MAX_IMAGE_SIDE = 1_000_000  # pixels on an image side (processor inputs and config image sizes)
MAX_POSITIONS = 10_000_000  # rows of a learned position table
MAX_CHANNELS = 64
MAX_MERGE = 64  # patches merged per side
MAX_LIST = 2_000  # entries of a list field (deepstack layer indexes, feature layers)
MAX_PIXELS = 10**12  # Qwen pixel bounds

# Qwen image processors' pixel bounds as the models publish them in preprocessor_config.json (transformers'
# Qwen2VLImageProcessor reads them from there; its class defaults are 3,136..1,003,520)
QWEN25_VL_PIXELS = (3_136, 12_845_056)  # Qwen2-VL, Qwen2.5-VL: "min_pixels": 3136, "max_pixels": 12845056
QWEN3_VL_PIXELS = (65_536, 16_777_216)  # Qwen3-VL / Qwen3.5: "size": {"shortest_edge": 65536, "longest_edge": 16777216}


@dataclass(frozen=True)
class VisionTower:
    """The vision side of a multimodal model: its weights and the numbers its image processor works with."""

    family: str  # model_type of the top-level config, e.g. "qwen3_vl"
    parameters: int  # vision encoder + the projector/merger/adapter outside the language model
    audio_parameters: int = 0  # audio tower (0: none, or not counted; the notes say which)
    patch_size: int = 0  # pixels on a patch side
    merge: int = 1  # patches merged per side into one token (Qwen 2: tokens = patches / 4)
    notes: tuple[str, ...] = ()  # what was counted, from which transformers module, and what was left out
    token_rule: str = ""  # how image_tokens counts: "qwen", "fixed", "llama4", "pixtral", "gemma4", "kimi", "" unknown
    image_size: int = 0  # pixels: fixed input (Gemma 3), tile side (Llama 4), longest edge (Pixtral), side cap (Kimi)
    tokens_per_image: int = 0  # fixed tokens per image (Gemma 3), or the soft-token budget (Gemma 4)
    max_patches: int = 0  # tiles per image (Llama 4) or patch budget (Kimi K2.5)
    min_pixels: int = 0  # Qwen smart-resize bounds on width x height
    max_pixels: int = 0


class _Fields:
    """Bounded reads from one (sub-)config; errors name the field with its path, e.g. `vision_config.depth`."""

    def __init__(self, config: Mapping, path: str = ""):
        self.config, self.path = config, path

    def _name(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def whole(self, names: str | tuple[str, ...], default: int | None, high: int = MAX_WIDTH, low: int = 1) -> int:
        """The first of `names` present, as a whole number in low..high; `default` when none is (None: required)."""
        names = (names,) if isinstance(names, str) else names
        for name in names:
            value = self.config.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{self._name(name)} must be a whole number between {low:,} and {high:,}, "
                                 f"got {quoted(value)}")
            if not low <= value <= high:
                shown = f"{value:,}" if abs(value) < 10**24 else f"a {len(str(abs(value)))}-digit number"
                raise ValueError(f"{self._name(name)} must be between {low:,} and {high:,}, got {shown}")
            return value
        if default is None:
            raise ValueError(f"config.json is missing {self._name(names[0])}")
        return default

    def flag(self, name: str, default: bool) -> bool:
        value = self.config.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{self._name(name)} must be true or false, got {quoted(value)}")
        return value

    def ratio(self, name: str, default: float) -> float:
        """A fraction in [1 / MAX_MERGE, 1] (Llama 4 pixel_shuffle_ratio)."""
        value = self.config.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 1 / MAX_MERGE <= value <= 1:
            raise ValueError(f"{self._name(name)} must be a number between {1 / MAX_MERGE:g} and 1, "
                             f"got {quoted(value)}")
        return float(value)

    def int_list(self, name: str, default: tuple[int, ...], high: int = MAX_DEPTH) -> tuple[int, ...]:
        """A short list of whole numbers (layer indexes, kernel sizes)."""
        value = self.config.get(name)
        if value is None:
            return default
        if not isinstance(value, list) or len(value) > MAX_LIST:
            raise ValueError(f"{self._name(name)} must be a list of at most {MAX_LIST:,} whole numbers")
        if any(isinstance(v, bool) or not isinstance(v, int) or not -high <= v <= high for v in value):
            raise ValueError(f"{self._name(name)} must hold whole numbers between {-high:,} and {high:,}")
        return tuple(value)


def _linear(n_in: int, n_out: int, bias: bool = True) -> int:
    """nn.Linear(n_in, n_out): weight (n_out, n_in) [+ bias (n_out,)]."""
    return n_in * n_out + (n_out if bias else 0)


def _mlp(h: int, inner: int, bias: bool = True, gated: bool = False) -> int:
    """fc1 + fc2 (GELU MLP) or gate + up + down (gated MLP)."""
    return (3 if gated else 2) * h * inner + ((2 * inner + h if gated else inner + h) if bias else 0)


# --- Qwen ---------------------------------------------------------------------------------------------------------

def _qwen2_vl(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # Qwen2VisionTransformerPretrainedModel (qwen2_vl/modeling_qwen2_vl.py): Conv3d patch embed without bias; blocks
    # of LayerNorm x2, qkv and proj with biases, MLP fc1/fc2 (embed_dim x mlp_ratio) with biases; PatchMerger:
    # LayerNorm(e), Linear(4e, 4e), Linear(4e, hidden_size). Here hidden_size is the output (language) width and
    # embed_dim the vision width. Qwen2VLVisionConfig defaults: depth 32, embed 1280, ratio 4, hidden 3584, patch 14
    e, out = v.whole("embed_dim", 1280), v.whole("hidden_size", 3584)
    ratio = v.whole("mlp_ratio", 4, MAX_MERGE)  # an int in Qwen2VLVisionConfig (strict: 4.0 is refused there too)
    depth, patch = v.whole("depth", 32, MAX_DEPTH), v.whole("patch_size", 14, MAX_PATCH)
    merge, temporal = v.whole("spatial_merge_size", 2, MAX_MERGE), v.whole("temporal_patch_size", 2, MAX_PATCH)
    channels = v.whole("in_channels", 3, MAX_CHANNELS)
    inner = e * ratio
    block = 2 * 2 * e + _linear(e, 3 * e) + _linear(e, e) + _mlp(e, inner)
    merged = e * merge**2
    merger = 2 * e + _linear(merged, merged) + _linear(merged, out)
    total = channels * temporal * patch**2 * e + depth * block + merger
    note = (f"counted the patch embedding, {depth} vision blocks and the patch merger into width {out} "
            "(transformers v5.24.0 models/qwen2_vl/modeling_qwen2_vl.py)")
    return VisionTower(family, total, patch_size=patch, merge=merge, notes=(note,), token_rule="qwen",
                       min_pixels=QWEN25_VL_PIXELS[0], max_pixels=QWEN25_VL_PIXELS[1])


def _qwen2_5_vl(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # Qwen2_5_VisionTransformerPretrainedModel: Conv3d patch embed without bias; blocks of RMSNorm x2, qkv and proj
    # with biases, gated SiLU MLP with biases; Qwen2_5_VLPatchMerger: RMSNorm(h), Linear(4h, 4h), Linear(4h, out).
    # Qwen2_5_VLVisionConfig defaults: depth 32, hidden 3584, intermediate 3420, patch 14, merge 2, temporal 2, out 3584
    h, inner = v.whole("hidden_size", 3584), v.whole("intermediate_size", 3420)
    depth, patch = v.whole("depth", 32, MAX_DEPTH), v.whole("patch_size", 14, MAX_PATCH)
    merge, temporal = v.whole("spatial_merge_size", 2, MAX_MERGE), v.whole("temporal_patch_size", 2, MAX_PATCH)
    channels, out = v.whole("in_channels", 3, MAX_CHANNELS), v.whole("out_hidden_size", 3584)
    block = 2 * h + _linear(h, 3 * h) + _linear(h, h) + _mlp(h, inner, gated=True)
    merged = h * merge**2
    merger = h + _linear(merged, merged) + _linear(merged, out)
    total = channels * temporal * patch**2 * h + depth * block + merger
    note = (f"counted the patch embedding, {depth} vision blocks and the patch merger into width {out} "
            "(transformers v5.24.0 models/qwen2_5_vl/modeling_qwen2_5_vl.py)")
    return VisionTower(family, total, patch_size=patch, merge=merge, notes=(note,), token_rule="qwen",
                       min_pixels=QWEN25_VL_PIXELS[0], max_pixels=QWEN25_VL_PIXELS[1])


def _qwen3_vl(v: _Fields, top: _Fields, family: str, deepstack: bool = True) -> VisionTower:
    # Qwen3VLVisionModel: Conv3d patch embed with bias, learned positions (num_position_embeddings x h), blocks of
    # LayerNorm x2, qkv and proj with biases, GELU MLP fc1/fc2 with biases; merger: LayerNorm(h), Linear(4h, 4h),
    # Linear(4h, out); one more merger per deepstack layer with its LayerNorm over 4h. Qwen3.5's vision model
    # (qwen3_5/modeling_qwen3_5.py Qwen3_5VisionModel) is the same without the deepstack mergers.
    h, inner = v.whole("hidden_size", 1152), v.whole("intermediate_size", 4304)
    depth, patch = v.whole("depth", 27, MAX_DEPTH), v.whole("patch_size", 16, MAX_PATCH)
    merge, temporal = v.whole("spatial_merge_size", 2, MAX_MERGE), v.whole("temporal_patch_size", 2, MAX_PATCH)
    channels, out = v.whole("in_channels", 3, MAX_CHANNELS), v.whole("out_hidden_size", 3584)
    positions = v.whole("num_position_embeddings", 2304, MAX_POSITIONS)
    stacks = len(v.int_list("deepstack_visual_indexes", (8, 16, 24))) if deepstack else 0
    block = 2 * 2 * h + _linear(h, 3 * h) + _linear(h, h) + _mlp(h, inner)
    merged = h * merge**2
    merger = _linear(merged, merged) + _linear(merged, out)
    embed = channels * temporal * patch**2 * h + h + positions * h
    total = embed + depth * block + (2 * h + merger) + stacks * (2 * merged + merger)
    source = "qwen3_5/modeling_qwen3_5.py" if family.startswith("qwen3_5") else f"{family}/modeling_{family}.py"
    extra = f" and {stacks} deepstack mergers" if stacks else ""
    note = (f"counted the patch embedding, {positions:,} learned positions, {depth} vision blocks, the merger into "
            f"width {out}{extra} (transformers v5.24.0 models/{source})")
    return VisionTower(family, total, patch_size=patch, merge=merge, notes=(note,), token_rule="qwen",
                       min_pixels=QWEN3_VL_PIXELS[0], max_pixels=QWEN3_VL_PIXELS[1])


def _qwen3_5(v: _Fields, top: _Fields, family: str) -> VisionTower:
    return _qwen3_vl(v, top, family, deepstack=False)


# --- Llama 4 ------------------------------------------------------------------------------------------------------

def _llama4(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # Llama4VisionModel: patch embedding Linear(C p^2, h) without bias, class embedding (h), positions
    # ((image/p)^2 + 1) x h, LayerNorm pre and post, layers of q, k, v, o with biases, GELU MLP fc1/fc2 with biases,
    # 2 LayerNorms; vision_adapter (Llama4VisionPixelShuffleMLP): fc1 (intermediate -> projector_input_dim) and
    # fc2 (projector_output_dim^2), no biases. Llama4MultiModalProjector: Linear(vision_output_dim, text h), no bias.
    # Llama4VisionConfig defaults: h 768, 34 layers, intermediate 5632, image 448, patch 14, output 7680
    h, inner = v.whole("hidden_size", 768), v.whole("intermediate_size", 5632)
    layers, patch = v.whole("num_hidden_layers", 34, MAX_DEPTH), v.whole("patch_size", 14, MAX_PATCH)
    image, channels = v.whole("image_size", 448, MAX_IMAGE_SIDE), v.whole("num_channels", 3, MAX_CHANNELS)
    proj_in, proj_out = v.whole("projector_input_dim", 4096), v.whole("projector_output_dim", 4096)
    output, text_h = v.whole("vision_output_dim", 7680), _text_hidden(top, 5120)
    shuffle = v.ratio("pixel_shuffle_ratio", 0.5)
    if patch > image:
        raise ValueError(f"vision_config.patch_size ({patch}) cannot exceed vision_config.image_size ({image})")
    positions = (image // patch) ** 2 + 1
    layer = 4 * _linear(h, h) + _mlp(h, inner) + 2 * 2 * h
    encoder = channels * patch**2 * h + h + positions * h + 2 * 2 * h + layers * layer
    adapter = inner * proj_in + proj_out * proj_out
    total = encoder + adapter + output * text_h
    note = (f"counted the patch embedding, {positions:,} learned positions, {layers} vision layers, the pixel-shuffle "
            f"adapter and the projector into width {text_h} (transformers v5.24.0 models/llama4/modeling_llama4.py)")
    # Llama4Processor: downsample_ratio = round(1 / pixel_shuffle_ratio^2) patches of a tile become one token
    # (0.5: 4, a 2 x 2 merge); a tile is image_size pixels (Llama4ImageProcessor size 336 = the vision image_size)
    downsample = round(1 / shuffle**2)
    per_tile = (image // patch) ** 2 // downsample
    return VisionTower(family, total, patch_size=patch, merge=max(1, math.isqrt(downsample)), notes=(note,),
                       token_rule="llama4", image_size=image, tokens_per_image=per_tile, max_patches=16)


# --- Gemma --------------------------------------------------------------------------------------------------------

def _gemma3(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # SiglipVisionModel (siglip/modeling_siglip.py): Conv2d patch embedding with bias, positions (image/p)^2 x h,
    # layers of LayerNorm x2, q, k, v, out with biases, GELU MLP fc1/fc2 with biases; post LayerNorm; the attention
    # pooling head only when vision_use_head (Gemma 3 sets it false). Gemma3MultiModalProjector:
    # mm_input_projection_weight (h x text h) and an RMSNorm over h. SiglipVisionConfig defaults: h 768, 12 layers,
    # intermediate 3072, image 224, patch 16, vision_use_head true
    h, text_h = v.whole("hidden_size", 768), _text_hidden(top, 2304)
    tokens = top.whole("mm_tokens_per_image", 256, MAX_POSITIONS)
    encoder, patch, image, what = _siglip(v)
    total = encoder + h * text_h + h
    note = (f"counted the SigLIP encoder ({what}) and the projector into width {text_h} (transformers v5.24.0 "
            "models/siglip/modeling_siglip.py, models/gemma3/modeling_gemma3.py)")
    side = math.isqrt(tokens)  # Gemma3MultiModalProjector pools the patch grid down to mm_tokens_per_image
    merge = max(1, (image // patch) // side) if side else 1
    return VisionTower(family, total, patch_size=patch, merge=merge, notes=(note,), token_rule="fixed",
                       image_size=image, tokens_per_image=tokens)


def _siglip(v: _Fields) -> tuple[int, int, int, str]:
    """SiglipVisionModel (siglip/modeling_siglip.py): Conv2d patch embedding with bias, positions (image/p)^2 x h,
    layers of LayerNorm x2, q, k, v, out with biases, GELU MLP fc1/fc2 with biases; post LayerNorm; the attention
    pooling head (probe, nn.MultiheadAttention, LayerNorm, MLP) when vision_use_head. SiglipVisionConfig defaults:
    h 768, 12 layers, intermediate 3072, image 224, patch 16, vision_use_head true. Returns (parameters, patch,
    image, a few words on what was counted)."""
    h, inner = v.whole("hidden_size", 768), v.whole("intermediate_size", 3072)
    layers, patch = v.whole("num_hidden_layers", 12, MAX_DEPTH), v.whole("patch_size", 16, MAX_PATCH)
    image, channels = v.whole("image_size", 224, MAX_IMAGE_SIDE), v.whole("num_channels", 3, MAX_CHANNELS)
    if patch > image:
        raise ValueError(f"vision_config.patch_size ({patch}) cannot exceed vision_config.image_size ({image})")
    positions = (image // patch) ** 2
    layer = 2 * 2 * h + 4 * _linear(h, h) + _mlp(h, inner)
    total = channels * patch**2 * h + h + positions * h + layers * layer + 2 * h
    head = v.flag("vision_use_head", True)
    if head:  # probe, nn.MultiheadAttention (in_proj 3h x h + 3h, out_proj), LayerNorm, MLP
        total += h + _linear(h, 3 * h) + _linear(h, h) + 2 * h + _mlp(h, inner)
    return total, patch, image, f"{layers} layers, {positions:,} positions{', pooling head' if head else ''}"


def _clip(v: _Fields) -> tuple[int, int, int, str]:
    """CLIPVisionModel (clip/modeling_clip.py): class embedding (h), Conv2d patch embedding without bias, positions
    ((image/p)^2 + 1) x h, pre and post LayerNorm, layers of LayerNorm x2, q, k, v, out with biases, MLP fc1/fc2 with
    biases. CLIPVisionConfig defaults: h 768, 12 layers, intermediate 3072, image 224, patch 32."""
    h, inner = v.whole("hidden_size", 768), v.whole("intermediate_size", 3072)
    layers, patch = v.whole("num_hidden_layers", 12, MAX_DEPTH), v.whole("patch_size", 32, MAX_PATCH)
    image, channels = v.whole("image_size", 224, MAX_IMAGE_SIDE), v.whole("num_channels", 3, MAX_CHANNELS)
    if patch > image:
        raise ValueError(f"vision_config.patch_size ({patch}) cannot exceed vision_config.image_size ({image})")
    positions = (image // patch) ** 2 + 1
    layer = 2 * 2 * h + 4 * _linear(h, h) + _mlp(h, inner)
    total = h + channels * patch**2 * h + positions * h + 2 * 2 * h + layers * layer
    return total, patch, image, f"{layers} layers, {positions:,} positions"


def _gemma4(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # Gemma4VisionModel: input_proj Linear(3 p^2, h) without bias, position table (2, position_embedding_size, h),
    # layers of q, k, v, o (no biases; k and v with num_key_value_heads), q/k RMSNorms over head_dim, 4 RMSNorms,
    # gated MLP without biases; the pooler has no weights. Gemma4MultimodalEmbedder (embed_vision):
    # Linear(output_proj_dims or h, text h) without bias; its pre-projection RMSNorm has no scale.
    # Gemma4VisionConfig defaults: h 768, 16 layers, 12 heads (12 KV), head_dim 64, intermediate 3072, patch 16
    h, inner = v.whole("hidden_size", 768), v.whole("intermediate_size", 3072)
    layers, patch = v.whole("num_hidden_layers", 16, MAX_DEPTH), v.whole("patch_size", 16, MAX_PATCH)
    heads = v.whole("num_attention_heads", 12, MAX_HEADS)
    kv_heads, head_dim = v.whole("num_key_value_heads", 12, MAX_HEADS), v.whole("head_dim", 64)
    positions = v.whole("position_embedding_size", 10 * 1024, MAX_POSITIONS)
    pooling = v.whole("pooling_kernel_size", 3, MAX_MERGE)
    projected, text_h = v.whole("output_proj_dims", h), _text_hidden(top, 2304)
    soft_tokens = top.whole("vision_soft_tokens_per_image", 280, MAX_POSITIONS)
    attention = h * heads * head_dim + 2 * h * kv_heads * head_dim + heads * head_dim * h + 2 * head_dim
    layer = attention + 4 * h + _mlp(h, inner, bias=False, gated=True)
    total = 3 * patch**2 * h + 2 * positions * h + layers * layer + projected * text_h
    notes = [f"counted the patch embedding, the 2 x {positions:,} position table, {layers} vision layers and the "
             f"embedder into width {text_h} (transformers v5.24.0 models/gemma4/modeling_gemma4.py)"]
    if v.flag("standardize", False):
        notes.append(f"the standardize buffers std_bias and std_scale (2 x {h:,} values) are in the checkpoint but are "
                     "buffers, not parameters, and are not counted")
    if v.flag("use_clipped_linears", False):
        notes.append("the clipped linears' min/max buffers (4 scalars each) are not parameters and are not counted")
    audio, audio_config = 0, top.config.get("audio_config")
    if audio_config is not None:
        if not isinstance(audio_config, Mapping):
            raise ValueError(f"audio_config must be a JSON object ({{...}}), got {quoted(audio_config)}")
        audio, note = _gemma4_audio(_Fields(audio_config, "audio_config"), top)
        notes.append(note)
    return VisionTower(family, total, audio_parameters=audio, patch_size=patch, merge=pooling, notes=tuple(notes),
                       token_rule="gemma4", tokens_per_image=soft_tokens, max_patches=soft_tokens * pooling**2)


def _gemma4_audio(a: _Fields, top: _Fields) -> tuple[int, str]:
    # Gemma4AudioModel (a Conformer): subsample_conv_projection of two Conv2d 3 x 3 without bias, each with a
    # LayerNorm without bias, and input_proj_linear ((C0 // 4) x C1 -> h); per layer two macaron feed-forwards
    # (h -> 4h -> h, pre and post RMSNorm), attention (q, k, v, relative_k_proj of heads x head_dim, post h x h,
    # per_dim_scale), a light conv block (linear_start h -> 2h, depthwise Conv1d h x kernel, linear_end, 2 RMSNorms)
    # and 3 RMSNorms; output_proj (h -> output_proj_dims, with bias). embed_audio: Linear(output_proj_dims, text h).
    # Gemma4AudioConfig defaults: h 1024, 12 layers, 8 heads, channels (128, 32), kernel 5, output 1536
    h, layers = a.whole("hidden_size", 1024), a.whole("num_hidden_layers", 12, MAX_DEPTH)
    heads, kernel = a.whole("num_attention_heads", 8, MAX_HEADS), a.whole("conv_kernel_size", 5, MAX_PATCH)
    channels = a.int_list("subsampling_conv_channels", (128, 32), MAX_WIDTH)
    if len(channels) != 2 or min(channels) < 1:
        raise ValueError("audio_config.subsampling_conv_channels must be two whole numbers from 1, e.g. [128, 32]")
    out, text_h = a.whole("output_proj_dims", 1536), _text_hidden(top, 2304)
    if heads > h:
        raise ValueError(f"audio_config.num_attention_heads ({heads}) cannot exceed audio_config.hidden_size ({h})")
    width = heads * (h // heads)  # heads x head_dim
    c0, c1 = channels
    subsample = 9 * c0 + c0 + 9 * c0 * c1 + c1 + (c0 // 4) * c1 * h
    feed_forward = 2 * h * 4 * h + 2 * h
    attention = 4 * h * width + h * h + h // heads
    light_conv = h * 2 * h + h * h + h * kernel + 2 * h
    layer = 2 * feed_forward + attention + light_conv + 3 * h
    total = subsample + layers * layer + _linear(h, out) + out * text_h
    note = (f"counted the audio Conformer ({layers} layers) and its embedder into width {text_h} "
            "(transformers v5.24.0 models/gemma4/modeling_gemma4.py Gemma4AudioModel)")
    return total, note


# --- Phi-4-multimodal ----------------------------------------------------------------------------------------------

def _phi4_multimodal(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # Phi4MultimodalImageEmbedding: img_processor (Phi4MultimodalVisionModel, a SigLIP encoder whose attention pooling
    # head is always built: Conv2d patch embedding with bias, (image/p)^2 positions, layers of 2 LayerNorms, q, k, v,
    # out and fc1/fc2 with biases, post LayerNorm, head), img_projection_up (h -> text h) and img_projection_down
    # (text h -> text h) with biases, and the global / sub-image feature extensors (h each). The audio side
    # (Phi4MultimodalAudioEmbedding) is counted by _phi4_audio. Phi4MultimodalVisionConfig defaults: h 1152, 27 layers,
    # intermediate 4304, image 448, patch 14. The language model's fields sit at the top level (text h = hidden_size).
    h, inner = v.whole("hidden_size", 1152), v.whole("intermediate_size", 4304)
    layers, patch = v.whole("num_hidden_layers", 27, MAX_DEPTH), v.whole("patch_size", 14, MAX_PATCH)
    image, channels = v.whole("image_size", 448, MAX_IMAGE_SIDE), v.whole("num_channels", 3, MAX_CHANNELS)
    text_h = top.whole("hidden_size", 3072)
    if patch > image:
        raise ValueError(f"vision_config.patch_size ({patch}) cannot exceed vision_config.image_size ({image})")
    layer = 2 * 2 * h + 4 * _linear(h, h) + _mlp(h, inner)
    head = h + _linear(h, 3 * h) + _linear(h, h) + 2 * h + _mlp(h, inner)
    encoder = channels * patch**2 * h + h + (image // patch) ** 2 * h + layers * layer + 2 * h + head
    total = encoder + _linear(h, text_h) + _linear(text_h, text_h) + 2 * h
    audio_config = top.config.get("audio_config")
    if audio_config is not None and not isinstance(audio_config, Mapping):
        raise ValueError(f"audio_config must be a JSON object ({{...}}), got {quoted(audio_config)}")
    audio, audio_note = _phi4_audio(_Fields(audio_config or {}, "audio_config"), text_h)
    notes = (f"counted the SigLIP image encoder ({layers} layers, pooling head) and its projection into width {text_h} "
             "(transformers v5.24.0 models/phi4_multimodal/modeling_phi4_multimodal.py)", audio_note,
             "image tokens of Phi-4-multimodal (dynamic HD crops) are not modelled")
    if audio_config is None:
        notes += ("config.json has no audio_config: the audio tower was counted with transformers' defaults",)
    return VisionTower(family, total, audio_parameters=audio, patch_size=patch, merge=2, notes=notes,
                       image_size=image)


def _phi4_audio(a: _Fields, text_h: int) -> tuple[int, str]:
    # Phi4MultimodalAudioModel (a Conformer): NeMo conv subsampling (Conv2d 1 -> C 3 x 3, then per further halving a
    # depthwise 3 x 3 and a pointwise 1 x 1 Conv2d, all with biases; out Linear(C x final frequency bins, h)),
    # relative attention bias (buckets x heads), and per block two feed-forwards (LayerNorm, gate_up h -> 2I,
    # down I -> h), attention (q, k, v, o with biases), a conv module (LayerNorm; GLU pointwise Conv1d h -> 2E with
    # b1, b2; depthwise Conv1d h -> h m, kernel K; pointwise Conv1d h m -> D; Conv1d h -> E) and 2 LayerNorms.
    # Phi4MultimodalAudioEmbedding: up (h x downsample_rate -> text h) and down (text h -> text h) projections for
    # speech and for vision-speech, with biases. Phi4MultimodalAudioConfig defaults: h 1024, 24 blocks, 16 heads,
    # intermediate 1536, E = D = 1024, kernel 3, input 80 bins, time reduction 8, C 1024, 1000 bias buckets
    h, inner = a.whole("hidden_size", 1024), a.whole("intermediate_size", 1536)
    blocks, heads = a.whole("num_blocks", 24, MAX_DEPTH), a.whole("num_attention_heads", 16, MAX_HEADS)
    head_dim = a.whole("head_dim", max(1, h // heads))
    ext, separable = a.whole("ext_pw_out_channel", 1024), a.whole("depthwise_separable_out_channel", 1024)
    multiplier, kernel = a.whole("depthwise_multiplier", 1, MAX_MERGE), a.whole("kernel_size", 3, MAX_PATCH)
    bins, reduction = a.whole("input_size", 80), a.whole("time_reduction", 8, 2**20)
    channels, distance = a.whole("nemo_conv_channels", 1024), a.whole("bias_max_distance", 1000, MAX_POSITIONS)
    downsample = a.whole("downsample_rate", 1, MAX_MERGE)
    if reduction % 2:
        raise ValueError(f"audio_config.time_reduction must be a multiple of 2, got {reduction}")
    halvings = int(math.log2(reduction))
    final_bins = bins
    for _ in range(halvings):  # Phi4MultimodalAudioConfig.__post_init__ nemo_final_size
        final_bins = math.floor((final_bins - 1) / 2 + 1)
    buckets = distance * (1 if a.flag("bias_symmetric", False) else 2)
    subsampling = (9 * channels + channels) + (halvings - 1) * (9 * channels + channels + _linear(channels, channels))
    subsampling += _linear(channels * final_bins, h)
    feed_forward = 2 * h + _linear(h, 2 * inner) + _linear(inner, h)
    attention = 3 * _linear(h, heads * head_dim) + _linear(heads * head_dim, h)
    conv = (2 * h + _linear(h, 2 * ext) + 2 * ext + (h * multiplier * kernel + h * multiplier)
            + _linear(h * multiplier, separable) + _linear(h, ext))
    block = 2 * feed_forward + attention + conv + 2 * 2 * h
    embedding = 2 * (_linear(h * downsample, text_h) + _linear(text_h, text_h))
    total = subsampling + buckets * heads + blocks * block + embedding
    return total, (f"counted the audio Conformer ({blocks} blocks) and its speech / vision-speech projections "
                   "(transformers v5.24.0 models/phi4_multimodal/modeling_phi4_multimodal.py)")


# --- Mistral 3 (Pixtral encoder) -----------------------------------------------------------------------------------

def _mistral3(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # The Pixtral encoder (_pixtral) and Mistral3MultiModalProjector: RMSNorm(h), patch merger Linear(h m^2, h)
    # without bias, linear_1 (h x feature layers -> text h) and linear_2 (text h -> text h), biases when
    # multimodal_projector_bias (default false)
    h, layers = v.whole("hidden_size", 1024), v.whole("num_hidden_layers", 24, MAX_DEPTH)
    merge, text_h = top.whole("spatial_merge_size", 2, MAX_MERGE), _text_hidden(top, 5120)
    bias = top.flag("multimodal_projector_bias", False)
    encoder, patch, image = _pixtral(v)
    feature_layers = _feature_layers(top, -1)
    projector = h + h * merge**2 * h + _linear(h * feature_layers, text_h, bias) + _linear(text_h, text_h, bias)
    note = (f"counted the Pixtral encoder ({layers} layers) and the projector with its {merge}x{merge} patch merger "
            f"into width {text_h} (transformers v5.24.0 models/pixtral/modeling_pixtral.py, "
            "models/mistral3/modeling_mistral3.py)")
    return VisionTower(family, encoder + projector, patch_size=patch, merge=merge, notes=(note,),
                       token_rule="pixtral", image_size=image)


def _pixtral(v: _Fields) -> tuple[int, int, int]:
    """PixtralVisionModel (pixtral/modeling_pixtral.py): Conv2d patch embedding without bias, RMSNorm ln_pre, layers
    of 2 RMSNorms, q, k, v, o and gate/up/down without biases. PixtralVisionConfig defaults: h 1024, 24 layers,
    intermediate 4096, image 1024, patch 16. Returns (parameters, patch, image)."""
    h, inner = v.whole("hidden_size", 1024), v.whole("intermediate_size", 4096)
    layers, patch = v.whole("num_hidden_layers", 24, MAX_DEPTH), v.whole("patch_size", 16, MAX_PATCH)
    image, channels = v.whole("image_size", 1024, MAX_IMAGE_SIDE), v.whole("num_channels", 3, MAX_CHANNELS)
    layer = 2 * h + 4 * h * h + _mlp(h, inner, bias=False, gated=True)
    return channels * patch**2 * h + h + layers * layer, patch, image


def _feature_layers(top: _Fields, default: int) -> int:
    """How many encoder layers' features the projector concatenates: vision_feature_layer, an index or a list."""
    if isinstance(top.config.get("vision_feature_layer"), list):
        return len(top.int_list("vision_feature_layer", ()))
    top.whole("vision_feature_layer", default, MAX_DEPTH, low=-MAX_DEPTH)
    return 1


# --- LLaVA (CLIP, SigLIP or Pixtral encoder) ----------------------------------------------------------------------

def _llava(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # LlavaModel (llava/modeling_llava.py): vision_tower = AutoModel of vision_config (CLIP, SigLIP or Pixtral here)
    # and LlavaMultiModalProjector: linear_1 (h x feature layers -> text h), GELU, linear_2 (text h -> text h), with
    # biases when multimodal_projector_bias (default true). LlavaConfig builds a CLIP tower of h 1024, 24 layers,
    # image 336, patch 14 when vision_config is absent; text width defaults to LlamaConfig's 4096.
    kind = v.config.get("model_type", "clip_vision_model")
    h, text_h = v.whole("hidden_size", 1024 if kind == "pixtral" else 768), _text_hidden(top, 4096)
    bias = top.flag("multimodal_projector_bias", True)
    projector = _linear(h * _feature_layers(top, -2), text_h, bias) + _linear(text_h, text_h, bias)
    source = "(transformers v5.24.0 models/llava/modeling_llava.py, "
    if kind == "pixtral":  # Pixtral-12B: PixtralProcessor, no patch merge (spatial_merge_size 1)
        encoder, patch, image = _pixtral(v)
        note = (f"counted the Pixtral encoder and the projector into width {text_h} {source}"
                "models/pixtral/modeling_pixtral.py)")
        return VisionTower(family, encoder + projector, patch_size=patch, notes=(note,), token_rule="pixtral",
                           image_size=image)
    if kind not in ("clip_vision_model", "siglip_vision_model"):
        return VisionTower(family, 0, notes=(f"vision tower of {family} ({quoted(kind)}) not counted",))
    encoder, patch, image, what = (_clip if kind == "clip_vision_model" else _siglip)(v)
    # LlavaProcessor: (image/p)^2 + num_additional_image_tokens (1 in llava-hf's processor configs: the CLS
    # position), less 1 with vision_feature_select_strategy "default"
    strategy = top.config.get("vision_feature_select_strategy", "default")
    tokens = (image // patch) ** 2 + (1 if kind == "clip_vision_model" and strategy == "full" else 0)
    name = "CLIP" if kind == "clip_vision_model" else "SigLIP"
    note = (f"counted the {name} encoder ({what}) and the projector into width {text_h} {source}"
            f"models/{'clip/modeling_clip.py' if name == 'CLIP' else 'siglip/modeling_siglip.py'})")
    return VisionTower(family, encoder + projector, patch_size=patch, notes=(note,), token_rule="fixed",
                       image_size=image, tokens_per_image=tokens)


# --- Kimi K2.5 (MoonViT) -------------------------------------------------------------------------------------------

def _kimi_k25(v: _Fields, top: _Fields, family: str) -> VisionTower:
    # Kimi_K25VisionModel: Conv2d patch embedding with bias, learned positions (pos_emb_height x pos_emb_width x h;
    # the temporal table is a buffer), layers of LayerNorm x2, q, k, v, proj with biases, GELU MLP fc1/fc2 with
    # biases; final LayerNorm. Kimi_K25MultimodalProjection: LayerNorm(projection_hidden_size), in_proj (h k -> h k),
    # out_proj (h k -> text h), k = merge kernel area. The published config uses the remote code's names (vt_*,
    # init_pos_emb_*, mm_hidden_size, text_hidden_size), read here as aliases; transformers 5.24 reads only its own
    # names and falls back to Kimi_K25VisionConfig's defaults, which equal Kimi K2.5's values.
    h = v.whole(("hidden_size", "vt_hidden_size"), 1152)
    inner = v.whole(("intermediate_size", "vt_intermediate_size"), 4304)
    layers = v.whole(("num_hidden_layers", "vt_num_hidden_layers"), 27, MAX_DEPTH)
    patch = v.whole("patch_size", 14, MAX_PATCH)
    grid_h = v.whole(("pos_emb_height", "init_pos_emb_height"), 64, MAX_POSITIONS)
    grid_w = v.whole(("pos_emb_width", "init_pos_emb_width"), 64, MAX_POSITIONS)
    kernel = v.int_list("merge_kernel_size", (2, 2), MAX_MERGE)
    if len(kernel) != 2 or min(kernel) < 1:
        raise ValueError("vision_config.merge_kernel_size must be two whole numbers from 1, e.g. [2, 2]")
    if grid_h * grid_w > MAX_POSITIONS:
        raise ValueError(f"vision_config position grid {grid_h} x {grid_w} exceeds {MAX_POSITIONS:,} positions")
    projection = top.whole("projection_hidden_size", v.whole("mm_hidden_size", 1152))
    text_h = _text_hidden(top, v.whole("text_hidden_size", 7168))
    layer = 2 * 2 * h + 4 * _linear(h, h) + _mlp(h, inner)
    encoder = 3 * patch**2 * h + h + grid_h * grid_w * h + layers * layer + 2 * h
    merged = h * kernel[0] * kernel[1]
    projector = 2 * projection + _linear(merged, merged) + _linear(merged, text_h)
    note = (f"counted the MoonViT encoder ({layers} layers, {grid_h} x {grid_w} learned positions) and the projector "
            f"into width {text_h} (transformers v5.24.0 models/kimi_k25/modeling_kimi_k25.py)")
    return VisionTower(family, encoder + projector, patch_size=patch, merge=kernel[0], notes=(note,),
                       token_rule="kimi" if kernel[0] == kernel[1] else "", image_size=512 * patch,
                       max_patches=16_384)


def _text_hidden(top: _Fields, default: int) -> int:
    """The language model's width: text_config.hidden_size, else a flat config's hidden_size, else the default of
    the family's text config class."""
    text = top.config.get("text_config")
    if text is not None:
        if not isinstance(text, Mapping):
            raise ValueError("text_config must be a JSON object ({...})")
        return _Fields(text, "text_config").whole("hidden_size", default)
    return top.whole("hidden_size", default)


# model_type -> reader; families whose transformers config builds a default vision tower when vision_config is absent
_READERS: dict[str, Callable[[_Fields, _Fields, str], VisionTower]] = {
    "qwen2_vl": _qwen2_vl, "qwen2_5_vl": _qwen2_5_vl, "qwen3_vl": _qwen3_vl, "qwen3_vl_moe": _qwen3_vl,
    "qwen3_5": _qwen3_5, "qwen3_5_moe": _qwen3_5, "llama4": _llama4, "gemma3": _gemma3, "gemma4": _gemma4,
    "mistral3": _mistral3, "kimi_k25": _kimi_k25, "phi4_multimodal": _phi4_multimodal, "llava": _llava,
}
_VISION_OPTIONAL = {"gemma4"}  # Gemma4Model builds no vision tower when vision_config is null
_AUDIO_COUNTED = {"gemma4", "phi4_multimodal"}  # families whose reader counts the audio tower into audio_parameters
# What a config class puts in place of an absent vision_config where that differs from the vision config class's
# defaults: the sub_configs_defaults of Mistral3Config and LlavaConfig (a given vision_config falls back to the
# vision config class's own defaults)
_ABSENT_VISION = {"mistral3": {"patch_size": 14, "image_size": 1540},
                  "llava": {"hidden_size": 1024, "intermediate_size": 4096, "patch_size": 14, "image_size": 336,
                            "num_hidden_layers": 24}}


def vision_tower(config: Mapping[str, Any]) -> VisionTower | None:
    """The vision tower of a parsed top-level `config.json`, or None for a text-only model.

    A known family (see `_READERS`) is counted tensor by tensor; a `vision_config` of any other family gives a tower
    of 0 parameters with a note, so a config is never refused because of its tower. A known family whose
    config has no `vision_config` (an abridged copy) is counted with transformers' defaults, and the notes say so.
    Raises ValueError naming the field when a field the count reads is not a whole number in its range.
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"config.json must be a JSON object ({{...}}), not a {type(config).__name__}")
    model_type = config.get("model_type")
    family = model_type if isinstance(model_type, str) else ""
    family = "".join(ch for ch in family if ch.isprintable())[:80]
    vision, reader = config.get("vision_config"), _READERS.get(family)
    notes: tuple[str, ...] = ()
    if vision is None:
        if family == "gemma4" and config.get("audio_config") is not None:  # an audio-only Gemma 4
            top = _Fields(config)
            audio_config = config["audio_config"]
            if not isinstance(audio_config, Mapping):
                raise ValueError(f"audio_config must be a JSON object ({{...}}), got {quoted(audio_config)}")
            audio, note = _gemma4_audio(_Fields(audio_config, "audio_config"), top)
            return VisionTower(family, 0, audio_parameters=audio, notes=("no vision tower (vision_config is null)",
                                                                         note))
        if reader is None or family in _VISION_OPTIONAL:
            return None
        vision = _ABSENT_VISION.get(family, {})
        notes = (f"config.json has no vision_config: counted the defaults of transformers' {family} vision config "
                 "class, which may not be the published model's tower",)
    if not isinstance(vision, Mapping):
        raise ValueError(f"vision_config must be a JSON object ({{...}}), got {quoted(vision)}")
    counted_audio = family in _AUDIO_COUNTED
    audio_note = ("audio tower present but not counted",) if config.get("audio_config") is not None \
        and not counted_audio else ()
    if reader is None:
        shown = family or "this model"
        return VisionTower(family, 0, notes=(f"vision tower of {shown} not counted",) + audio_note)
    tower = reader(_Fields(vision, "vision_config"), _Fields(config), family)
    return replace(tower, notes=notes + tower.notes + audio_note)


# --- image tokens --------------------------------------------------------------------------------------------------

def image_tokens(tower: VisionTower, width_px: int, height_px: int, *, min_pixels: int | None = None,
                 max_pixels: int | None = None) -> int:
    """Context tokens one `width_px` x `height_px` image becomes in the family's transformers processor.

    The count is the processor's placeholder tokens for the image (what its `_get_num_multimodal_tokens` returns:
    the features the language model receives, with Pixtral's row breaks); the one or two begin/end markers that a
    chat template or processor writes around an image are not counted, except for Llama 4, whose markers and tile
    separators are part of the layout its processor writes. Raises ValueError for a family without a rule.

    qwen:    Qwen2VLImageProcessor.get_number_of_image_patches (qwen2_vl/image_processing_qwen2_vl.py): smart_resize
             to multiples of patch x merge within [min_pixels, max_pixels], then (H/p)(W/p)/merge^2 <|image_pad|>
             tokens (qwen3_vl/processing_qwen3_vl.py). The chat template's <|vision_start|>/<|vision_end|> are
             not counted. min_pixels / max_pixels override the published preprocessor bounds.
    fixed:   Gemma3Processor: mm_tokens_per_image (256) whatever the size (pan-and-scan crops off, its default;
             <start_of_image>, <end_of_image> and the newlines around them are not counted).
    llama4:  Llama4ImageProcessor picks a canvas of up to 16 tiles of 336 px (get_best_fit), and Llama4Processor
             writes <|image_start|>, per tile 144 <|patch|> and separators, <|image|>, 144 for the global view and
             <|image_end|> (llama4/processing_llama4.py _prompt_split_image).
    pixtral: PixtralProcessor: the image is scaled down to fit the longest edge, taken to be the vision config's
             image_size (1540 for Mistral Small 3.1, as its processor config sets; PixtralImageProcessor's class
             default is 1024), then one token per (patch x merge) cell plus one [IMG_BREAK] per row, the last one
             being [IMG_END].
    gemma4:  Gemma4Processor: aspect-preserving resize to at most soft_tokens x k^2 patches, multiples of k x patch,
             then patches / k^2 soft tokens (k = pooling_kernel_size).
    kimi:    Kimi_K25ImageProcessor navit_resize (at most 16,384 patches, 512 a side, no upscaling), padded to
             multiples of patch x merge, then patches / merge^2.
    """
    for name, value in (("width_px", width_px), ("height_px", height_px)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_IMAGE_SIDE:
            raise ValueError(f"{name} must be a whole number of pixels between 1 and {MAX_IMAGE_SIDE:,}, "
                             f"got {quoted(value)}")
    rule = tower.token_rule
    if rule and (tower.patch_size < 1 or tower.merge < 1):
        raise ValueError(f"the tower's patch_size and merge must be at least 1, got {tower.patch_size} and "
                         f"{tower.merge}")
    if rule in ("llama4", "pixtral", "kimi") and tower.image_size < 1 or \
            rule in ("llama4", "gemma4", "kimi") and tower.max_patches < 1:
        raise ValueError(f"the tower's image_size and max_patches must be at least 1 for the {rule} rule")
    if rule == "qwen":
        low = tower.min_pixels if min_pixels is None else min_pixels
        high = tower.max_pixels if max_pixels is None else max_pixels
        for name, value in (("min_pixels", low), ("max_pixels", high)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PIXELS:
                raise ValueError(f"{name} must be a whole number between 1 and {MAX_PIXELS:,}, got {quoted(value)}")
        h, w = qwen_smart_resize(height_px, width_px, tower.patch_size * tower.merge, low, high)
        return (h // tower.patch_size) * (w // tower.patch_size) // tower.merge**2
    if rule == "fixed":
        return tower.tokens_per_image
    if rule == "llama4":
        return _llama4_tokens(tower, width_px, height_px)
    if rule == "pixtral":
        return _pixtral_tokens(tower, width_px, height_px)
    if rule == "gemma4":
        return _gemma4_tokens(tower, width_px, height_px)
    if rule == "kimi":
        return _kimi_tokens(tower, width_px, height_px)
    raise ValueError(f"the image token count of {tower.family or 'this model'} is not known; "
                     "give the context length with the image tokens included")


def qwen_smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers v5.24.0 models/qwen2_vl/image_processing_qwen2_vl.py smart_resize: both sides multiples of
    `factor`, the area within [min_pixels, max_pixels], the aspect ratio kept as closely as possible."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"the image's aspect ratio must be under 200 (Qwen processors refuse it), got "
                         f"{width} x {height}")
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _llama4_tokens(tower: VisionTower, width: int, height: int) -> int:
    # llama4/image_processing_llama4.py: find_supported_resolutions(max_num_chunks=16) lists every (rows, cols) tile
    # grid of at most 16 tiles; get_best_fit takes the smallest scale >= 1 (else the largest < 1) at which the image
    # fits a grid without distortion, ties to the smallest area. torch compares the scales in float32; Python's
    # float64 can break an exact tie differently only for sizes that fall on a grid boundary to ~1e-7.
    tile = tower.image_size
    grids = [(rows, tiles // rows) for tiles in range(tower.max_patches, 0, -1)
             for rows in range(1, tiles + 1) if tiles % rows == 0]
    scales = [min(rows * tile / height, cols * tile / width) for rows, cols in grids]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(scales)
    rows, cols = min((g for g, s in zip(grids, scales) if s == chosen), key=lambda g: g[0] * g[1])
    per_tile = tower.tokens_per_image  # (336 / 14)^2 = 576 patches / 4 = 144
    tiled = rows * cols * per_tile + rows * (cols - 1) + rows if rows * cols > 1 else 0  # x and y separators
    return 1 + tiled + 1 + per_tile + 1  # <|image_start|> ... <|image|> global tile <|image_end|>


def _pixtral_tokens(tower: VisionTower, width: int, height: int) -> int:
    # pixtral/processing_pixtral.py _get_num_multimodal_tokens with pixtral/image_processing_pixtral.py
    # get_resize_output_image_size: scale down (floor) to fit longest_edge, then ceil to whole cells
    cell, longest = tower.patch_size * tower.merge, tower.image_size
    ratio = max(height / longest, width / longest)
    if ratio > 1:
        height, width = int(math.floor(height / ratio)), int(math.floor(width / ratio))
    rows, cols = (height - 1) // cell + 1, (width - 1) // cell + 1
    return (cols + 1) * rows


def _gemma4_tokens(tower: VisionTower, width: int, height: int) -> int:
    # gemma4/image_processing_gemma4.py get_aspect_ratio_preserving_size, gemma4/processing_gemma4.py
    patch, k, max_patches = tower.patch_size, tower.merge, tower.max_patches
    factor = math.sqrt(max_patches * patch**2 / (height * width))
    side = k * patch
    target_h = int(math.floor(factor * height / side)) * side
    target_w = int(math.floor(factor * width / side)) * side
    if target_h == 0 and target_w == 0:
        raise ValueError(f"a {width} x {height} image is resized to 0 x 0 by the Gemma 4 processor")
    longest = (max_patches // k**2) * side
    if target_h == 0:
        target_h, target_w = side, min(int(math.floor(width / height)) * side, longest)
    elif target_w == 0:
        target_w, target_h = side, min(int(math.floor(height / width)) * side, longest)
    return (target_h // patch) * (target_w // patch) // k**2


def _kimi_tokens(tower: VisionTower, width: int, height: int) -> int:
    # kimi_k25/image_processing_kimi_k25.py navit_resize and get_number_of_image_patches
    patch, merge, per_side = tower.patch_size, tower.merge, tower.image_size // tower.patch_size
    patches = max(1, height // patch) * max(1, width // patch)
    scale = min(1.0, math.sqrt(tower.max_patches / patches), per_side * patch / height, per_side * patch / width)
    new_h = min(max(1, int(height * scale)), per_side * patch)
    new_w = min(max(1, int(width * scale)), per_side * patch)
    factor = merge * patch
    pad_h, pad_w = -(-new_h // factor) * factor, -(-new_w // factor) * factor
    return (pad_h // patch) * (pad_w // patch) // merge**2
