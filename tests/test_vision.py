"""Vision towers of multimodal configs (issue 12): `estimator.vision` counts the vision encoder and the projector of
each family (and the audio towers of Gemma 4 and Phi-4-multimodal) tensor by tensor as transformers v5.24.0 builds
them, and the tokens an image becomes as the family's processor counts them.

Where the expected parameter counts come from: each config below was built with transformers 5.24.0 on the meta
device (`with torch.device("meta"): AutoModel.from_config(config)`, the text model cut to one layer, which changes
no vision tensor) and `p.numel()` summed over every parameter outside the language model (that is `visual`,
`vision_tower`, `vision_model`, `multi_modal_projector`, `mm_projector`, `embed_vision`, Phi-4-multimodal's
`embed_tokens_extend.image_embed`; the audio towers `audio_tower`, `embed_audio`, `embed_tokens_extend.audio_embed`
separately).
`test_the_counts_are_what_transformers_builds` repeats that build when torch and transformers are installed.
"""

import ast
import copy
import math
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

import estimator as est
from estimator.vision import VisionTower, image_tokens, qwen_smart_resize, vision_tower
from tests.test_generic_reader import published

ROOT = Path(__file__).resolve().parents[1]

# Qwen2.5-VL-7B-Instruct, flat layout (text fields at the top, as Qwen2.5-VL publishes it). The vision_config values
# match the module tree printed in GitHub acproject/duorou docs/qwen2.5vl_graph.md: Conv3d(3, 1280, (2, 14, 14)),
# 32 blocks with qkv 1280 -> 3840 and a 3420-wide SiLU MLP, merger 5120 -> 5120 -> 3584.
QWEN25_VL_7B = {
    "model_type": "qwen2_5_vl", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
    "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
    "vision_config": {"depth": 32, "fullatt_block_indexes": [7, 15, 23, 31], "hidden_act": "silu", "hidden_size": 1280,
                      "in_channels": 3, "in_chans": 3, "intermediate_size": 3420, "model_type": "qwen2_5_vl",
                      "num_heads": 16, "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2,
                      "spatial_patch_size": 14, "temporal_patch_size": 2, "tokens_per_second": 2, "window_size": 112}}
# Qwen2.5-VL-32B-Instruct-AWQ's vision_config verbatim (GitHub binarrii/qwen_vl_object_detect,
# Qwen/Qwen2.5-VL-32B-Instruct-AWQ/config.json at f2219ae3): depth, heads, patch and merge come from the class defaults
QWEN25_VL_32B = {
    "model_type": "qwen2_5_vl", "hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
    "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 152064,
    "vision_config": {"hidden_size": 1280, "in_chans": 3, "intermediate_size": 3456, "model_type": "qwen2_5_vl",
                      "out_hidden_size": 5120, "spatial_patch_size": 14, "tokens_per_second": 2,
                      "torch_dtype": "bfloat16"}}
# Llama 4 Scout / Maverick vision_config as the full published config.json has it, taken from third-party copies of
# it (not re-checked against huggingface.co); the copies in validation/published/configs are abridged and have none
# (see test_an_abridged_llama4_config_...)
LLAMA4_VISION = {"attention_dropout": 0.0, "hidden_act": "gelu", "hidden_size": 1408, "image_size": 336,
                 "initializer_range": 0.02, "intermediate_size": 5632, "model_type": "llama4_vision_model",
                 "multi_modal_projector_bias": False, "norm_eps": 1e-05, "num_attention_heads": 16, "num_channels": 3,
                 "num_hidden_layers": 34, "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_dropout": 0.0,
                 "projector_input_dim": 4096, "projector_output_dim": 4096, "rope_theta": 10000,
                 "vision_feature_layer": -1, "vision_feature_select_strategy": "default", "vision_output_dim": 4096}
# google/gemma-3-4b-it config.json as converted by mlx-community (huggingface.co/mlx-community/gemma-3-4b-it-bf16,
# config.json); heads, KV heads and head_dim are Gemma3TextConfig's defaults (8, 4, 256)
GEMMA3_4B = {"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
             "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02,
             "mm_tokens_per_image": 256, "model_type": "gemma3",
             "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                             "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                             "sliding_window": 1024},
             "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
             "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                               "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                               "patch_size": 14, "vision_use_head": False}}
# Gemma 3 27B: the same tower into width 5376 (the module tree in Google's "Gemma explained: What's new in Gemma 3",
# developers.googleblog.com, shows Gemma3TextScaledWordEmbedding(262208, 5376) and 62 layers)
GEMMA3_27B = {**GEMMA3_4B, "text_config": {"hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text",
                                           "num_hidden_layers": 62, "num_attention_heads": 32,
                                           "num_key_value_heads": 16, "head_dim": 128}}
