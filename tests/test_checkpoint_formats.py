"""Quantized checkpoints read from their quantization_config: the format, what stays 16-bit, and exact bytes.

Every published block is quoted as JSON text and checked against the copy it comes from (the repository's
validation/published/configs/ files, each with its source in INDEX.md, or the catalog's published config), so the
quote stays verbatim. The expected bytes are worked out by hand from the layer shapes in each test.
"""

import json
from pathlib import Path

import pytest

import estimator as est
from estimator.checkpoint import MAX_LIST_ENTRIES, checkpoint_format, unquantized_roles
from estimator.cli import main
from estimator.formats import WEIGHT_FORMATS, weight_bytes

CONFIGS = Path(__file__).resolve().parent.parent / "validation" / "published" / "configs"


def published(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def quoted_block(config: dict, text: str) -> dict:
    """The quoted quantization_config, after checking it is the published one (top level or in text_config)."""
    block = config.get("quantization_config") or config["text_config"]["quantization_config"]
    assert block == json.loads(text)
    return block


def sixteen_bit_rest(a, quantized_params: int) -> int:
    """Bytes of every parameter outside the quantized matrices, stored in bf16."""
    return 2 * (est.parameter_counts(a).total - quantized_params)


# openai/gpt-oss-20b config.json (AIC@095f58a, see validation/published/configs/INDEX.md)
GPT_OSS = ('{"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", '
           '"model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}')


def test_gpt_oss_20b_stores_mxfp4_experts_and_bf16_everything_else():
    config = published("openai__gpt-oss-20b.json")
    quoted_block(config, GPT_OSS)
    cp = checkpoint_format(config)
    assert cp.format_id == "mxfp4"
    assert {"attn_q", "attn_output", "router", "token_embd", "output"} <= cp.unquantized
    a = est.model("openai/gpt-oss-20b").architecture
    # 24 layers x 32 experts x (gate, up, down) of 2880 x 2880; 32 E2M1 values (16 B) + 1 E8M0 scale = 17 B / 32
    expert_params = 24 * 32 * 3 * 2880 * 2880
    expert_bytes = 24 * 32 * 3 * (2880 * 2880 // 32 * 17)  # 4,406,400 B per matrix
    expected = expert_bytes + sixteen_bit_rest(a, expert_params)
    assert cp.weight_bytes(a).total == expected == weight_bytes(a, "mxfp4").total
    assert round(expected / 1e9, 2) == 13.76  # the published checkpoint is 13.8 GB


# deepseek-ai/DeepSeek-V3.1 config.json (AIC side branch jasonzho/deepseek3.2 @39033e8)
DEEPSEEK_V31 = ('{"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", '
                '"weight_block_size": [128, 128], "scale_fmt": "ue8m0"}')


def test_deepseek_v3_1_fp8_blocks_cost_one_byte_per_weight_and_an_fp32_scale_per_128x128_block():
    config = published("deepseek-ai__DeepSeek-V3.1.json")
    quoted_block(config, DEEPSEEK_V31)
    cp = checkpoint_format(config)
    assert (cp.format_id, cp.unquantized) == ("fp8-block", frozenset())
    assert any("ue8m0" in note for note in cp.notes)
    a = est.model("deepseek-ai/DeepSeek-V3.1").architecture
    # every layer: q_a 1536x7168, q_b 24576x1536, kv_a 576x7168, kv_b 32768x512, o 7168x16384; blocks are
    # ceil(rows / 128) x ceil(cols / 128): kv_a's 576 rows take 5 row blocks
    attn = 1536 * 7168 + 24576 * 1536 + 576 * 7168 + 32768 * 512 + 7168 * 16384
    attn_blocks = 12 * 56 + 192 * 12 + 5 * 56 + 256 * 4 + 56 * 128
    dense = 3 * 18432 * 7168  # layers 0-2: gate, up, down of 18432 x 7168
    dense_blocks = 3 * 144 * 56
    moe = 257 * 3 * 2048 * 7168  # layers 3-60: 256 routed + 1 shared expert, gate / up / down of 2048 x 7168
    moe_blocks = 257 * 3 * 16 * 56
    quantized = 61 * attn + 3 * dense + 58 * moe
    blocks = 61 * attn_blocks + 3 * dense_blocks + 58 * moe_blocks
    # the router (256 x 7168), embeddings, lm_head and norms stay bf16
    assert cp.weight_bytes(a).total == quantized + 4 * blocks + sixteen_bit_rest(a, quantized)


def test_deepseek_v3_2_keeps_the_indexer_weights_proj_in_bf16():
    cp = checkpoint_format(published("deepseek-ai__DeepSeek-V3.2.json"))
    assert cp.unquantized == {"attn_index_weights"}
    a = est.model("deepseek-ai/DeepSeek-V3.2").architecture
    plain = est.model("deepseek-ai/DeepSeek-V3.1").architecture  # same model without the indexer
    # indexer per layer: wq_b 8192x1536 (64 x 12 blocks) and wk 128x7168 (1 x 56) in fp8, weights_proj 64x7168 bf16
    indexer = 61 * (8192 * 1536 + 128 * 7168 + 4 * (64 * 12 + 56) + 2 * 64 * 7168 + 2 * 2 * 128)
    assert cp.weight_bytes(a).total - checkpoint_format(published("deepseek-ai__DeepSeek-V3.1.json")).weight_bytes(
        plain).total == indexer  # the k_norm LayerNorm (weight + bias of 128) is bf16 too


# moonshotai/Kimi-K2.5 config.json, text_config.quantization_config (AIC@095f58a)
KIMI_K25 = ('{"config_groups": {"group_0": {"input_activations": null, "output_activations": null, '
            '"targets": ["Linear"], "weights": {"actorder": null, "block_structure": null, "dynamic": false, '
            '"group_size": 32, "num_bits": 4, "observer": "minmax", "observer_kwargs": {}, "strategy": "group", '
            '"symmetric": true, "type": "int"}}}, "format": "pack-quantized", "ignore": ["lm_head", '
            '"re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\\\.(gate|up|gate_up|down)_proj.*"], '
            '"kv_cache_scheme": null, "quant_method": "compressed-tensors", "quantization_status": "compressed"}')


def test_kimi_k2_5_int4_groups_of_32_cover_only_the_routed_experts():
    config = published("moonshotai__Kimi-K2.5.json")
    quoted_block(config, KIMI_K25)
    cp = checkpoint_format(config)
    assert cp.format_id == "int4-g32"
    assert {"attn_q_a", "attn_kv_b", "attn_output", "shared_gate", "shared_down", "ffn_gate", "ffn_down",
            "output"} <= cp.unquantized
    assert not any(p.startswith("expert_") for p in cp.unquantized)
    assert cp.notes[0] == ("Checkpoint format from quantization_config: compressed-tensors W4A16, int4 groups of 32, "
                           "symmetric; lm_head, embeddings, attention, routers, shared experts and dense MLPs "
                           "unquantized (16-bit, as are the norms)")
    a = est.model("moonshotai/Kimi-K2.5").architecture
    # 60 MoE layers x 384 experts x (gate, up: 2048x7168; down: 7168x2048): int4 values packed in int32 (0.5 B),
    # one bf16 scale per 32 (symmetric: no zero point), an int64 weight_shape [2] per matrix
    per_matrix = 2048 * 7168 // 2 + 2048 * 7168 // 32 * 2 + 16  # 7,340,032 + 917,504 + 16
    matrices = 60 * 384 * 3
    expected = matrices * per_matrix + sixteen_bit_rest(a, matrices * 2048 * 7168)
    assert cp.weight_bytes(a).total == expected
    assert round(expected / 1e9) == 594


# MiniMaxAI/MiniMax-M2.5 config.json (AIC@095f58a)
MINIMAX = ('{"quant_method": "fp8", "fmt": "float8_e4m3fn", "activation_scheme": "dynamic", '
           '"weight_block_size": [128, 128], "modules_to_not_convert": ["gate", "e_score_correction_bias", '
           '"lm_head"]}')


def test_minimax_m2_5_leaves_its_router_gate_and_lm_head_unconverted():
    config = published("MiniMaxAI__MiniMax-M2.5.json")
    quoted_block(config, MINIMAX)
    cp = checkpoint_format(config)
    assert cp.unquantized == {"router", "output"}  # "gate" is block_sparse_moe.gate, not the experts' w1
    assert any("e_score_correction_bias" in note for note in cp.notes)  # a bias vector: nothing to quantize
    a = est.model("MiniMaxAI/MiniMax-M2.5").architecture
    # 62 layers: q 6144x3072 (48x24 blocks), k and v 1024x3072 (8x24), o 3072x6144 (24x48);
    # 256 experts: w1, w3 1536x3072 (12x24 blocks), w2 3072x1536 (24x12)
    attn, attn_blocks = 6144 * 3072 * 2 + 1024 * 3072 * 2, 48 * 24 * 2 + 8 * 24 * 2
    experts, expert_blocks = 256 * 3 * 1536 * 3072, 256 * 3 * 12 * 24
    quantized = 62 * (attn + experts)
    assert cp.weight_bytes(a).total == quantized + 4 * 62 * (attn_blocks + expert_blocks) + sixteen_bit_rest(
        a, quantized)


def test_kimi_k2_uses_deepseek_fp8_blocks():
    cp = checkpoint_format(published("moonshotai__Kimi-K2-Instruct.json"))
    assert (cp.format_id, cp.layout, cp.unquantized) == ("fp8-block", WEIGHT_FORMATS["fp8-block"], frozenset())


# Qwen/Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4 config.json, as the catalog keeps it (estimator/data/models.json: its
# source elides modules_in_block_to_quantize)
QWEN_GPTQ = ('{"batch_size": 1, "bits": 4, "block_name_to_quantize": null, "cache_block_outputs": true, '
             '"damp_percent": 0.01, "dataset": null, "desc_act": false, "exllama_config": {"version": 2}, '
             '"group_size": 128, "max_input_length": null, "model_seqlen": null, '
             '"module_name_preceding_first_block": null, "pad_token_id": null, "quant_method": "gptq", '
             '"sym": true, "tokenizer": null, "true_sequential": true, "use_cuda_fp16": false, '
             '"use_exllama": true}')


def test_qwen1_5_moe_gptq_int4_stores_qweight_qzeros_scales_and_g_idx():
    config = est.catalog.raw_config("Qwen/Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4")
    quoted_block(config, QWEN_GPTQ)
    cp = checkpoint_format(config)
    assert (cp.format_id, cp.label) == ("gptq-4bit", "GPTQ 4-bit, group 128, symmetric")
    a = est.model("Qwen/Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4").architecture
    # bits per matrix (out x in): 4 per weight + (fp16 scale + int4 zero) per 128 inputs of a row
    # + int32 g_idx per input
    attn = 4 * (2048 * 2048 * 4 + 2048 * 16 * 20 + 2048 * 32)  # q, k, v, o
    experts = 60 * (2 * (1408 * 2048 * 4 + 1408 * 16 * 20 + 2048 * 32) + 2048 * 1408 * 4 + 2048 * 11 * 20 + 1408 * 32)
    shared = 2 * (5632 * 2048 * 4 + 5632 * 16 * 20 + 2048 * 32) + 2048 * 5632 * 4 + 2048 * 44 * 20 + 5632 * 32
    quantized = 24 * (4 * 2048 * 2048 + 60 * 3 * 1408 * 2048 + 3 * 5632 * 2048)
    expected = 24 * (attn + experts + shared) // 8 + sixteen_bit_rest(a, quantized)
    assert cp.weight_bytes(a).total == expected == weight_bytes(a, "gptq-4bit").total


# --- blocks in the schema each library writes (not copies of a published file): exact bytes on Llama 3 8B ------
# Per layer of Llama 3 8B: q, o 4096x4096; k, v 1024x4096; gate, up 14336x4096; down 4096x14336
LAYER_PARAMS = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096  # 218,103,808
LAYER_ROWS = 4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096  # 43,008 output rows
LAYER_MATRICES = 7


def ct_block(weights: dict, fmt: str, ignore=("lm_head",), **group) -> dict:
    """A compressed-tensors quantization_config as llm-compressor writes it (one group targeting Linear)."""
    return {"quantization_config": {"quant_method": "compressed-tensors", "format": fmt, "ignore": list(ignore),
                                    "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights,
                                                                  **group}}}}


