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
    ("H20", ["h20"]),  # not the H200
    ("H200", ["h200", "h200-nvl"]),
    ("rtx 4090", ["rtx-4090"]),
    ("l4", ["l4"]),  # not the L40S
    ("a100 80gb", ["a100-80gb-sxm", "a100-80gb-pcie"]),
    ("apple m2 ultra", ["m2-ultra-60c-64gb", "m2-ultra-76c-128gb", "m2-ultra-192gb"]),
    ("MI300", ["mi300x"]),
    ("A100-SXM4-80GB", ["a100-80gb-sxm"]),  # the name nvidia-smi prints is searched too
    ("rtx 3060", ["rtx-3060-12gb", "rtx-3060-8gb", "rtx-3060-ti"]),
])
def test_gpu_search_matches_the_name_tokens(typed, found):
    assert [g.id for g in est.catalog.find_gpus(typed)] == found


def test_a_gpu_is_found_by_the_words_of_its_name_when_they_name_one():
    assert est.gpu("NVIDIA GeForce RTX 4090").id == est.gpu("rtx 4090").id == "rtx-4090"
    with pytest.raises(ValueError, match="could be h100-pcie, h100-sxm, h100-nvl"):
        est.gpu("H100")
    assert est.gpu("H20").id == "h20"  # not the H200
    with pytest.raises(ValueError, match="unknown GPU 'H800'"):
        est.gpu("H800")


RAW_GPUS = json.loads(resources.files("estimator").joinpath("data", "gpus.json").read_text())["gpus"]


@pytest.mark.parametrize("raw", RAW_GPUS, ids=[g["id"] for g in RAW_GPUS])
def test_every_gpu_entry_is_complete(raw):
    """Positive sizes, a source for the numbers and for the link, the link fields on every entry (null bandwidth
    only where there is no GPU-to-GPU link: Apple silicon without Thunderbolt 5, which is one Mac)."""
    assert raw["memory_gb"] > 0 and raw["memory_bytes"] > 0 and raw["bandwidth_gb_s"] > 0
    assert raw["source"].strip() and raw["memory_bytes_source"].strip() and raw["interconnect_source"].strip()
    assert raw["interconnect"].strip() and "interconnect_gb_s" in raw and isinstance(raw["featured"], bool)
    assert (raw["interconnect_gb_s"] is None) == (raw.get("max_devices") == 1)
    if "max_devices" in raw:
        assert raw["max_devices"] >= 1 and raw["max_devices_note"].strip() and raw["max_devices_source"].strip()
    assert raw["interconnect_gb_s"] is None or raw["interconnect_gb_s"] > 0
    if not raw["memory_bytes_measured"]:
        assert raw["memory_bytes"] % 2**20 == 0  # marketed GiB (or an assumed MiB total), never a guess in bytes
    for tflops in ("bf16_dense_tflops", "fp16_dense_tflops", "fp8_dense_tflops"):
        assert raw.get(tflops) is None or raw[tflops] > 0
    assert all(alias.strip() for alias in raw.get("aliases", []))


def test_gpu_ids_are_unique_and_the_catalog_covers_the_asked_for_chips():
    ids = [g.id for g in est.gpus()]
    assert len(ids) == len(set(ids)) >= 100
    for required in ("tesla-p40", "v100-16gb", "t4", "a40", "l40s", "dgx-spark", "rtx-2080-ti", "rtx-3060-12gb",
                     "rtx-3060-8gb", "rtx-4060-ti-8gb", "rtx-4060-ti-16gb", "rtx-5080", "rtx-a5000", "rtx-6000-ada",
                     "rtx-pro-6000-blackwell", "rx-6800-xt", "rx-7900-xtx", "rx-9070-xt", "mi300x", "m1-8c-16gb",
                     "m2-ultra-192gb", "m3-ultra-80c-512gb", "m4-max-32c-36gb", "m4-max-40c-48gb", "m4-max-40c-64gb",
                     "m4-max-128gb", "m5-10c-32gb"):
        assert required in ids