# Mistral 3: Mistral3Config's defaults in transformers 5.24 (configuration_mistral3.py sub_configs_defaults), which are
# Mistral-Small-3.1-24B's values: Pixtral 1024 wide, 24 layers, patch 14, image 1540; text width 5120
MISTRAL3_DEFAULTS = {"model_type": "mistral3"}
# Qwen2-VL: Qwen2VLVisionConfig's defaults in transformers 5.24 are Qwen2-VL-7B's tower (embed 1280, depth 32,
# MLP ratio 4, patch 14, merge 2, output 3584)
QWEN2_VL_DEFAULTS = {"model_type": "qwen2_vl"}
# Phi-4-multimodal: Phi4MultimodalConfig's defaults in transformers 5.24 (its docstring checkpoint is
# microsoft/Phi-4-multimodal-instruct): SigLIP 1152 wide, 27 layers, image 448; audio Conformer 1024 wide, 24 blocks;
# text width 3072
PHI4_MULTIMODAL_DEFAULTS = {"model_type": "phi4_multimodal"}
# LLaVA: LlavaConfig's defaults (docstring checkpoint llava-hf/llava-1.5-7b-hf: CLIP ViT-L/14 at 336 px, 24 layers,
# text width 4096); and a Pixtral-12B-style LLaVA: PixtralVisionConfig's defaults (docstring checkpoint
# mistral-labs/pixtral-12b: 1024 wide, 24 layers, image 1024, patch 16) with a 5120-wide text model
LLAVA_DEFAULTS = {"model_type": "llava"}
LLAVA_PIXTRAL = {"model_type": "llava", "vision_config": {"model_type": "pixtral"},
                 "text_config": {"hidden_size": 5120}}
# Gemma 4 with an audio tower: the published 26B-A4B config (which has "audio_config": null) given
# Gemma4AudioConfig's defaults (12 Conformer layers, width 1024, 8 heads, output 1536), the audio encoder of the small
# Gemma 4 models
GEMMA4_WITH_AUDIO = lambda: published("google__gemma-4-26B-A4B") | {"audio_config": {}}  # noqa: E731

CONFIGS = {
    "Qwen3-VL-8B": lambda: published("Qwen__Qwen3-VL-8B-Instruct"),
    "Qwen3-VL-30B-A3B": lambda: published("Qwen__Qwen3-VL-30B-A3B-Instruct"),
    "Qwen3-VL-235B-A22B": lambda: published("Qwen__Qwen3-VL-235B-A22B-Instruct"),
    "Qwen3.5-27B": lambda: published("Qwen__Qwen3.5-27B"),
    "Qwen3.5-35B-A3B": lambda: published("Qwen__Qwen3.5-35B-A3B"),
    "Qwen3.5-397B-A17B": lambda: published("Qwen__Qwen3.5-397B-A17B"),
    "Qwen2.5-VL-7B": lambda: QWEN25_VL_7B,
    "Qwen2.5-VL-32B": lambda: QWEN25_VL_32B,
    "Llama-4-Scout": lambda: {**published("meta-llama__Llama-4-Scout-17B-16E-Instruct"),
                              "vision_config": LLAMA4_VISION},
    "Llama-4-Maverick": lambda: {**published("meta-llama__Llama-4-Maverick-17B-128E-Instruct"),
                                 "vision_config": LLAMA4_VISION},
    "Llama-4-Scout-abridged": lambda: published("meta-llama__Llama-4-Scout-17B-16E-Instruct"),
    "Gemma-3-4B": lambda: GEMMA3_4B,
    "Gemma-3-27B": lambda: GEMMA3_27B,
    "Gemma-4-26B-A4B": lambda: published("google__gemma-4-26B-A4B"),
    "Mistral-3-defaults": lambda: MISTRAL3_DEFAULTS,
    "Kimi-K2.5": lambda: published("moonshotai__Kimi-K2.5"),
    "Qwen2-VL-defaults": lambda: QWEN2_VL_DEFAULTS,
    "Gemma-4-26B-A4B+audio": GEMMA4_WITH_AUDIO,
    "Phi-4-multimodal-defaults": lambda: PHI4_MULTIMODAL_DEFAULTS,
    "LLaVA-defaults": lambda: LLAVA_DEFAULTS,
    "LLaVA-Pixtral": lambda: LLAVA_PIXTRAL,
}
# Vision encoder + projector parameters as transformers 5.24.0 builds them (see the module docstring)
TRANSFORMERS_COUNTS = {
    "Qwen3-VL-8B": 576_388_336,  # 27 blocks, merger into 4096, 3 deepstack mergers
    "Qwen3-VL-30B-A3B": 538_631_408,  # the same tower into 2048
    "Qwen3-VL-235B-A22B": 576_388_336,  # into 4096, as the 8B
    "Qwen3.5-27B": 460_730_096,  # no deepstack mergers in Qwen3.5; into 5120
    "Qwen3.5-35B-A3B": 446_571_248,  # into 2048
    "Qwen3.5-397B-A17B": 456_010_480,  # into 4096
    "Qwen2.5-VL-7B": 676_550_144,
    "Qwen2.5-VL-32B": 688_841_984,  # MLP 3456 wide
    "Llama-4-Scout": 871_932_416,  # vision_model 850,960,896 + multi_modal_projector 20,971,520
    "Llama-4-Maverick": 871_932_416,  # the same tower and text width
    "Llama-4-Scout-abridged": 455_178_240,  # Llama4VisionConfig defaults (768 wide, image 448, output 7680)
    "Gemma-3-4B": 419_816_304,  # SigLIP 416,866,032 + projector 1152 x 2560 + 1152
    "Gemma-3-27B": 423_060_336,  # SigLIP 416,866,032 + projector 1152 x 5376 + 1152
    "Gemma-4-26B-A4B": 572_792_112,  # vision_tower 569,548,080 + embed_vision 1152 x 2816
    "Mistral-3-defaults": 438_958_080,  # Pixtral 403,305,472 + projector 35,652,608
    "Kimi-K2.5": 471_143_920,  # MoonViT 416,866,032 + mm_projector 54,277,888
    "Qwen2-VL-defaults": 675_759_104,  # ViT 631,182,336 + merger 44,576,768
    "Gemma-4-26B-A4B+audio": 572_792_112,  # the vision side is unchanged
    "Phi-4-multimodal-defaults": 441_550_016,  # embed_tokens_extend.image_embed
    "LLaVA-defaults": 324_487_168,  # CLIP ViT-L/14-336 303,507,456 + projector 20,979,712
    "LLaVA-Pixtral": 434_957_312,  # Pixtral 403,489,792 + projector 31,467,520
}
# Audio tower + its embedder (audio_tower, embed_audio), built the same way
AUDIO_COUNTS = {"Gemma-4-26B-A4B+audio": 309_149_984,  # Conformer 304,824,608 + embed_audio 1536 x 2816
                "Phi-4-multimodal-defaults": 466_432_256}  # embed_tokens_extend.audio_embed


