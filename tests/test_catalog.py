"""The catalogs: every model parses, published parameter counts are matched, every entry has a source."""

import json
import re
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from importlib import resources

import pytest

import estimator as est

RAW_MODELS = json.loads(resources.files("estimator").joinpath("data", "models.json").read_text())["models"]
UNITS = {"T": 10**12, "B": 10**9, "billion": 10**9, "M": 10**6}


def _parse(published: str) -> tuple[Decimal, int]:
    """'7.61B' -> (7.61e9 as Decimal, unit); '124,439,808' -> (124439808, 1)."""
    match = re.fullmatch(r"([\d,.]+)\s*(T|B|billion|M)?", published.strip())
    assert match, f"unreadable published count {published!r}"
    number, unit = Decimal(match.group(1).replace(",", "")), UNITS.get(match.group(2), 1)
    return number, unit


def _matches(count: int, published: str) -> bool:
    """Our exact count, rounded or truncated to the vendor's precision (vendors do both: Meta and Qwen
    truncate, 7.6156B -> "7.61B"), equals the vendor's figure; with 4+ significant digits it is also within
    0.1% of it."""
    number, unit = _parse(published)
    exponent = Decimal(1).scaleb(number.as_tuple().exponent)
    scaled = Decimal(count) / unit
    stated = {scaled.quantize(exponent, rounding=mode) for mode in (ROUND_HALF_UP, ROUND_DOWN)}
    digits = len(number.as_tuple().digits)
    close = abs(count - number * unit) <= Decimal("0.001") * number * unit
    return number in stated and (digits < 4 or close)


def test_the_catalog_has_at_least_100_models_and_unique_ids():
    ids = [m.id for m in est.models()]
    assert len(ids) >= 100
    assert len(set(ids)) == len(ids)


def test_every_catalog_model_has_a_source():
    assert all(m.source.strip() for m in est.models())


CHECKED = [(m["id"], kind, m["published_params"]) for m in RAW_MODELS
           for kind in ("total", "active", "non_embedding")
           if m.get("published_params", {}).get(kind) and m["published_params"].get("exact", True)]


@pytest.mark.parametrize("model_id, kind, published", CHECKED, ids=[f"{c[0]}:{c[1]}" for c in CHECKED])
def test_published_parameter_counts_are_matched(model_id, kind, published):
    a = est.model(model_id).architecture
    counts = est.parameter_counts(a)
    embedding_out = published.get("active_excludes_embedding", False)
    count = {"total": counts.total, "active": counts.active - (counts.embedding if embedding_out else 0),
             "non_embedding": counts.total - counts.embedding - counts.lm_head}[kind]
    assert _matches(count, published[kind]), f"{model_id} {kind}: computed {count:,}, published {published[kind]}"


def test_at_least_25_published_counts_are_checked():
    assert len(CHECKED) >= 25


@pytest.mark.parametrize("model_id, exact", [
    ("openai-community/gpt2", 124_439_808),  # V h + n_positions h + L (12 h^2 + 13 h) + 2 h (HF GPT2Model)
    ("openai-community/gpt2-xl", 1_557_611_200),
    ("tiiuae/falcon-7b-instruct", 6_921_720_704),
    ("tiiuae/falcon-40b-instruct", 41_303_293_952),
    ("meta-llama/Llama-2-7b-hf", 6_738_415_616),
    ("meta-llama/Meta-Llama-3-8B", 8_030_261_248),
    ("mistralai/Mistral-7B-v0.1", 7_241_732_096),
    ("mistralai/Mixtral-8x7B-v0.1", 46_702_792_704),
    ("microsoft/phi-2", 2_779_683_840),
    ("facebook/opt-6.7b", 6_658_473_984),
])
def test_parameter_counts_equal_the_checkpoint_tensor_counts(model_id, exact):
    assert est.parameter_counts(est.model(model_id).architecture).total == exact