def test_compressed_tensors_fp8_dynamic_adds_a_bf16_scale_per_output_row(llama3_8b):
    cp = checkpoint_format(ct_block({"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True,
                                     "dynamic": False}, "float-quantized",
                                    input_activations={"num_bits": 8, "type": "float", "strategy": "token",
                                                       "dynamic": True}))
    assert (cp.format_id, cp.unquantized) == ("fp8-channel", frozenset({"output"}))
    quantized = 32 * LAYER_PARAMS
    assert cp.weight_bytes(llama3_8b).total == quantized + 32 * LAYER_ROWS * 2 + sixteen_bit_rest(llama3_8b, quantized)


def test_compressed_tensors_w4a16_asymmetric_stores_packed_zero_points(llama3_8b):
    sym = checkpoint_format(ct_block({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                                      "symmetric": True}, "pack-quantized"))
    asym = checkpoint_format(ct_block({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                                       "symmetric": False}, "pack-quantized"))
    assert sym.format_id == asym.format_id == "int4-g128"
    groups = 32 * LAYER_PARAMS // 128  # every row length (4096, 14336) is a multiple of 128
    rest = sixteen_bit_rest(llama3_8b, 32 * LAYER_PARAMS)
    shapes = 32 * LAYER_MATRICES * 16  # int64 weight_shape [2] per matrix
    assert sym.weight_bytes(llama3_8b).total == 32 * LAYER_PARAMS // 2 + groups * 2 + shapes + rest
    assert asym.weight_bytes(llama3_8b).total == 32 * LAYER_PARAMS // 2 + groups * 5 // 2 + shapes + rest  # +4 bits