@pytest.mark.parametrize("name", TRANSFORMERS_COUNTS)
def test_parameter_counts_equal_the_model_code(name):
    tower = vision_tower(CONFIGS[name]())
    assert (tower.parameters, tower.audio_parameters) == (TRANSFORMERS_COUNTS[name], AUDIO_COUNTS.get(name, 0))


def test_the_gemma_4_audio_tower_is_counted_and_said_so():
    tower = vision_tower(GEMMA4_WITH_AUDIO())
    assert tower.audio_parameters == 309_149_984
    assert any("audio Conformer (12 layers)" in note for note in tower.notes)
    assert not any("not counted" in note and "audio" in note for note in tower.notes)


def test_the_siglip_encoder_of_gemma_3_by_hand():
    # siglip/modeling_siglip.py, h = 1152, I = 4304, 27 layers, 896 px in 14 px patches (64 x 64 = 4096 positions)
    h, inner = 1152, 4304
    layer = 2 * 2 * h + 4 * (h * h + h) + (h * inner + inner) + (inner * h + h)  # 2 LayerNorms, q k v out, fc1 fc2
    encoder = (3 * 14 * 14 * h + h) + 4096 * h + 27 * layer + 2 * h  # conv + positions + layers + post LayerNorm
    assert layer == 15_239_504 and encoder == 416_866_032
    assert vision_tower(GEMMA3_4B).parameters == encoder + 1152 * 2560 + 1152  # mm_input_projection + soft-emb norm
    # Kimi K2.5's MoonViT has the same shapes (64 x 64 learned positions, 14 px patches), then its projector:
    # LayerNorm(1152) + Linear(4608, 4608) + Linear(4608, 7168), with biases
    assert vision_tower(published("moonshotai__Kimi-K2.5")).parameters == (
        encoder + 2 * 1152 + (4608 * 4608 + 4608) + (4608 * 7168 + 7168))


