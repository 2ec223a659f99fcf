"""GPU fit: counts use the estimate's own sharding; inverse searches find the exact boundary."""

from dataclasses import replace

import estimator as est
from estimator.finetune import estimate_finetune
from estimator.hardware import max_concurrency, with_gpus
from estimator.inference import estimate_inference


def test_a_70b_model_at_16_bit_needs_two_h100s_by_tensor_parallelism():
    a = est.model("meta-llama/Llama-3.3-70B-Instruct").architecture
    fitted = est.fit(est.InferenceScenario(a), estimate_inference, est.gpu("h100-sxm"))
    assert fitted.count == 2
    assert fitted.per_gpu_bytes == estimate_inference(est.InferenceScenario(a, tensor_parallel=2)).total
    assert fitted.headroom_bytes == est.gpu("h100-sxm").memory_bytes - fitted.per_gpu_bytes


def test_inference_counts_divide_the_attention_heads():
    """Qwen2.5-7B has 28 heads: vLLM accepts tp 1, 2, 4 (and 7, 14, 28), so 8 is never proposed."""
    a = est.model("Qwen/Qwen2.5-7B").architecture
    counts = [est.fit(est.InferenceScenario(a, seq_len=s), estimate_inference, est.gpu("rtx-3090")).count
              for s in (2048, 200_000)]
    assert all(c is None or 28 % c == 0 for c in counts)


def test_training_fits_with_its_own_sharding_and_names_zero_3_as_a_suggestion():
    """Issue 14 item 9: ZeRO 0 on 8 GPUs keeps 98.7 GB on each GPU; the fit does not silently switch to ZeRO-3."""
    s = est.FinetuneScenario(est.model("meta-llama/Llama-3.1-8B").architecture, num_gpus=8)
    a100 = est.gpu("a100-80gb-sxm")
    fitted = est.fit(s, estimate_finetune, a100)
    assert fitted.count is None and fitted.per_gpu_bytes == estimate_finetune(s).total == 98_685_047_808
    assert fitted.zero3_count == 2 and fitted.note == "ZeRO-3: 2 GPUs"
    assert with_gpus(s, 2).zero_stage == 0 and with_gpus(s, 2, zero_stage=3).zero_stage == 3
    sharded = est.fit(replace(s, zero_stage=3), estimate_finetune, a100)
    assert (sharded.count, sharded.note, sharded.zero3_count) == (2, "ZeRO-3", None)
    assert sharded.per_gpu_bytes == estimate_finetune(replace(s, zero_stage=3, num_gpus=2)).total
    assert est.fit(replace(s, zero_stage=2), estimate_finetune, a100).note == "ZeRO-2"  # the user's own stage


def test_training_that_fits_one_gpu_needs_one_whatever_its_sharding():
    s = est.FinetuneScenario(est.ParamCount.from_billions(7), technique="lora")
    fitted = est.fit(s, estimate_finetune, est.gpu("rtx-4090"))
    assert (fitted.count, fitted.per_gpu_bytes, fitted.note) == (1, 18_100_000_000, "")


def test_a_model_too_large_for_any_count_reports_none():
    s = est.InferenceScenario(est.ParamCount.from_billions(20_000))
    assert est.fit(s, estimate_inference, est.gpu("t4")).count is None


def test_max_seq_len_is_the_exact_boundary():
    s = est.InferenceScenario(est.model("meta-llama/Llama-3.1-8B").architecture)
    capacity = est.gpu("rtx-4090").memory_bytes
    longest = est.max_seq_len(s, estimate_inference, capacity)
    assert estimate_inference(replace(s, seq_len=longest)).total <= capacity
    assert estimate_inference(replace(s, seq_len=longest + 1)).total > capacity


def test_max_concurrency_is_the_exact_boundary():
    s = est.InferenceScenario(est.model("Qwen/Qwen3-8B").architecture, seq_len=8192)
    capacity = est.gpu("h100-sxm").memory_bytes
    most = max_concurrency(s, estimate_inference, capacity)
    assert most > 1
    assert estimate_inference(replace(s, concurrency=most)).total <= capacity
    assert estimate_inference(replace(s, concurrency=most + 1)).total > capacity


def test_nothing_fits_gives_zero():
    s = est.InferenceScenario(est.model("deepseek-ai/DeepSeek-V3").architecture)
    assert est.max_seq_len(s, estimate_inference, est.gpu("rtx-3090").memory_bytes) == 0


def test_sweep_returns_one_breakdown_per_value():
    s = est.InferenceScenario(est.ParamCount.from_billions(7))
    rows = est.sweep(s, estimate_inference, "seq_len", [1024, 2048, 4096])
    assert [r.component("kv_cache") for r in rows] == [700_000_000, 1_400_000_000, 2_800_000_000]


def test_macs_combine_over_thunderbolt_5_at_most_four_and_the_fit_says_why_it_stopped():
    """Llama 3.3 70B at 16-bit: 4 M4 Pro 64 GB Macs (48 GiB wired each) hold it by tensor parallelism; an M4 Pro
    24 GB would need 8, more than a Thunderbolt 5 mesh links; an M1 has no Thunderbolt 5, so one Mac or none. An
    RTX 4090, whose count no limit stops, still takes 8."""
    s = est.InferenceScenario(est.model("meta-llama/Llama-3.3-70B-Instruct").architecture)
    m4_pro = est.fit(s, estimate_inference, est.gpu("m4-pro-20c-64gb"))
    assert (m4_pro.count, m4_pro.note) == (4, "")
    assert m4_pro.per_gpu_bytes == estimate_inference(with_gpus(s, 4)).total <= 48 * 2**30
    small = est.fit(s, estimate_inference, est.gpu("m4-pro-20c-24gb"))
    assert (small.count, small.note) == (None, "at most 4 Macs: a Thunderbolt 5 mesh")
    assert estimate_inference(with_gpus(s, 8)).total > 16 * 2**30  # 8 would not fit either: 70B x 2 bytes / 8 > 16 GiB
    m1 = est.fit(s, estimate_inference, est.gpu("m1-8c-16gb"))
    assert (m1.count, m1.note, m1.per_gpu_bytes) == (None, "one Mac: no Thunderbolt 5", estimate_inference(s).total)
    assert est.fit(s, estimate_inference, est.gpu("rtx-4090")).count == 8


def test_fine_tuning_on_apple_chips_is_one_mac_whatever_the_zero_stage():
    """MLX trains across Macs by data parallelism (each Mac holds the whole model) and ZeRO / FSDP need collectives
    Apple GPUs lack: the full fine-tune of an 8B model with ZeRO-3 that 32 RTX 4090s hold is one Mac or none."""
    s = est.FinetuneScenario(est.model("meta-llama/Llama-3.1-8B").architecture, zero_stage=3)
    mac = est.fit(s, estimate_finetune, est.gpu("m4-max-40c-64gb"))
    assert (mac.count, mac.note, mac.zero3_count) == (None, "fine-tuning runs on one Mac", None)
    assert mac.per_gpu_bytes == estimate_finetune(s).total
    assert est.fit(s, estimate_finetune, est.gpu("rtx-4090")).count == 32
    lora = est.fit(replace(s, technique="lora"), estimate_finetune, est.gpu("m4-max-128gb"))
    assert (lora.count, lora.note) == (1, "")
