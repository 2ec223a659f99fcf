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


def test_training_without_zero_uses_zero_3_when_it_needs_several_gpus():
    s = est.FinetuneScenario(est.model("meta-llama/Llama-3.1-8B").architecture)
    fitted = est.fit(s, estimate_finetune, est.gpu("a100-80gb-sxm"))
    assert fitted.count == 2 and fitted.note == "with ZeRO-3"
    assert with_gpus(s, 2).zero_stage == 3


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