def test_llama_4_scout_is_metas_109b_only_with_its_vision_tower():
    # Meta's model card (GitHub meta-llama/llama-models, models/llama4/MODEL_CARD.md at 038acb9f): "Llama 4 Scout
    # (17Bx16E) ... 17B (Activated) 109B (Total)"; "Llama 4 Maverick (17Bx128E) ... 400B (Total)"
    scout = CONFIGS["Llama-4-Scout"]()
    language = est.parameter_counts(est.architecture_from_config(scout)).total
    total = language + vision_tower(scout).parameters
    assert round(language / 1e9) == 108 and round(total / 1e9) == 109  # 107.77B + 0.87B = 108.64B
    # Maverick: 400.71B + 0.87B = 401.58B, which Meta writes as "400B" (HF's transformers docs say ~400B and 402B)
    maverick = CONFIGS["Llama-4-Maverick"]()
    total = est.parameter_counts(est.architecture_from_config(maverick)).total + vision_tower(maverick).parameters
    assert round(total / 1e10) * 10 == 400


def test_kimi_k2_5s_moonvit_is_the_400m_of_its_readme():
    # GitHub MoonshotAI/Kimi-K2.5 README.md at 6edc2543, model summary: "Vision Encoder | MoonViT",
    # "Parameters of Vision Encoder | 400M": a round figure; the encoder is 416.9M (+ 54.3M for the projector)
    tower = vision_tower(published("moonshotai__Kimi-K2.5"))
    encoder = tower.parameters - (2 * 1152 + (4608 * 4608 + 4608) + (4608 * 7168 + 7168))  # less mm_projector
    assert encoder == 416_866_032 and round(encoder, -8) == 400_000_000


def test_the_llama_4_tensors_by_hand():
    # llama4/modeling_llama4.py with the Scout values: h 1408, image 336 / patch 14 = 24 -> 577 positions (+ class)
    h, inner = 1408, 5632
    positions, patch_embedding = (24 * 24 + 1) * h, 3 * 14 * 14 * h
    adapter, projector = inner * 4096 + 4096 * 4096, 4096 * 5120
    assert (positions, patch_embedding) == (812_416, 827_904)
    assert (adapter, projector) == (23_068_672 + 16_777_216, 20_971_520)
    layer = 4 * (h * h + h) + (h * inner + inner) + (inner * h + h) + 2 * 2 * h
    encoder = patch_embedding + h + positions + 2 * 2 * h + 34 * layer
    assert vision_tower(CONFIGS["Llama-4-Scout"]()).parameters == encoder + adapter + projector == 871_932_416


def test_qwen3_vl_and_qwen3_5_differ_by_the_deepstack_mergers():
    # Qwen3.5's vision model has no deepstack_merger_list, even though its config lists deepstack_visual_indexes: []
    qwen3_vl = published("Qwen__Qwen3-VL-8B-Instruct")
    as_qwen3_5 = copy.deepcopy(qwen3_vl) | {"model_type": "qwen3_5"}
    h4 = 1152 * 4
    deepstack_merger = 2 * h4 + (h4 * h4 + h4) + (h4 * 4096 + 4096)  # LayerNorm(4h), Linear(4h, 4h), Linear(4h, out)
    assert vision_tower(qwen3_vl).parameters - vision_tower(as_qwen3_5).parameters == 3 * deepstack_merger


def test_an_audio_only_gemma_4_counts_its_audio_tower():
    config = GEMMA4_WITH_AUDIO() | {"vision_config": None}
    tower = vision_tower(config)
    assert (tower.parameters, tower.audio_parameters) == (0, 309_149_984)
    assert tower.notes[0] == "no vision tower (vision_config is null)"


def test_phi_4_multimodal_counts_both_towers_but_not_its_image_tokens():
    tower = vision_tower(PHI4_MULTIMODAL_DEFAULTS)
    assert (tower.parameters, tower.audio_parameters) == (441_550_016, 466_432_256)
    assert any("dynamic HD crops" in note for note in tower.notes)
    with pytest.raises(ValueError, match="not known"):
        image_tokens(tower, 896, 896)


def test_llava_counts_its_clip_or_pixtral_encoder_and_its_image_tokens():
    clip = vision_tower(LLAVA_DEFAULTS)
    # CLIP ViT-L/14 at 336 px: 24 x 24 = 576 patch tokens (the CLS position is dropped, strategy "default")
    assert (clip.parameters, image_tokens(clip, 1000, 700)) == (324_487_168, 576)
    pixtral = vision_tower(LLAVA_PIXTRAL)
    # no patch merge: a 1024 px square is 64 rows of 64 patches, each row closed by [IMG_BREAK] / [IMG_END]
    assert (pixtral.parameters, image_tokens(pixtral, 1024, 1024)) == (434_957_312, 64 * (64 + 1))
    odd = vision_tower({"model_type": "llava", "vision_config": {"model_type": "dinov2"}})
    assert odd.parameters == 0 and odd.notes == ("vision tower of llava ('dinov2') not counted",)