def test_modelopt_nvfp4_hf_quant_config_costs_an_fp8_scale_per_16_and_two_fp32_scalars(llama3_8b):
    cp = checkpoint_format({"quantization_config": {"producer": {"name": "modelopt"}, "quantization": {
        "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16, "exclude_modules": ["lm_head"]}}})
    assert (cp.format_id, cp.method) == ("nvfp4", "modelopt")
    quantized = 32 * LAYER_PARAMS
    expected = quantized // 2 + quantized // 16 + 32 * LAYER_MATRICES * 8 + sixteen_bit_rest(llama3_8b, quantized)
    assert cp.weight_bytes(llama3_8b).total == expected


def test_awq_group_64_and_bitsandbytes_nf4_double_quant(llama3_8b):
    awq = checkpoint_format({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 64,
                                                     "zero_point": True, "version": "gemm",
                                                     "modules_to_not_convert": None}})
    quantized = 32 * LAYER_PARAMS
    rest = sixteen_bit_rest(llama3_8b, quantized)
    assert (awq.format_id, awq.label) == ("awq-4bit", "AWQ 4-bit, group 64")
    assert awq.weight_bytes(llama3_8b).total == quantized // 2 + quantized // 64 * 20 // 8 + rest  # fp16 + int4
    bnb = checkpoint_format({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                                     "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
                                                     "llm_int8_skip_modules": ["mlp.down_proj"]}})
    assert (bnb.format_id, bnb.unquantized) == ("nf4-dq", frozenset({"ffn_down"}))
    down = 32 * 4096 * 14336
    # NF4 + uint8 absmax per 64 + fp32 per 256 blocks: 4 + 8/64 + 32/16384 bits; down_proj stays bf16
    nf4 = (quantized - down) * (4 * 16384 + 8 * 256 + 32) // 16384 // 8
    assert bnb.weight_bytes(llama3_8b).total == nf4 + 2 * down + rest


def test_an_ignore_entry_with_a_layer_number_keeps_that_layer_only():
    roles, unmatched = unquantized_roles(["model.layers.0.mlp.down_proj", "re:.*layers\\.31\\.self_attn\\.q_proj$",
                                          "visual.blocks.0.attn"], "ct", "ignore", "llama", 32)
    assert roles == {"ffn_down@0", "attn_q@31"}
    assert unmatched == ("visual.blocks.0.attn",)  # a vision tower the estimate does not count


def test_the_user_can_still_choose_another_format(llama3_8b):
    assert weight_bytes(llama3_8b, "bf16").total == 2 * est.parameter_counts(llama3_8b).total


def test_an_unknown_method_is_16_bit_with_a_note_not_an_error():
    cp = checkpoint_format({"quantization_config": {"quant_method": "xyz"}})
    assert (cp.format_id, cp.layout) == (None, None)
    assert cp.notes == ("quantization_config 'xyz' not recognised; weights assumed 16-bit",)
    assert checkpoint_format({"model_type": "llama"}) is None


@pytest.mark.parametrize("block, field", [
    ({"quant_method": "gptq", "bits": 99, "group_size": 128}, "bits"),
    ({"quant_method": "gptq", "bits": 4, "group_size": "abc"}, "group_size"),
    ({"quant_method": "awq", "bits": 4, "group_size": 0}, "group_size"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
    ({"quant_method": "mxfp4", "modules_to_not_convert": "x" * 1000}, "modules_to_not_convert"),
    ({"quant_method": "mxfp4", "modules_to_not_convert": ["(a+)+$"]}, "modules_to_not_convert"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 99}}}}, "num_bits"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4}}},
      "ignore": ["lm_head"] * (MAX_LIST_ENTRIES + 1)}, "ignore"),
    ({"quant_method": 7}, "quant_method"),
])
def test_malformed_fields_raise_value_errors_naming_them(block, field):
    with pytest.raises(ValueError, match=field):
        checkpoint_format({"quantization_config": block})