def test_apple_gpu_limit_follows_the_macos_default():
    """2/3 of RAM up to 36 GB, 3/4 above (the default wired limit; sysctl iogpu.wired_limit_mb raises it)."""
    assert est.gpu("m4-max-32c-36gb").memory_bytes == 36 * 2**30 * 2 // 3 == 24 * 2**30
    assert est.gpu("m4-max-40c-48gb").memory_bytes == 48 * 2**30 * 3 // 4 == 36 * 2**30
    assert est.gpu("m4-max-128gb").memory_bytes == 96 * 2**30
    assert est.gpu("m3-ultra-80c-512gb").memory_bytes == 384 * 2**30
    assert all("iogpu.wired_limit_mb" in raw["note"] for raw in RAW_GPUS if raw["vendor"] == "Apple")


@pytest.mark.parametrize("gpu_id, gb_s", [
    ("rtx-3070", 448),  # NVIDIA specs: 256-bit GDDR6 at 14 Gbps -> 256 x 14 / 8
    ("rtx-4060-ti-16gb", 288),  # 128-bit at 18 Gbps
    ("rx-7900-xtx", 960),  # AMD specs: 384-bit at 20 Gbps, 'up to 960 GB/s'
    ("m4-max-40c-48gb", 546),  # Apple newsroom, M4 Max with 40-core GPU
    ("m4-max-32c-36gb", 410),  # same, 32-core GPU
    ("dgx-spark", 273),  # NVIDIA DGX Spark page
    ("h100-sxm", 3350),  # H100 datasheet, 3.35 TB/s
])
def test_bandwidth_is_the_vendor_figure(gpu_id, gb_s):
    assert est.gpu(gpu_id).bandwidth_gb_s == gb_s


@pytest.mark.parametrize("gpu_id, cores, gb, gb_s", [
    # Apple M5 Pro / M5 Max bins (MacBook Pro, 2026-03-03). Apple's MacBook Pro tech specs
    # (https://www.apple.com/macbook-pro/specs/): M5 Max with 32-core GPU '460GB/s', with 40-core GPU '614GB/s',
    # 128GB only with the 40-core GPU; Popular Science
    # (https://www.popsci.com/gear/apple-m6-mac-mini-m5-ultra-mac-studio-specs-details/): the entry MacBook Pro's M5 Pro
    # has a 15-core CPU and 16-core GPU, and 'The M5 Pro sits at 307GB/s regardless of configuration'
    ("m5-pro-16c-24gb", 16, 24, 307),
    ("m5-pro-16c-48gb", 16, 48, 307),
    ("m5-pro-16c-64gb", 16, 64, 307),
    ("m5-pro-20c-64gb", 20, 64, 307),
    ("m5-max-32c-36gb", 32, 36, 460),  # the 32-core M5 Max has less bandwidth than the 40-core
    ("m5-max-40c-48gb", 40, 48, 614),
    ("m5-max-40c-64gb", 40, 64, 614),
    ("m5-max-40c-128gb", 40, 128, 614),
])
def test_m5_bins_have_their_own_bandwidth(gpu_id, cores, gb, gb_s):
    """Each M5 Pro / M5 Max GPU-core bin and memory size, its name in the form speed.py parses ('N-core GPU'), the
    macOS default GPU limit (2/3 up to 36 GB, 3/4 above)."""
    raw = next(g for g in RAW_GPUS if g["id"] == gpu_id)
    tier = "Pro" if "-pro-" in gpu_id else "Max"
    assert raw["name"] == f"Apple M5 {tier} {gb}GB ({cores}-core GPU)" and raw["bandwidth_gb_s"] == gb_s
    assert raw["memory_bytes"] == gb * 2**30
    assert raw["default_gpu_limit_bytes"] == gb * 2**30 * (2 if gb <= 36 else 3) // (3 if gb <= 36 else 4)
    assert f"Apple M5 {tier} ({cores}-core GPU)" in raw["aliases"] and "Top configuration only" not in raw["note"]
    assert est.gpu(gpu_id).bandwidth_gb_s == gb_s