def test_towers_carry_what_the_processor_needs():
    qwen = vision_tower(published("Qwen__Qwen3-VL-8B-Instruct"))
    assert (qwen.family, qwen.patch_size, qwen.merge, qwen.audio_parameters) == ("qwen3_vl", 16, 2, 0)
    assert "3 deepstack mergers" in qwen.notes[0] and "modeling_qwen3_vl.py" in qwen.notes[0]
    assert (vision_tower(GEMMA3_4B).tokens_per_image, vision_tower(GEMMA3_4B).merge) == (256, 4)  # 64 / 16 per side
    gemma4 = vision_tower(published("google__gemma-4-26B-A4B"))
    assert (gemma4.patch_size, gemma4.merge, gemma4.tokens_per_image) == (16, 3, 280)
    assert any("std_bias" in note for note in gemma4.notes)  # buffers in the checkpoint, not parameters


def test_text_only_configs_have_no_tower():
    assert vision_tower(published("Qwen__Qwen3-Coder-480B-A35B-Instruct")) is None
    assert vision_tower({"model_type": "llama", "hidden_size": 4096}) is None
    gemma4 = published("google__gemma-4-26B-A4B") | {"vision_config": None}
    assert vision_tower(gemma4) is None  # Gemma4Model builds no vision tower without a vision_config


def test_an_unknown_vision_family_is_counted_as_zero_with_a_note():
    # microsoft/Phi-4-reasoning-vision-15B runs remote code (phi4-siglip) that transformers 5.24 does not have
    tower = vision_tower(published("microsoft__Phi-4-reasoning-vision-15B"))
    assert tower.parameters == 0 and tower.notes == ("vision tower of phi4-siglip not counted",)
    with pytest.raises(ValueError, match="not known"):
        image_tokens(tower, 1024, 1024)
    odd = vision_tower({"model_type": 7, "vision_config": {}, "audio_config": {"hidden_size": 1}})
    assert odd.parameters == 0 and odd.notes == ("vision tower of this model not counted",
                                                 "audio tower present but not counted")


def test_an_abridged_llama4_config_is_counted_with_transformers_defaults_and_says_so():
    tower = vision_tower(published("meta-llama__Llama-4-Scout-17B-16E-Instruct"))
    assert tower.parameters == 455_178_240 != TRANSFORMERS_COUNTS["Llama-4-Scout"]
    assert "no vision_config" in tower.notes[0] and "may not be the published model's tower" in tower.notes[0]


def test_kimi_reads_the_remote_code_names_of_its_published_config():
    config = published("moonshotai__Kimi-K2.5")
    wider = copy.deepcopy(config)
    wider["vision_config"]["vt_num_hidden_layers"] = 28  # one more MoonViT layer
    layer = 2 * 2 * 1152 + 4 * (1152 * 1152 + 1152) + (1152 * 4304 + 4304) + (4304 * 1152 + 1152)
    assert vision_tower(wider).parameters - vision_tower(config).parameters == layer


# --- image tokens ---------------------------------------------------------------------------------------------------

def test_qwen2_5_vl_1024_square_is_smart_resized_to_1036():
    # factor = patch 14 x merge 2 = 28; round(1024 / 28) = round(36.57) = 37 -> 1036 px; 1036^2 = 1,073,296 px is
    # within [3,136, 12,845,056]; (1036 / 14)^2 = 74^2 = 5,476 patches / 2^2 = 1,369 tokens
    tower = vision_tower(QWEN25_VL_7B)
    assert qwen_smart_resize(1024, 1024, 28, 3_136, 12_845_056) == (1036, 1036)
    assert image_tokens(tower, 1024, 1024) == 74 * 74 // 4 == 1369


def test_qwen3_vl_full_hd_image():
    # factor 16 x 2 = 32: height round(1080 / 32) = round(33.75) = 34 -> 1088, width 1920 / 32 = 60 -> 1920;
    # 1088 x 1920 = 2,088,960 px within [65,536, 16,777,216]; (1088 / 16) x (1920 / 16) = 68 x 120 = 8,160 / 4
    tower = vision_tower(published("Qwen__Qwen3-VL-8B-Instruct"))
    assert image_tokens(tower, 1920, 1080) == 68 * 120 // 4 == 2040
    assert image_tokens(tower, 1024, 1024) == 64 * 64 // 4 == 1024