def test_a_long_ignore_list_of_one_entry_per_layer_is_accepted_and_collapsed():
    names = [f"model.layers.{i}.mlp.gate" for i in range(61)] * 60  # 3,660 entries
    cp = checkpoint_format({"model_type": "deepseek_v3", "num_hidden_layers": 61, "quantization_config": {
        "quant_method": "compressed-tensors", "ignore": names, "config_groups": {"group_0": {
            "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}})
    assert cp.unquantized == {"router"}


# --- the CLI's default: the checkpoint's own format ------------------------------------------------------------

def run_json(capsys, *argv) -> dict:
    assert main(["inference", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_table_starts_with_the_checkpoint_format_and_weights_overrides_it(capsys):
    path = str(CONFIGS / "moonshotai__Kimi-K2.5.json")
    a = est.model("moonshotai/Kimi-K2.5").architecture
    default = run_json(capsys, "--config", path)
    assert [row["scenario"] for row in default["rows"]] == ["checkpoint", "16-bit", "8-bit", "4-bit"]
    matrices = 60 * 384 * 3
    expected = matrices * (2048 * 7168 // 2 + 2048 * 7168 // 32 * 2 + 16) + sixteen_bit_rest(a, matrices * 2048 * 7168)
    assert default["rows"][0]["components"]["weights"] == expected
    alone = run_json(capsys, "--config", path, "--weights", "checkpoint")
    assert [row["scenario"] for row in alone["rows"]] == ["checkpoint"]
    assert alone["rows"][0]["components"]["weights"] == expected
    override = run_json(capsys, "--config", path, "--weights", "bf16")
    assert [row["scenario"] for row in override["rows"]] == ["bf16"]
    assert override["rows"][0]["components"]["weights"] == 2 * est.parameter_counts(a).total


def test_cli_says_which_checkpoint_format_it_assumed(capsys):
    assert main(["inference", "--model", "openai/gpt-oss-20b", "--tp", "2", "--weights", "checkpoint"]) == 0
    out = capsys.readouterr().out
    assert "Checkpoint format from quantization_config: MXFP4 MoE experts" in out
    assert "checkpoint" in out.splitlines()[2]


def test_the_api_and_the_cli_agree_on_the_checkpoint_row(capsys):
    a = est.model("deepseek-ai/DeepSeek-V3.1").architecture
    s = est.InferenceScenario(a, tensor_parallel=8, weights="checkpoint")
    rows = run_json(capsys, "--model", "deepseek-ai/DeepSeek-V3.1", "--tp", "8")["rows"]
    assert rows[0]["scenario"] == "checkpoint" and rows[0]["total_bytes"] == est.estimate_inference(s).total
    assert est.estimate_inference(s).component("weights") == -(-a.checkpoint.weight_bytes(a).matrices // 8) + \
        a.checkpoint.weight_bytes(a).vectors


def test_cli_without_quantization_config_keeps_the_reference_table(capsys):
    rows = run_json(capsys, "--model", "meta-llama/Llama-3.1-8B")["rows"]
    assert [row["scenario"] for row in rows] == ["16-bit", "8-bit", "4-bit"]


def test_compressed_tensors_mixed_precision_groups_apply_to_the_modules_they_name(llama3_8b):
    """Two groups by name, as llm-compressor's "mixed-precision" format writes them: FP8 per channel on attention,
    NVFP4 (fp8 scale per 16, fp32 weight and input global scales) on the MLP; lm_head ignored."""
    fp8 = {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False}
    nvfp4 = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}
    cp = checkpoint_format({"model_type": "llama", "num_hidden_layers": 32, "quantization_config": {
        "quant_method": "compressed-tensors", "format": "mixed-precision", "ignore": ["lm_head"], "config_groups": {
            "group_0": {"targets": ["re:.*self_attn\\.(q|k|v|o)_proj$"], "weights": fp8, "format": "float-quantized"},
            "group_1": {"targets": ["re:.*mlp\\.(gate|up|down)_proj$"], "weights": nvfp4,
                        "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                              "dynamic": "local", "group_size": 16},
                        "format": "nvfp4-pack-quantized"}}}})
    assert not cp.covers_linear and len(cp.groups) == 2
    attn, attn_rows = 2 * 4096 * 4096 + 2 * 1024 * 4096, 4096 + 1024 + 1024 + 4096
    mlp = 3 * 14336 * 4096
    per_layer = attn + 2 * attn_rows + mlp // 2 + mlp // 16 + 3 * 8
    assert cp.weight_bytes(llama3_8b).total == 32 * per_layer + sixteen_bit_rest(llama3_8b, 32 * (attn + mlp))