@pytest.mark.parametrize("gpu_id, link, gb_s", [
    ("h100-sxm", "NVLink 4", 450),  # 900 GB/s total NVLink (datasheet), one direction
    ("b200", "NVLink 5", 900),  # 1.8 TB/s total
    ("a100-80gb-pcie", "PCIe 4.0 x16", 32),  # 64 GB/s bidirectional
    ("rtx-4060", "PCIe 4.0 x8", 16),
    ("rtx-5090", "PCIe 5.0 x16", 64),
    ("mi300x", "Infinity Fabric", 448),  # 896 GB/s aggregate
])
def test_interconnect_is_recorded_per_direction(gpu_id, link, gb_s):
    g = est.gpu(gpu_id)
    assert g.interconnect.startswith(link) and g.interconnect_gb_s == gb_s


@pytest.mark.parametrize("printed, gpu_id", [
    ("NVIDIA GeForce RTX 3070", "rtx-3070"),  # nvidia-smi --query-gpu=name
    ("nvidia geforce rtx 3070", "rtx-3070"),
    ("GeForce RTX 2080 Ti", "rtx-2080-ti"),  # older drivers, no vendor word
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
    ("Tesla T4", "t4"),
    ("NVIDIA GB10", "dgx-spark"),
    ("AMD Instinct MI300X", "mi300x"),  # rocm-smi --showproductname card series
    ("amd instinct mi300x", "mi300x"),
    ("AMD Radeon RX 7900 XTX", "rx-7900-xtx"),
    ("Apple M1 (7-core GPU)", "m1-7c-8gb"),  # macOS chipset + GPU cores, one memory size sold
    ("apple m4 max (32-core gpu)", "m4-max-32c-36gb"),
    ("Apple M2 Ultra (76-core GPU) 192GB", "m2-ultra-192gb"),  # the printed name with the size
    ("m2-ultra-192gb", "m2-ultra-192gb"),  # the catalog id
])
def test_a_gpu_is_found_by_the_name_the_tools_print(printed, gpu_id):
    assert est.gpu(printed).id == gpu_id


@pytest.mark.parametrize("printed, candidates", [
    ("NVIDIA GeForce RTX 4060 Ti", "rtx-4060-ti-8gb, rtx-4060-ti-16gb"),  # nvidia-smi prints no size
    ("NVIDIA GeForce RTX 3060", "rtx-3060-12gb, rtx-3060-8gb"),
    ("Apple M2 Ultra (76-core GPU)", "m2-ultra-76c-128gb, m2-ultra-192gb"),
    ("AMD Radeon RX 9060 XT", "rx-9060-xt-8gb, rx-9060-xt-16gb"),
])
def test_a_printed_name_shared_by_memory_sizes_names_the_candidates(printed, candidates):
    with pytest.raises(ValueError, match=re.escape(f"could be {candidates}; give one of these ids or add the memory")):
        est.gpu(printed)


def test_featured_gpus_keep_the_previous_catalog():
    featured = {g.id for g in est.gpus() if g.featured}
    assert {"rtx-4090", "h100-sxm", "mi300x", "m4-max-128gb", "rx-7900-xtx", "dgx-spark"} <= featured
    assert 20 <= len(featured) < len(est.gpus()) // 2


@pytest.mark.parametrize("gpu_id, mib", [
    ("rtx-4060-ti-16gb", 16380),  # nvidia-smi '... / 16380MiB' (public dumps; 4 MiB under 16 GiB)
    ("rtx-5080", 16303),  # GDDR7 cards show less than 16 GiB: 16303 MiB
    ("a40", 46068),  # ECC on: 48 GiB less ~1/16, as the L40S
])
def test_driver_reported_totals_are_used_where_published(gpu_id, mib):
    """nvidia-smi's total is the catalog's memory_bytes; est.gpu() takes the CUDA-visible total where there is one."""
    raw = next(g for g in RAW_GPUS if g["id"] == gpu_id)
    assert raw["memory_bytes"] == mib * 2**20
    assert est.gpu(gpu_id).memory_bytes == raw.get("cuda_visible_bytes", mib * 2**20)