def test_qwen_pixel_bounds_scale_large_and_small_images():
    tower = vision_tower(published("Qwen__Qwen3-VL-8B-Instruct"))
    # max_pixels 1,003,520 (Qwen2VLImageProcessor's class default): 2048 x 2048 -> beta = sqrt(4,194,304 /
    # 1,003,520) = 2.0444; floor(2048 / 2.0444 / 32) x 32 = floor(31.30) x 32 = 992 -> (992 / 16)^2 / 4 = 961
    assert image_tokens(tower, 2048, 2048, max_pixels=1_003_520) == 62 * 62 // 4 == 961
    # min_pixels 65,536: 100 x 100 rounds to 96 x 96 = 9,216 px < 65,536 -> beta = sqrt(65,536 / 10,000) = 2.56;
    # ceil(100 x 2.56 / 32) x 32 = ceil(8.0) x 32 = 256 -> (256 / 16)^2 / 4 = 64 tokens
    assert image_tokens(tower, 100, 100) == 16 * 16 // 4 == 64


def test_gemma3_images_are_always_256_tokens():
    tower = vision_tower(GEMMA3_4B)
    assert image_tokens(tower, 896, 896) == image_tokens(tower, 4000, 300) == 256


def test_llama4_tiles_of_336_px_give_144_tokens_each_plus_a_global_view():
    # (336 / 14)^2 = 576 patches, pixel shuffle 0.5 -> 576 / 4 = 144 tokens a tile
    tower = vision_tower(CONFIGS["Llama-4-Scout"]())
    assert tower.tokens_per_image == 144
    # one tile: <|image_start|> <|image|> 144 x <|patch|> <|image_end|>
    assert image_tokens(tower, 336, 336) == 1 + 1 + 144 + 1 == 147
    # 672 x 336 fits a 1 x 2 grid: 2 x 144 + 1 <|tile_x_separator|> + 1 <|tile_y_separator|>, then the global view
    assert image_tokens(tower, 672, 336) == 1 + (2 * 144 + 1 + 1) + 1 + 144 + 1 == 437
    # 1344 x 1344 fills the 16-tile limit as 4 x 4: 16 x 144 + 4 x 3 x-separators + 4 y-separators
    assert image_tokens(tower, 1344, 1344) == 1 + (16 * 144 + 12 + 4) + 1 + 144 + 1 == 2467


def test_pixtral_counts_rows_of_28_px_cells_with_a_break_token_each():
    tower = vision_tower(MISTRAL3_DEFAULTS)  # patch 14 x merge 2 = 28 px cells, longest edge 1540
    # 1024 px: ceil(1024 / 28) = 37 cells a side; 37 rows of 37 + 1 ([IMG_BREAK], the last one [IMG_END])
    assert image_tokens(tower, 1024, 1024) == 37 * (37 + 1) == 1406
    # 2000 x 1000 is scaled by 2000 / 1540 to 1540 x 770 (floor): 55 x ceil(27.5) = 28 rows
    assert image_tokens(tower, 2000, 1000) == 28 * (55 + 1) == 1568


def test_gemma4_pools_3x3_patches_within_280_soft_tokens():
    tower = vision_tower(published("google__gemma-4-26B-A4B"))
    # at most 280 x 9 = 2,520 patches of 16 px; 1024^2: factor sqrt(2,520 x 256 / 1,048,576) = 0.7844 -> 803 px,
    # floored to a multiple of 3 x 16 = 48: 768 -> (768 / 16)^2 = 2,304 patches / 9 = 256 tokens
    assert image_tokens(tower, 1024, 1024) == 48 * 48 // 9 == 256


def test_kimi_pads_to_28_px_without_upscaling():
    tower = vision_tower(published("moonshotai__Kimi-K2.5"))
    # 1024 // 14 = 73 patches a side, far under 16,384 patches: no resize, pad 1024 to 1036 (multiple of 28)
    assert image_tokens(tower, 1024, 1024) == 74 * 74 // 4 == 1369


# --- hostile input ---------------------------------------------------------------------------------------------------

def _with_vision(**fields):
    config = published("Qwen__Qwen3-VL-8B-Instruct")
    config["vision_config"].update(fields)
    return config