# Parameters of the language model as transformers 5.24 builds it from each published config on the meta device
# (AutoModelForCausalLM.from_config(AutoConfig.for_model(**config)), the text_config of a multimodal config, without
# its quantization_config; p.numel() summed, tied weights once), for the models added from verbatim copies (issue 12)
TRANSFORMERS_COUNTS = {
    "Qwen/Qwen3.5-122B-A10B": 122_111_526_912,
    "Qwen/Qwen3.6-35B-A3B": 34_660_610_688,
    "MiniMaxAI/MiniMax-M2.7": 228_689_748_992,
    "zai-org/GLM-5": 743_911_199_232,
    "zai-org/GLM-5.1": 743_911_199_232,
    "zai-org/GLM-5.2": 743_377_000_704,  # 57 of 78 layers reuse the previous indexer (indexer_types "shared")
    "meta-llama/Llama-3.1-405B": 405_853_388_800,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": 32_763_876_352,
    "meta-llama/Llama-3.1-70B": 70_553_706_496,
    "nvidia/Qwen3.6-27B-NVFP4": 26_895_998_464,
    "nvidia/Kimi-K2.6-NVFP4": 1_026_408_209_408,
    "nvidia/Kimi-K2.7-Code-NVFP4": 1_026_408_209_408,
    "deepseek-ai/deepseek-llm-7b-base": 6_910_365_696,
    "microsoft/phi-1": 1_418_270_720,
    "microsoft/phi-1_5": 1_418_270_720,
    "deepcogito/cogito-v1-preview-qwen-14B": 14_765_947_904,
    # quantized releases of architectures above, with their quantization_config (built unquantized)
    "zai-org/GLM-5-FP8": 743_911_199_232,
    "zai-org/GLM-5.1-FP8": 743_911_199_232,
    "nvidia/GLM-5.1-NVFP4": 743_911_199_232,
    "nvidia/Kimi-K2.5-NVFP4": 1_026_408_209_408,
    "nvidia/MiniMax-M2.7-NVFP4": 228_689_748_992,
    "nvidia/Qwen3.5-397B-A17B-NVFP4": 396_346_350_336,
    # Mamba-2 / attention hybrids (nemotron_h) and Llama 4's text model (llama4; abridged copies without vision_config)
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16": 549_308_968_960,
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": 120_668_687_360,
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": 31_577_937_344,
    "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4": 31_577_937_344,
    "nvidia/Nemotron-H-56B-Base-8K": 56_324_350_464,
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": 107_769_861_120,
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": 400_711_848_960,
    "google/gemma-4-26B-A4B": 25_233_141_760,  # gemma4: the language model of the text_config
    "nvidia/Gemma-4-31B-IT-NVFP4": 30_697_345_280,
    # Qwen3-VL's language models (qwen3_vl_text / qwen3_vl_moe_text read as Qwen3 / Qwen3-MoE; AutoModel of the
    # text_config + lm_head, tests/test_hybrid_models.py rebuilds them)
    "Qwen/Qwen3-VL-2B-Instruct": 1_720_574_976,
    "Qwen/Qwen3-VL-4B-Instruct": 4_022_468_096,
    "Qwen/Qwen3-VL-8B-Instruct": 8_190_735_360,
    "Qwen/Qwen3-VL-32B-Instruct": 32_762_123_264,
    "Qwen/Qwen3-VL-30B-A3B-Instruct": 30_532_122_624,
    "Qwen/Qwen3-VL-235B-A22B-Instruct": 235_093_634_560,
}
# The whole multimodal model as transformers 5.24 builds Qwen3VL(Moe)ForConditionalGeneration on the meta device:
# language model + vision tower (validation/published/configs/INDEX.md)
WITH_TOWERS_COUNTS = {
    "Qwen/Qwen3-VL-2B-Instruct": 2_127_532_032,
    "Qwen/Qwen3-VL-4B-Instruct": 4_437_815_808,
    "Qwen/Qwen3-VL-8B-Instruct": 8_767_123_696,
    "Qwen/Qwen3-VL-32B-Instruct": 33_357_390_064,
    "Qwen/Qwen3-VL-30B-A3B-Instruct": 31_070_754_032,
    "Qwen/Qwen3-VL-235B-A22B-Instruct": 235_670_022_896,
}


@pytest.mark.parametrize("model_id, exact", TRANSFORMERS_COUNTS.items())
def test_parameter_counts_equal_transformers_builds(model_id, exact):
    assert est.parameter_counts(est.model(model_id).architecture).total == exact


@pytest.mark.parametrize("model_id, exact", WITH_TOWERS_COUNTS.items())
def test_multimodal_counts_with_the_vision_tower_equal_transformers_builds(model_id, exact):
    assert est.parameter_counts(est.model(model_id).architecture).with_towers == exact


def test_the_gpu_catalog_has_at_least_20_gpus_with_sources():
    gpus = est.gpus()
    assert len(gpus) >= 20
    assert all(g.source and g.memory_bytes > 0 and g.bandwidth_gb_s > 0 for g in gpus)
    names = " ".join(g.id for g in gpus)
    for required in ("rtx-3090", "rtx-4090", "rtx-5090", "l4", "l40s", "a10g", "h100-sxm", "h200", "b200",
                     "mi300x", "mi355x"):
        assert required in names


def test_h100_80gb_usable_memory_is_below_80_gib():
    """NVIDIA's '80GB' HBM is 80 GiB, of which CUDA can allocate slightly less."""
    h100 = est.gpu("h100-sxm")
    assert 80 * 10**9 < h100.memory_bytes < 80 * 2**30


def test_unknown_model_and_gpu_ids_raise_value_error():
    with pytest.raises(ValueError, match="unknown model"):
        est.model("nope/nothing")
    with pytest.raises(ValueError, match="unknown GPU"):
        est.gpu("tpu-v9")


@pytest.mark.parametrize("typed, found", [
    ("A100", ["a100-40gb-sxm", "a100-80gb-sxm", "a100-80gb-pcie", "a100-40gb-pcie"]),  # not the Apple M3 Max
    ("H20", []),  # not the H200
    ("H200", ["h200", "h200-nvl"]),
    ("rtx 4090", ["rtx-4090"]),
    ("l4", ["l4"]),  # not the L40S
    ("a100 80gb", ["a100-80gb-sxm", "a100-80gb-pcie"]),
    ("apple m2 ultra", ["m2-ultra-60c-64gb", "m2-ultra-76c-128gb", "m2-ultra-192gb"]),
    ("MI300", ["mi300x"]),
])
def test_gpu_search_matches_the_name_tokens(typed, found):
    assert [g.id for g in est.catalog.find_gpus(typed)] == found


def test_a_gpu_is_found_by_the_words_of_its_name_when_they_name_one():
    assert est.gpu("NVIDIA GeForce RTX 4090").id == est.gpu("rtx 4090").id == "rtx-4090"
    with pytest.raises(ValueError, match="could be h100-pcie, h100-sxm, h100-nvl"):
        est.gpu("H100")
    with pytest.raises(ValueError, match="unknown GPU 'H20'"):
        est.gpu("H20")