@pytest.mark.parametrize("gpu_id, published", [
    ("l4", 23570219008),  # deviceQuery '22478 MBytes (23570219008 bytes)' (thamada/nvidia-smi gls/L4_deviceQuery.py)
    ("l40s", 47803596800),  # deviceQuery '45589 MBytes (47803596800 bytes)'
    ("v100-32gb", 34072559616),  # deviceQuery '32494 MBytes (34072559616 bytes)' (felicepantaleo/gpu_training)
    ("t4", 15633680957),  # PyTorch 'total capacity of 14.56 GiB': 14.56 x 2^30 = 15,633,680,957.44 -> 15,633,680,957
    ("rtx-5090", 33715493274),  # vLLM 'Free memory on device (30.27/31.4 GiB)': 31.40 x 2^30 = 33,715,493,273.6
    ("rtx-a6000", 51041271808),  # XLA spec 'device_memory_size: 51041271808' (/ 2^30 = 47.536: vLLM's 47.54GiB)
    ("h100-pcie", 84942979072),  # XLA spec 'device_memory_size: 84942979072'
    ("h200", 150109945856),  # torch 'total_memory=143156MB': 143,156 x 1,048,576 = 150,109,945,856
    ("a10g", 23826792448),  # torch 'total_memory=22723MB': 22,723 x 1,048,576 = 23,826,792,448
    ("rtx-3090", 25286672384),  # totalGlobalMem 'Global Memory: 25286672384 bytes' (R570+ driver)
    ("dgx-spark", 130663642563),  # vLLM '(67.92/121.69 GiB)': 121.69 x 2^30 = 130,663,642,562.56
    ("rtx-pro-6000-blackwell", 101973261025),  # ds4 'total=94.97 GiB': 94.97 x 2^30 = 101,973,261,025.28
    ("rtx-a5000", 25402343424),  # device_info '24226 MBytes (25402343424 bytes)'
])
def test_cuda_visible_totals_are_the_published_figures(gpu_id, published):
    """vLLM budgets from CUDA's total (cudaMemGetInfo), so est.gpu() takes it; the nvidia-smi total stays in the
    catalog as memory_bytes (L4: 23034 MiB = 24,152,899,584 bytes, 582,680,576 bytes = 555.7 MiB above CUDA's)."""
    raw = next(g for g in RAW_GPUS if g["id"] == gpu_id)
    assert raw["cuda_visible_bytes"] == published
    assert est.gpu(gpu_id).memory_bytes == published


@pytest.mark.parametrize("raw", [g for g in RAW_GPUS if "cuda_visible_bytes" in g], ids=lambda g: g["id"])
def test_every_cuda_visible_total_is_below_nvidia_smi_and_followable(raw):
    """CUDA's total is what the driver leaves after its own reservation, so below nvidia-smi's (by 0.2-1.0 GiB on
    the discrete cards in the sources; on unified memory, the DGX Spark, it is what the OS sees of the 128 GiB), and
    its source is a URL or a repository path at a commit a reader can open."""
    assert 0 < raw["cuda_visible_bytes"] < raw["memory_bytes"]
    if "unified" not in raw["memory_type"]:
        assert raw["memory_bytes"] - raw["cuda_visible_bytes"] < 2**30
    source = raw["cuda_visible_source"]
    assert "https://github.com/" in source and "via code index" not in source
    assert re.search(r"/(blob/[0-9a-f]{40}/|issues/\d+|pull/\d+)", source)