@pytest.mark.parametrize("config, field", [
    (_with_vision(depth=10**12), "vision_config.depth"),
    (_with_vision(hidden_size=10**400), "vision_config.hidden_size"),
    (_with_vision(intermediate_size="4304"), "vision_config.intermediate_size"),
    (_with_vision(patch_size=True), "vision_config.patch_size"),
    (_with_vision(patch_size=[16, 16]), "vision_config.patch_size"),
    (_with_vision(spatial_merge_size=0), "vision_config.spatial_merge_size"),
    (_with_vision(num_position_embeddings=-1), "vision_config.num_position_embeddings"),
    (_with_vision(deepstack_visual_indexes=list(range(10**6))), "vision_config.deepstack_visual_indexes"),
    (_with_vision(deepstack_visual_indexes=[1.5]), "vision_config.deepstack_visual_indexes"),
    ({"model_type": "qwen3_vl", "vision_config": [1, 2]}, "vision_config"),
    ({"model_type": "llama4", "vision_config": {"pixel_shuffle_ratio": float("nan")}}, "pixel_shuffle_ratio"),
    ({"model_type": "llama4", "vision_config": {"pixel_shuffle_ratio": 1e-300}}, "pixel_shuffle_ratio"),
    ({"model_type": "llama4", "vision_config": {"patch_size": 500, "image_size": 100}}, "patch_size"),
    ({"model_type": "gemma3", "vision_config": {}, "text_config": "wide"}, "text_config"),
    ({"model_type": "gemma3", "vision_config": {}, "mm_tokens_per_image": 10**9}, "mm_tokens_per_image"),
    ({"model_type": "kimi_k25", "vision_config": {"merge_kernel_size": [2]}}, "merge_kernel_size"),
    ({"model_type": "kimi_k25", "vision_config": {"pos_emb_height": 10**6, "pos_emb_width": 10**6}},
     "position grid"),
    ({"model_type": "mistral3", "vision_config": {}, "vision_feature_layer": "last"}, "vision_feature_layer"),
    ({"model_type": "gemma4", "vision_config": {"num_hidden_layers": 2001}, "text_config": {}},
     "vision_config.num_hidden_layers"),
    ({"model_type": "gemma4", "vision_config": {}, "audio_config": {"subsampling_conv_channels": [128]}},
     "audio_config.subsampling_conv_channels"),
    ({"model_type": "gemma4", "vision_config": None, "audio_config": "on"}, "audio_config"),
    ({"model_type": "phi4_multimodal", "audio_config": {"time_reduction": 7}}, "audio_config.time_reduction"),
    ({"model_type": "phi4_multimodal", "audio_config": {"num_blocks": 10**9}}, "audio_config.num_blocks"),
    ({"model_type": "phi4_multimodal", "vision_config": {}, "hidden_size": 1.5}, "hidden_size"),
])
def test_a_hostile_config_gives_a_value_error_naming_the_field(config, field):
    started = time.perf_counter()
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        vision_tower(config)
    assert time.perf_counter() - started < 1


def test_a_hostile_top_level_or_image_size_gives_a_value_error():
    with pytest.raises(ValueError, match="JSON object"):
        vision_tower([{"model_type": "qwen3_vl"}])
    tower = vision_tower(published("Qwen__Qwen3-VL-8B-Instruct"))
    for width, height in [(0, 10), (10**7, 10), (10, 1.5), (True, 10), ("1024", 10)]:
        with pytest.raises(ValueError, match="_px must be a whole number"):
            image_tokens(tower, width, height)
    with pytest.raises(ValueError, match="max_pixels"):
        image_tokens(tower, 100, 100, max_pixels=0)
    with pytest.raises(ValueError, match="aspect ratio"):
        image_tokens(tower, 10_000, 10)
    with pytest.raises(ValueError, match="patch_size and merge"):
        image_tokens(VisionTower("x", 0, token_rule="qwen"), 100, 100)
    with pytest.raises(ValueError, match="image_size and max_patches"):
        image_tokens(VisionTower("x", 0, patch_size=14, token_rule="pixtral"), 100, 100)


def test_large_but_valid_values_stay_fast():
    # the largest widths and depths the bounds allow are counted with integer arithmetic, nothing is allocated
    config = _with_vision(depth=2_000, hidden_size=1_000_000, intermediate_size=1_000_000)
    started = time.perf_counter()
    assert vision_tower(config).parameters > 10**15
    assert time.perf_counter() - started < 1
    tower = vision_tower(published("google__gemma-4-26B-A4B"))
    assert image_tokens(tower, 1_000_000, 1) == math.floor(2520 / 9)  # clamped to the longest side, 280 tokens


# --- the module stands alone ---------------------------------------------------------------------------------------

def test_the_module_imports_only_the_standard_library_and_checks():
    tree = ast.parse((ROOT / "estimator" / "vision.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.level == 0}
    relative = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level > 0}
    assert imported <= set(sys.stdlib_module_names) and relative == {"checks"}
    run = subprocess.run([sys.executable, "-S", "-c", "import estimator.vision as v; print(v.vision_tower("
                          "{'model_type': 'qwen3_vl', 'vision_config': {}}).parameters)"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "566949104"  # Qwen3VLVisionConfig defaults, out_hidden_size 3584


# --- rebuilt with transformers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["Qwen3-VL-8B", "Llama-4-Scout", "Gemma-4-26B-A4B+audio", "Kimi-K2.5",
                                  "Phi-4-multimodal-defaults", "LLaVA-Pixtral"])
def test_the_counts_are_what_transformers_builds(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = copy.deepcopy(CONFIGS[name]())
    config.pop("auto_map", None)
    text = config.get("text_config")
    if isinstance(text, dict):  # one text layer: the vision tensors do not depend on the language model's depth
        text.pop("quantization_config", None)
        for key in ("layer_types", "mlp_only_layers", "no_rope_layers", "moe_layers"):
            text.pop(key, None)
        text["num_hidden_layers"] = 1
    built = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    if text is None:  # Phi-4-multimodal: a flat config; its towers sit in the text model's embed_tokens_extend
        built.num_hidden_layers = 1
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(built)
    language = ("language_model.", "embed_tokens.", "layers.", "norm.")  # the last three: Phi-4-multimodal's
    audio = ("audio_tower.", "embed_audio.", "embed_tokens_extend.audio_embed.")
    sizes = {"vision": 0, "audio": 0}
    for key, p in model.named_parameters():
        if not key.startswith(language):
            sizes["audio" if key.startswith(audio) else "vision"] += p.numel()
    assert (sizes["vision"], sizes["audio"]) == (TRANSFORMERS_COUNTS[name], AUDIO_COUNTS.get(name, 0))


# The towers in the estimate: the language model's reader, plus the tower as its own component


def test_qwen25_vl_reads_its_flat_language_model_and_counts_the_tower_apart():
    a = est.architecture_from_config(QWEN25_VL_7B)
    # transformers' Qwen2_5_VLModel outside `visual`, plus the untied lm_head: 7,615,616,512; HF lists 8.29B
    assert est.parameter_counts(a).total == 7_615_616_512 and a.model_type == "qwen2_5_vl"
    assert a.vision_parameters == 676_550_144
    assert est.parameter_counts(a).with_towers == 7_615_616_512 + 676_550_144


def test_the_vision_tower_is_its_own_16_bit_component_split_over_tensor_parallelism():
    a = est.architecture_from_config(published("Qwen__Qwen3-VL-8B-Instruct"))
    one = est.estimate_inference(est.InferenceScenario(a))
    assert one.component("vision") == 576_388_336 * 2
    four = est.estimate_inference(est.InferenceScenario(a, tensor_parallel=4))
    assert four.component("vision") == 576_388_336 * 2 // 4  # vLLM --mm-encoder-tp-mode weights (the default)
    fp8 = est.estimate_inference(est.InferenceScenario(a, weights="fp8"))
    assert fp8.component("vision") == one.component("vision")  # formats quantize the language model only
    assert any("1024 x 1024 image takes 1,024 tokens" in note for note in one.assumptions)


def test_fine_tuning_keeps_the_tower_frozen_in_16_bit():
    a = est.architecture_from_config(published("Qwen__Qwen3-VL-8B-Instruct"))
    lora = est.estimate_finetune(est.FinetuneScenario(a, technique="lora"))
    assert lora.component("vision") == 576_388_336 * 2
    zero3 = est.estimate_finetune(est.FinetuneScenario(a, technique="full", num_gpus=4, zero_stage=3))
    assert zero3.component("vision") == 576_388_336 * 2 // 4


def test_a_text_only_model_has_no_vision_component():
    b = est.estimate_inference(est.InferenceScenario(est.model("Qwen/Qwen3-8B").architecture))
    assert "vision" not in dict(b.components)


def test_images_per_sequence_join_the_context_as_their_processor_counts_them():
    """Issue 12 (multimodal: "the image tokens' share of the context"): 4 images of 1280 x 720 px per sequence on
    Qwen3-VL 8B. smart_resize to multiples of patch 16 x merge 2 = 32 px: 1280 x 704 (720 / 32 = 22.5 rounds to
    22), so (1280/32) x (704/32) = 40 x 22 = 880 tokens each; a 4,096-token prompt becomes 4,096 + 3,520 = 7,616
    tokens, and the KV cache 147,456 B per token (36 layers x 8 KV heads x 128 x 2 x 2 B) x 7,616."""
    a = est.model("Qwen/Qwen3-VL-8B-Instruct").architecture
    s = est.InferenceScenario(a, seq_len=4096, images=4, image_width=1280, image_height=720)
    assert s.tokens_per_image == 880
    row = est.estimate_inference(s)
    assert row.component("kv_cache") == 36 * 8 * 128 * 2 * 2 * (4096 + 4 * 880)
    assert row.total == est.estimate_inference(replace(s, seq_len=4096 + 3520, images=0)).total
    assert any("4 per sequence of 1280 x 720 px, 880 tokens each" in note for note in row.assumptions)
    text_only = est.InferenceScenario(est.model("meta-llama/Llama-3.1-8B").architecture, images=4)
    assert est.estimate_inference(text_only).total == est.estimate_inference(replace(text_only, images=0)).total
    assert any("add nothing" in note for note in est.estimate_inference(text_only).assumptions)