@pytest.mark.parametrize("gpu_id, field, published", [
    ("rtx-2080-ti", "fp16_tflops", 53.8),  # Turing whitepaper, FP16 tensor with FP32 accumulate (reference clock)
    ("rtx-3080-10gb", "bf16_tflops", 59.5),  # GA102 whitepaper, Appendix A (119 with sparsity)
    ("rtx-4080", "bf16_tflops", 97.5),  # Ada whitepaper, FP32 accumulate
    ("rtx-6000-ada", "fp8_tflops", 728.5),  # RTX 6000 Ada datasheet: 1457 TF FP8 with sparsity
])
def test_derived_tensor_rates_equal_the_published_ones(gpu_id, field, published):
    """Cards whose tensor TFLOPs the catalog derives (cores x boost clock x the architecture's ratio) land on the
    figure NVIDIA publishes for them."""
    assert getattr(est.gpu(gpu_id), field) == published


@pytest.mark.parametrize("gpu_id, field, tflops", [
    # RDNA 3 WMMA, FP16 = BF16, FP32 accumulate: 96 CUs x 512 FLOPs/CU/clock x 2.5 GHz boost = 122.88
    ("rx-7900-xtx", "bf16_tflops", 122.9),
    ("rx-7900-xtx", "fp16_tflops", 122.9),
    ("rx-7900-xtx", "fp8_tflops", None),  # no FP8 WMMA on RDNA 3
    # RDNA 2, no matrix units: packed FP16 = 2 x FP32 = 80 CUs x 256 x 2.25 GHz = 46.08; no BF16 arithmetic
    ("rx-6900-xt", "fp16_tflops", 46.1),
    ("rx-6900-xt", "bf16_tflops", None),
    # RDNA 4 WMMA dense: 64 CUs x 1024 x 2.97 GHz = 194.6 (AMD's 389 is with sparsity); FP8 64 x 2048 x 2.97 = 389.3
    ("rx-9070-xt", "bf16_tflops", 194.6),
    ("rx-9070-xt", "fp8_tflops", 389.3),
    # NVIDIA: 2064 AI TOPS (FP4, sparse) / 2 dense = 1032 FP4 -> 516 FP8 -> 258 BF16 (DERIVED, as the RTX PRO 6000)
    ("rtx-pro-5000-blackwell", "bf16_tflops", 258),
    ("rtx-pro-5000-blackwell", "fp8_tflops", 516),
])
def test_radeon_and_rtx_pro_compute_peaks_are_the_derived_dense_figures(gpu_id, field, tflops):
    assert getattr(est.gpu(gpu_id), field) == tflops


def test_every_radeon_rx_has_a_16_bit_compute_peak():
    """Without one prefill is estimated memory-bound only (10-50x too fast); RDNA 2 records FP16 only."""
    radeons = [g for g in est.gpus() if g.id.startswith("rx-")]
    assert len(radeons) >= 20
    assert all((g.bf16_tflops or g.fp16_tflops) for g in radeons)


def test_apple_chips_link_only_over_thunderbolt_5_in_a_mesh_of_four():
    """RDMA over Thunderbolt needs Thunderbolt 5 (Apple TN3205), which the M4 Pro / M4 Max, M3 Ultra and M5 Pro /
    M5 Max Macs have and the rest do not; MLX's tensor parallelism needs a full mesh (a cable between every pair),
    and a mesh of 8 would take 7 ports on each Mac: 4 Macs at most. 80 Gb/s each way = 10 GB/s."""
    apple = [g for g in est.gpus() if g.kind == "apple"]
    linked = {g.id for g in apple if g.max_devices == 4}
    families = ("m4-pro-", "m4-max-", "m3-ultra-", "m5-pro-", "m5-max-")
    assert linked == {g.id for g in apple if g.id.startswith(families)} and len(linked) == 20
    assert all(g.max_devices == 1 and g.interconnect_gb_s is None for g in apple if g.id not in linked)
    assert all(g.interconnect_gb_s == 10 and g.interconnect.startswith("Thunderbolt 5") for g in apple
               if g.id in linked)
    assert all(g.max_devices is None for g in est.gpus() if g.kind != "apple")
