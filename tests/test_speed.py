"""The speed model's roofline, pinned to hand-computed examples (one dense, one MoE, one quantized, one TP case),
and its interfaces. Efficiencies are 1 in the roofline tests, so the arithmetic is the model's alone."""

from __future__ import annotations

import pytest

from estimator import catalog, speed
from estimator.catalog import Gpu

LLAMA2_7B = catalog.model("meta-llama/Llama-2-7b-hf").architecture
MIXTRAL = catalog.model("mistralai/Mixtral-8x7B-v0.1").architecture
RTX_4090 = catalog.gpu("rtx-4090")

# Llama 2 7B: 32 layers x (q, k, v, o 4 x 4096 x 4096 + gate, up, down 3 x 4096 x 11008) = 6,476,005,376, plus the
# untied lm_head 32,000 x 4096 = 131,072,000: 6,607,077,376 matrix weights a step reads (the input embedding is a
# row lookup); 65 RMSNorm vectors of 4096 = 266,240 parameters
LLAMA_MATRICES = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 32000 * 4096
LLAMA_NORMS = 65 * 4096


def test_llama_2_7b_reads_its_matrices_but_not_the_input_embedding():
    assert LLAMA_MATRICES == 6_607_077_376
    w = speed.weight_traffic(LLAMA2_7B, "bf16")
    assert (w.layers, w.vectors, w.experts, w.lookup) == (LLAMA_MATRICES * 2, LLAMA_NORMS * 2, 0, 32000 * 4096 * 2)


def test_dense_decode_at_batch_1_is_bytes_over_bandwidth():
    """Llama 2 7B bf16 on an RTX 4090 (1008 GB/s), tg128: 64 cached tokens on average, each K and V x 32 layers x
    4096 x 2 bytes = 524,288 B."""
    p = speed.peaks(RTX_4090, "bf16")
    step = speed.decode_phase(LLAMA2_7B, "bf16", "bf16", 1, 1, 64, p, 1.0, 1.0)
    expected = LLAMA_MATRICES * 2 + LLAMA_NORMS * 2 + 64 * 2 * 32 * 4096 * 2
    assert step.bytes == expected == 13_248_241_664
    assert step.memory_s == pytest.approx(13_248_241_664 / 1008e9)
    # FLOPs: 2 x (6,607,077,376 + 266,240) + attention 4 x 4096 x 64 keys x 32 layers
    assert step.flops == 2 * (LLAMA_MATRICES + LLAMA_NORMS) + 4 * 4096 * 64 * 32
    assert step.bound == "memory"
    assert 1 / step.seconds == pytest.approx(1008e9 / 13_248_241_664)  # 76.1 tokens/s at 100% of the bandwidth


def test_dense_prefill_of_512_tokens_is_flops_over_peak():
    """2 x 6,607,343,616 x 512 + causal attention 4 x 4096 x 32 layers x (512 x 513 / 2) at 165.2 TFLOPs."""
    p = speed.peaks(RTX_4090, "bf16")
    fill = speed.prefill_phase(LLAMA2_7B, "bf16", 1, 512, p, 1.0, 1.0)
    flops = 2 * 6_607_343_616 * 512 + 4 * 4096 * 32 * (512 * 513 // 2)
    assert fill.flops == flops == 6_834_773_557_248
    assert fill.bound == "compute"
    assert 512 / fill.seconds == pytest.approx(512 * 165.2e12 / flops)  # 12,375 tokens/s at 100% of the peak


def test_moe_decode_reads_only_the_experts_its_tokens_touch():
    """Mixtral 8x7B: 8 experts of 3 x 4096 x 14336 in each of 32 layers, 2 per token. One sequence touches 2/8 of
    them; four touch 1 - (6/8)^4 = 68.36%."""
    experts = 32 * 8 * 3 * 4096 * 14336 * 2
    # attention q, o 4096 x 4096, k, v 1024 x 4096, router 8 x 4096 per layer, and the lm_head
    layers = (32 * (2 * 4096 * 4096 + 2 * 1024 * 4096 + 8 * 4096) + 32000 * 4096) * 2
    w = speed.weight_traffic(MIXTRAL, "bf16")
    assert (w.experts, w.layers) == (experts, layers) == (90_194_313_216, 2_948_595_712)
    assert speed.experts_touched(MIXTRAL, 1) == 0.25
    assert speed.experts_touched(MIXTRAL, 4) == pytest.approx(1 - 0.75**4) == pytest.approx(0.68359375)
    assert speed.experts_touched(MIXTRAL, 4096) == pytest.approx(1.0)
    p = speed.peaks(catalog.gpu("h100-sxm"), "bf16")
    one = speed.decode_phase(MIXTRAL, "bf16", "bf16", 1, 1, 0, p, 1.0, 1.0)
    assert one.bytes == layers + experts * 0.25 + w.vectors  # 25,497,719,296 B: 13.1 tokens/s at 3350 GB/s
    four = speed.decode_phase(MIXTRAL, "bf16", "bf16", 1, 4, 0, p, 1.0, 1.0)
    assert four.bytes == pytest.approx(layers + experts * 0.68359375 + w.vectors)


def test_quantized_q4_0_reads_18_bytes_per_32_weights_and_q6_k_output():
    """llama.cpp's Q4_0 recipe: block linears Q4_0 (18 B per 32), output Q6_K (210 B per 256), norms F32."""
    w = speed.weight_traffic(LLAMA2_7B, "q4_0")
    blocks = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) * 18 // 32
    output = 32000 * 4096 * 210 // 256
    assert w.layers == blocks + output == 3_750_273_024
    assert w.vectors == LLAMA_NORMS * 4
    bench = speed.llama_bench(LLAMA2_7B, RTX_4090, "q4_0")  # tg128: 64 cached tokens on average
    e = speed.efficiency("llama.cpp", "nvidia-consumer", "decode", "quantized")
    step_bytes = 3_750_273_024 + LLAMA_NORMS * 4 + 64 * 524_288
    # one engine's key: its records fit a cost per layer (32 of them) next to the bandwidth fraction, no fixed step
    assert e.layer_s > 0 and e.step_s == 0 and e.fixed_s(32) == 32 * e.layer_s
    assert bench.decode_tokens_per_s == pytest.approx(1 / (step_bytes / (1008e9 * e.value) + 32 * e.layer_s))


def test_tensor_parallel_halves_the_bytes_and_adds_two_all_reduces_per_layer():
    """TP 2 on RTX 4090s (PCIe 4.0 x16, 32 GB/s each way; NCCL, vLLM's custom all-reduce being off without NVLink):
    each GPU reads half the matrices and all the norms, and each of 2 x 32 layers' all-reduces costs NCCL's 15.93 us
    over PCIe plus its bytes, 2 x 32 layers x 2 (2 - 1) / 2 x 4096 x 2 bytes = 524,288 B per decoded token."""
    p = speed.peaks(RTX_4090, "bf16")
    assert (p.link, p.link_latency) == (32e9, pytest.approx(15.93e-6))
    step = speed.decode_phase(LLAMA2_7B, "bf16", "bf16", 2, 1, 0, p, 1.0, 1.0)
    assert step.bytes == LLAMA_MATRICES * 2 / 2 + LLAMA_NORMS * 2 == 6_607_609_856
    assert step.comm_s == pytest.approx(64 * 15.93e-6 + 524_288 / 32e9)  # 1,019.52 + 16.38 us
    assert step.seconds == pytest.approx(6_607_609_856 / 1008e9 + 64 * 15.93e-6 + 524_288 / 32e9)


def test_tp_4_decode_pays_the_latency_of_its_all_reduces_over_nvlink():
    """Llama 2 7B BF16 on 4 H100 SXM (3,350 GB/s; NVLink 4, 450 GB/s each way): each GPU reads a quarter of the
    matrices, 6,607,077,376 x 2 / 4 = 3,303,538,688 B, and the norms, 532,480 B; 2 x 32 all-reduces at the custom
    all-reduce's 8.8 us = 563.2 us, plus 2 x 32 x 2 x 3/4 x 4096 x 2 B = 786,432 B over the link (1.75 us). At 100%
    of the bandwidth: 3,304,071,168 / 3350e9 = 986.3 us + 564.9 us = 1,551.2 us, 645 tokens/s (1,014 without the
    latency)."""
    p = speed.peaks(catalog.gpu("h100-sxm"), "bf16")
    assert (p.link, p.link_latency) == (450e9, pytest.approx(8.8e-6))
    assert "8.8 us" in p.notes[-1] and "sgl-project/sglang#2904" in p.notes[-1]
    step = speed.decode_phase(LLAMA2_7B, "bf16", "bf16", 4, 1, 0, p, 1.0, 1.0)
    assert step.bytes == 3_303_538_688 + 532_480 == 3_304_071_168
    assert step.comm_s == pytest.approx(64 * 8.8e-6 + 786_432 / 450e9)
    assert 1 / step.seconds == pytest.approx(1 / (3_304_071_168 / 3350e9 + 563.2e-6 + 786_432 / 450e9))
    assert 1 / step.seconds == pytest.approx(644.7, abs=0.1)
    # MI300X's Infinity Fabric: vLLM's ROCm custom all-reduce (6.3 us); a GPU without a recorded link: PCIe's NCCL
    assert speed.peaks(catalog.gpu("mi300x"), "bf16").link_latency == pytest.approx(6.3e-6)
    assert speed.link_kind(None) == speed.link_kind("ConnectX-7 200 Gb/s") == "pcie"
    tp4 = speed.inference_speed(LLAMA2_7B, catalog.gpu("h100-sxm"), "bf16", tp=4)
    assert "0.563 ms of it the latency of 64 all-reduces at 8.8 us each" in " ".join(tp4.assumptions)


def test_four_m3_ultras_over_thunderbolt_5_decode_a_27b_model_about_three_times_as_fast_as_one():
    """Apple's WWDC26 session 233 (https://developer.apple.com/videos/play/wwdc2026/233/): 4 M3 Ultras in a
    Thunderbolt 5 mesh generate Qwen 3.6 27B's tokens 'at nearly three times the rate of a single machine' (format
    unstated). The link: 10 GB/s each way, and no published small-message latency for JACCL, so PCIe's NCCL figure,
    said so. 4-bit to 16-bit weights span the claim: the 128 all-reduces cost the same, the bytes shrink."""
    a, m3_ultra = catalog.model("nvidia/Qwen3.6-27B-NVFP4").architecture, catalog.gpu("m3-ultra-80c-512gb")
    p = speed.peaks(m3_ultra, "bf16")
    assert (p.link, p.link_latency) == (10e9, pytest.approx(15.93e-6)) and "so PCIe's" in p.notes[-1]
    ratios = [speed.inference_speed(a, m3_ultra, f, tp=4, engine="mlx").decode_tokens_per_s
              / speed.inference_speed(a, m3_ultra, f, engine="mlx").decode_tokens_per_s for f in ("q4_k_m", "bf16")]
    assert 2 < ratios[0] < 3 < ratios[1] < 3.2


def test_tensor_parallelism_past_one_server_says_its_network_is_not_modelled():
    """8 H100s share a server's NVSwitch; 16 span two servers, whose all-reduces cross the network (not modelled,
    and SGLang on 16 H100s over InfiniBand decoded DeepSeek-R1 at 23.1 ms a token where the NVLink estimate is ~8:
    validation/published/speed.csv, skipped); a GB200 NVL72 rack is one NVLink domain of 72."""
    a, h100 = catalog.model("deepseek-ai/DeepSeek-V3").architecture, catalog.gpu("h100-sxm")
    assert speed.across_servers_note(h100, 8) == "" == speed.across_servers_note(catalog.gpu("gb200"), 64)
    assert speed.across_servers_note(h100, 16).startswith("Tensor parallel over 16 spans 2 servers of 8")
    assert speed.across_servers_note(catalog.gpu("gb200"), 128).startswith("Tensor parallel over 128 spans 2 servers "
                                                                            "of 72")
    notes = speed.inference_speed(a, h100, "bf16", tp=32, engine="sglang").assumptions
    assert sum("spans 4 servers of 8" in n for n in notes) == 1
    assert not any("servers" in n for n in speed.inference_speed(a, h100, "bf16", tp=8).assumptions)


def test_fp8_is_its_own_kernel_kind_where_the_gpu_has_fp8_tensor_cores():
    """FP8 weights on an H20 (296 FP8 TFLOPs) run W8A8 GEMMs with no dequantisation: kernel kind 'fp8', whose SGLang
    key is set by the Qwen team's FP8 rows alone; on an A100 (no FP8 tensor cores: Marlin weight-only FP8) they are
    'quantized' like AWQ. Llama 2 7B in FP8 reads its 224 block matrices at 1 byte (6,476,005,376 B) with a 4-byte
    per-tensor scale each (896 B), the lm_head kept 16-bit (32,000 x 4096 x 2 = 262,144,000 B), the norms
    (532,480 B) and 64 cached tokens' BF16 KV (64 x 524,288 = 33,554,432 B): 6,772,237,184 B a step."""
    h20, a100 = catalog.gpu("h20"), catalog.gpu("a100-80gb-sxm")
    assert [speed.kernel_kind(f, h20) for f in ("bf16", "fp8", "fp8-block", "awq-4bit", "q4_k_m")] == \
        ["16-bit", "fp8", "fp8", "quantized", "quantized"]
    assert speed.kernel_kind("fp8", a100) == "quantized"
    e = speed.efficiency("sglang", "nvidia-datacenter", "decode", "fp8", "h20")
    assert e.key == "sglang, h20, decode, fp8" and e.layer_s > 0 and e.step_s == 0
    assert e.records and all("-fp8-" in r for r in e.records)
    assert e != speed.efficiency("sglang", "nvidia-datacenter", "decode", "quantized", "h20")
    step_bytes = 6_476_005_376 + 896 + 262_144_000 + 532_480 + 33_554_432
    assert speed.weight_traffic(LLAMA2_7B, "fp8").layers + LLAMA_NORMS * 2 + 64 * 524_288 == step_bytes \
        == 6_772_237_184
    s = speed.inference_speed(LLAMA2_7B, h20, "fp8", context=64, engine="sglang")
    assert s.decode_tokens_per_s == pytest.approx(1 / (step_bytes / (4000e9 * e.value) + 32 * e.layer_s))


def test_a_prompts_forward_has_its_own_kernel_kinds():
    """At prefill a dense model's weight-only format multiplies on the 16-bit tensor cores (the dequantisation
    amortised over thousands of rows), so AWQ shares bf16's kind; a MoE's expert FLOPs are grouped GEMMs ('moe')
    whatever the format; FP8 on FP8 tensor cores and GGUF keep their decode kinds. The decode kinds are unchanged."""
    h100, qwen3_moe = catalog.gpu("h100-sxm"), catalog.model("Qwen/Qwen3-30B-A3B").architecture
    assert [speed.prefill_kernel_kind(LLAMA2_7B, f, h100) for f in ("bf16", "awq-4bit", "gptq-4bit", "nf4", "int8",
                                                                     "fp8", "q4_k_m", "nvfp4")] == \
        ["16-bit", "16-bit", "16-bit", "16-bit", "16-bit", "fp8", "quantized", "quantized"]
    assert {speed.prefill_kernel_kind(m, f, h100) for m in (MIXTRAL, qwen3_moe)
            for f in ("bf16", "awq-4bit", "mxfp4")} == {"moe"}
    # FP8 experts on FP8 tensor cores run block-scaled FP8 grouped GEMMs, their own kind (Marlin's on an A100)
    assert speed.prefill_kernel_kind(qwen3_moe, "fp8-block", h100) == "moe-fp8"
    assert speed.prefill_kernel_kind(qwen3_moe, "fp8-block", catalog.gpu("a100-80gb-sxm")) == "moe"
    assert speed.kernel_kind("awq-4bit", h100) == "quantized"  # decode: 4-bit bytes, dequantised inside the GEMV
    # an AWQ prompt on an A100 under vLLM takes the efficiency of vLLM's 16-bit prompts, not of its MoE ones
    a100 = catalog.gpu("a100-80gb-sxm")
    e = speed.efficiency("vllm", "nvidia-datacenter", "prefill", "16-bit", a100.id)
    assert e.key == "vllm, nvidia-datacenter, prefill, 16-bit" and "vllm20469-a100-qwen3-14b-awq-c1-ttft" in e.records
    assert e != speed.efficiency("vllm", "nvidia-datacenter", "prefill", "moe", a100.id)
    s = speed.inference_speed(LLAMA2_7B, a100, "awq-4bit", prompt=4096, engine="vllm")
    assert s.basis.e_flops == e and s.basis.fill.bound == "compute"
    # weights as the checkpoint stores them: DeepSeek-V3's block FP8 runs on the H100's FP8 peak (1,979 TFLOPs)
    v3 = catalog.model("deepseek-ai/DeepSeek-V3").architecture
    assert v3.checkpoint.format_id == "fp8-block"
    assert speed.inference_speed(v3, h100, "checkpoint", tp=8).basis.peaks.flops == h100.fp8_tflops * 1e12 == 1979e12


def test_fp8_weights_use_the_fp8_peak_where_the_gpu_has_one():
    h100 = catalog.gpu("h100-sxm")
    fp8 = Gpu(**{**vars(h100), "fp8_tflops": 1979.0})
    assert speed.peaks(fp8, "fp8").flops == 1979e12
    assert speed.peaks(fp8, "awq-4bit").flops == h100.bf16_tflops * 1e12
    assert speed.peaks(Gpu(**{**vars(h100), "fp8_tflops": None}), "fp8").flops == h100.bf16_tflops * 1e12


def test_attention_runs_at_the_16_bit_peak_under_fp8_weights():
    """Llama 2 7B in FP8 on an H100 SXM at 100%, a 4,096-token prompt: the matmuls 2 x 6,607,343,616 x 4,096 =
    54,127,358,902,272 FLOPs at the FP8 peak (1,979 TFLOPs), causal attention 4 x 4,096 (query width) x 32 layers x
    4,096 x 4,097 / 2 = 4,399,120,252,928 FLOPs at the BF16 peak (989 TFLOPs): 27.35 + 4.45 = 31.80 ms. In BF16 both
    run at 989: 59.18 ms."""
    h100 = catalog.gpu("h100-sxm")
    matmuls, attention = 2 * 6_607_343_616 * 4096, 4 * 4096 * 32 * 4096 * 4097 // 2
    assert (matmuls, attention) == (54_127_358_902_272, 4_399_120_252_928)
    p = speed.peaks(h100, "fp8")
    assert (p.flops, p.attention_flops) == (1979e12, 989e12)
    fill = speed.prefill_phase(LLAMA2_7B, "fp8", 1, 4096, p, 1.0, 1.0)
    assert fill.flops == matmuls + attention and fill.bound == "compute"
    assert fill.compute_s == pytest.approx(matmuls / 1979e12 + attention / 989e12) == pytest.approx(31.80e-3, abs=5e-6)
    bf16 = speed.prefill_phase(LLAMA2_7B, "bf16", 1, 4096, speed.peaks(h100, "bf16"), 1.0, 1.0)
    assert bf16.compute_s == pytest.approx((matmuls + attention) / 989e12) == pytest.approx(59.18e-3, abs=5e-6)


def test_a_prompts_attention_at_its_own_kernels_fraction():
    """The same FP8 prompt with the GEMMs at 0.5 of their peak and the attention at 0.25 of the BF16 peak:
    54,127,358,902,272 / (1,979e12 x 0.5) + 4,399,120,252,928 / (989e12 x 0.25) = 54.70 + 17.79 = 72.49 ms; with
    no attention fraction given the attention runs at the GEMMs' 0.5: 54.70 + 8.90 = 63.60 ms."""
    p = speed.peaks(catalog.gpu("h100-sxm"), "fp8")
    own = speed.prefill_phase(LLAMA2_7B, "fp8", 1, 4096, p, 1.0, 0.5, e_attention=0.25)
    assert own.compute_s == pytest.approx(54_127_358_902_272 / 989.5e12 + 4_399_120_252_928 / 247.25e12)
    assert own.compute_s == pytest.approx(72.49e-3, abs=5e-6)
    assert speed.prefill_phase(LLAMA2_7B, "fp8", 1, 4096, p, 1.0, 0.5).compute_s == pytest.approx(63.60e-3, abs=5e-6)


def test_vllm_runs_gemma_4_attention_on_triton_where_flashattention_4_is_missing():
    """Gemma 4's full layers have 512-wide heads: vLLM's Gemma4Config takes FlashAttention 4 for every layer where
    the GPU has it (Hopper, datacenter Blackwell), else forces TRITON_ATTN. Other engines and models keep their fused
    kernel."""
    gemma4 = catalog.model("google/gemma-4-26B-A4B").architecture
    assert gemma4.global_head_dim == 512 and gemma4.head_dim == 256
    spark, h100, rtx = (catalog.gpu(i) for i in ("dgx-spark", "h100-sxm", "rtx-4090"))
    assert [speed.attention_kernel("vllm", gemma4, g) for g in (spark, rtx, h100)] == ["triton", "triton", "flash"]
    assert speed.attention_kernel("sglang", gemma4, spark) == "flash"
    assert speed.attention_kernel("vllm", LLAMA2_7B, spark) == "flash"
    # the assumptions say which kernel runs the attention, and whether a sweep on that GPU sets its fraction
    notes = {g.id: " ".join(speed.inference_speed(gemma4, g, "bf16", prompt=32768, engine="vllm").assumptions)
             for g in (spark, rtx, h100)}
    assert "Triton attention" in notes["dgx-spark"] and "its own fraction of the 16-bit peak" in notes["dgx-spark"]
    assert "Triton attention" in notes["rtx-4090"] and "taken at the GEMMs'" in notes["rtx-4090"]
    assert "Triton" not in notes["h100-sxm"]


def test_vllm_v0_chunks_a_long_context_prompt_by_default_and_on_rocm_runs_it_in_the_triton_prefix_kernel():
    """vLLM's V0 engine before v0.6.5 served a model at more than 32,768 tokens with chunked prefill on, 512 tokens a
    step; its ROCm backend then runs every chunk's attention in the Triton prefix-prefill kernel, not its flash
    attention. Llama 3.1 serves 131,072 tokens by default; 32,768 is not more than 32K; v0.6.5 stopped the default on
    ROCm; V1 releases (0.8 on) and other engines are not this rule."""
    assert speed.default_prefill_chunk("vllm", "0.6.3.dev116+g151ef4ef", 131072) == 512
    assert [speed.default_prefill_chunk("vllm", v, n) for v, n in (("0.6.3", 32768), ("0.6.5", 131072),
                                                                    ("0.11.0", 131072), ("", 131072))] == [0] * 4
    assert speed.default_prefill_chunk("sglang", "0.3.0", 131072) == 0
    llama405 = catalog.model("meta-llama/Llama-3.1-405B-Instruct").architecture
    mi300x, mi325x, h100 = (catalog.gpu(i) for i in ("mi300x", "mi325x", "h100-sxm"))
    assert llama405.max_position_embeddings == 131072
    assert speed.attention_kernel("vllm-v0", llama405, mi300x, chunked=True) == "triton-prefix"
    assert speed.attention_kernel("vllm-v0", llama405, mi300x) == "flash"
    assert speed.attention_kernel("vllm-v0", llama405, h100, chunked=True) == "flash"
    assert speed.attention_kernel("vllm", llama405, mi300x, chunked=True) == "flash"
    # where no sweep on the GPU sets the kernel's fraction, the assumptions say so and name the sweeps elsewhere
    notes = " ".join(speed.inference_speed(llama405, mi325x, "bf16", tp=8, prompt=65536, engine="vllm-v0",
                                           chunk=512).assumptions)
    assert "Triton prefix-prefill kernel" in notes and "taken at the GEMMs'" in notes and "on mi300x" in notes


def test_an_attention_fraction_is_looked_up_by_gpu_then_class_then_any_and_is_none_without_a_sweep():
    table = {("vllm", "dgx-spark", "attention", "triton"): speed.Efficiency(0.15, "spark", ("a",), sweeps=2),
             ("vllm", "", "attention", "flash"): speed.Efficiency(0.6, "any", ("b",), sweeps=1)}
    assert speed.attention_efficiency_in(table, "vllm", "nvidia-consumer", "triton", "dgx-spark").value == 0.15
    assert speed.attention_efficiency_in(table, "vllm", "nvidia-consumer", "triton", "rtx-4090") is None
    assert speed.attention_efficiency_in(table, "vllm", "nvidia-datacenter", "flash", "h100-sxm").value == 0.6
    assert speed.attention_efficiency_in(table, "sglang", "nvidia-datacenter", "flash", "h100-sxm") is None
    assert "2 prompt-length sweep(s)" in table[("vllm", "dgx-spark", "attention", "triton")].text


def test_each_speed_says_how_far_its_engine_and_gpu_class_came_from_published_measurements():
    """An engine's accuracy on the GPU's class, else on every class (saying none ran on this one), never another
    engine's; without an engine, every engine's on the class. speed.json holds vLLM's 20 prefill records on NVIDIA
    datacenter GPUs, exllamav2's two decode records, both on consumer cards, no exllamav2 prefill record, and
    torchtitan's six training records on A100s."""
    table = {("vllm", "nvidia-datacenter", "prefill"): speed.Accuracy("vllm", "nvidia-datacenter", "prefill", 20,
                                                                      10.4, 12.1, 0.0),
             ("vllm", "", "decode"): speed.Accuracy("vllm", "", "decode", 5, 3.0, 4.0, -2.5),
             ("", "amd", "decode"): speed.Accuracy("", "amd", "decode", 3, 66.4, 66.4, 197.8)}
    assert speed.accuracy_in(table, "vllm", "nvidia-datacenter", "prefill").records == 20
    assert speed.accuracy_in(table, "vllm", "amd", "decode").records == 5  # the engine on every class
    assert speed.accuracy_in(table, "sglang", "amd", "decode") is None  # not every engine's
    assert speed.accuracy_in(table, "", "amd", "decode").records == 3
    assert "on median the estimate is 2.5% slower than measured" in table[("vllm", "", "decode")].text
    llama = catalog.model("meta-llama/Llama-3.1-8B").architecture
    notes = speed.inference_speed(llama, catalog.gpu("h100-sxm"), "bf16", engine="vllm").assumptions
    assert any(n.startswith("Checked against 20 published prefill measurement(s) of vllm on NVIDIA datacenter "
                            "GPUs: median error 10.4%") for n in notes)
    notes = speed.inference_speed(llama, catalog.gpu("h100-sxm"), "bf16", engine="exllamav2").assumptions
    assert any(n.startswith("No published prefill measurement of exllamav2 was compared: this estimate's error is "
                            "unknown; it takes every engine's efficiencies, whose estimates of ") for n in notes)
    # a fine-tuning speed: the framework's own runs, or every framework's where it has none
    runs = speed.training_speed(llama, catalog.gpu("h100-sxm"), "full", 4, 2048, framework="torchtitan").assumptions
    assert runs[-1].startswith("Checked against 6 published training measurement(s) of torchtitan on NVIDIA "
                               "datacenter GPUs")
    runs = speed.training_speed(llama, catalog.gpu("h100-sxm"), "full", 4, 2048, framework="hf").assumptions
    assert runs[-1].startswith("No published training measurement of hf was compared")
    # a speed from the parameter count alone says it was not compared itself, and how the detailed one came
    from estimator.scenarios import InferenceScenario, ParamCount

    quick = speed.row_speed(InferenceScenario(ParamCount.from_billions(7)), "16-bit", catalog.gpu("rtx-4090"))
    assert quick.assumptions[-3].startswith("This quick speed was not compared with measurements itself")
    assert quick.assumptions[-2].startswith("Checked against 74 published prefill measurement(s) of every engine on "
                                            "NVIDIA consumer and workstation GPUs")
    assert any(n.startswith("Checked against 2 published decode measurement(s) of exllamav2 on GPUs of every class")
               and n.endswith("none of them on NVIDIA datacenter GPUs") for n in notes)


def test_sparse_attention_attends_to_the_indexers_top_k_and_scores_every_key_on_every_rank():
    """DeepSeek-V3.2 (61 MLA layers, query width 128 x 192 = 24,576; indexer 64 heads x 128, top-k 2,048) at TP 8 on
    an H200 in FP8, an 8,192-token prompt. Main attention: token t attends to min(t, 2,048) keys, sum = 2,048 x
    2,049 / 2 + 6,144 x 2,048 = 14,681,088, x 4 x 24,576 x 61 layers, split over the 8 ranks, at the BF16 peak. The
    indexer scores all t keys: 8,192 x 8,193 / 2 = 33,558,528 x 2 x 64 x 128 x 61, replicated on every rank (vLLM's
    Indexer: "no tensor parallel, just replicated"), at the FP8 peak (DeepGEMM's fp8_mqa_logits). Decode at 32,768
    cached tokens reads the 576-wide bf16 latents of 2,048 of them (61 x 576 x 2 x 2,048 = 143,917,056 bytes) and
    the fp8 indexer key + scale of all (61 x 132 x 32,768 = 263,847,936), where dense attention would read
    2,302,672,896 bytes of latents."""
    v32 = catalog.model("deepseek-ai/DeepSeek-V3.2").architecture
    h200 = catalog.gpu("h200")
    p = speed.peaks(h200, "fp8")
    attention = 4 * 24_576 * 61 * (2048 * 2049 // 2 + 6144 * 2048)
    indexer = 2 * 64 * 128 * 61 * (8192 * 8193 // 2)
    assert (speed.prefill_attention_flops(v32, 8192), attention) == (88_035_790_159_872, 88_035_790_159_872)
    assert speed.indexer_flops(v32, 1) * (8192 * 8193 // 2) == indexer == 33_539_198_287_872
    matmuls = 2 * speed.matmul_parameters(v32) * 8192 / 8
    fill = speed.prefill_phase(v32, "fp8", 8, 8192, p, 1.0, 1.0)
    assert fill.flops == pytest.approx(matmuls + attention / 8 + indexer)
    assert fill.compute_s == pytest.approx(matmuls / p.flops + attention / 8 / p.attention_flops
                                           + indexer / (h200.fp8_tflops * 1e12))
    step, empty = (speed.decode_phase(v32, "fp8", "bf16", 8, 1, n, p, 1.0, 1.0) for n in (32768, 0))
    assert step.bytes - empty.bytes == 61 * 576 * 2 * 2048 + 61 * 132 * 32768 == 143_917_056 + 263_847_936
    assert step.flops - empty.flops == 4 * 24_576 * 61 * 2048 / 8 + 2 * 64 * 128 * 61 * 32768

def test_apple_peak_is_shaders_times_two_times_clock():
    assert speed.peaks(catalog.gpu("m2-ultra-192gb"), "bf16").flops == pytest.approx(76 * 128 * 2 * 1.398e9)
    # an M3 Ultra is two M3 Max dies: 80 cores at the M3 Max's 1398 MHz, 28.6 TFLOPs
    assert speed.peaks(catalog.gpu("m3-ultra-80c-512gb"), "bf16").flops == pytest.approx(28.63e12, rel=1e-3)
    # every Apple chip of the catalog, from its name's GPU cores: M2 Max 38 cores x 256 x 1.398 GHz = 13.6 TFLOPs
    # (metal-benchmarks' 13,600 GFLOPS), M1 Pro 14 cores x 256 x 1.296 = 4.64, M4 Pro 16 cores x 256 x 1.470 = 6.02
    assert speed.peaks(catalog.gpu("m2-max-38c-64gb"), "bf16").flops == pytest.approx(13.60e12, rel=1e-3)
    assert speed.peaks(catalog.gpu("m1-pro-14c-16gb"), "bf16").flops == pytest.approx(4.645e12, rel=1e-3)
    assert speed.peaks(catalog.gpu("m4-pro-16c-24gb"), "bf16").flops == pytest.approx(6.021e12, rel=1e-3)
    assert all(speed.peaks(g, "bf16").flops for g in catalog.gpus() if g.vendor == "Apple")


def test_an_m5_peak_is_apples_4x_of_the_m4_tiers_alus():
    """M5 GPU cores carry Neural Accelerators; Apple gives only "over 4x the peak GPU compute for AI" of the M4 tier:
    M5 10 cores x 256 x 1.470 GHz (M4) x 4 = 15.05 TFLOPs; M5 Pro 20 x 256 x 1.470 x 4 = 30.11; M5 Max 40 x 256 x
    1.678 (M4 Max) x 4 = 68.73."""
    for gpu_id, tflops in (("m5-10c-16gb", 15.05), ("m5-pro-20c-64gb", 30.11), ("m5-max-40c-128gb", 68.73)):
        p = speed.peaks(catalog.gpu(gpu_id), "bf16")
        assert p.flops == pytest.approx(tflops * 1e12, rel=1e-3)
        assert "Neural Accelerators" in p.notes[0]


def test_the_dgx_spark_peak_is_derived_from_nvidias_fp4_figure():
    """1 PFLOP of FP4 with sparsity / 2 (dense) / 2 (FP8) / 2 (BF16): 125 TFLOPs BF16, 250 FP8; the prefill of a
    512-token prompt of Llama 2 7B is now compute-bound (it was bandwidth-bound, ~30x too fast)."""
    spark = catalog.gpu("dgx-spark")
    assert speed.peaks(spark, "bf16").flops == 125e12 and speed.peaks(spark, "fp8").flops == 250e12
    assert speed.prefill_phase(LLAMA2_7B, "bf16", 1, 512, speed.peaks(spark, "bf16"), 1.0, 1.0).bound == "compute"


def test_full_attention_layers_with_their_own_head_size_attend_that_wide():
    """Gemma 4 26B-A4B: 16 query heads of 256 in its 25 sliding layers (window 1,024), of 512 (global_head_dim) in its
    5 full layers. A 4,096-token prompt: full 4 x 8,192 x 5 x (4,096 x 4,097 / 2 = 8,390,656) + windowed 4 x 4,096 x
    25 x (1,024 x 1,025 / 2 + 3,072 x 1,024 = 3,670,528) = 1,374,725,079,040 + 1,503,448,268,800 FLOPs."""
    gemma4 = catalog.model("google/gemma-4-26b-a4b-it").architecture
    assert speed.query_widths(gemma4) == (8192, 4096) and speed.attention_layer_counts(gemma4) == (5, 25)
    assert speed.prefill_attention_flops(gemma4, 4096) == 4 * (8192 * 5 * 8_390_656 + 4096 * 25 * 3_670_528) \
        == 1_374_725_079_040 + 1_503_448_268_800
    assert speed.query_widths(LLAMA2_7B) == (4096, 4096)


def test_the_int8_peak_llama_cpps_mmq_runs_on():
    """GeForce cards: 4x the 16-bit FP32-accumulate figure (RTX 4090 4 x 165.2 = 660.8; RTX 3090 4 x 71 = 284, the
    GA102 whitepaper's INT8); FP8 tensor cores: their rate (H100 SXM 1,979); else 2x (A100 2 x 312 = 624); none on
    Volta, Apple or AMD; Blackwell Ultra's 150; the P40's dp4a 47. GGUF-quantized weights take it, other formats
    do not."""
    expected = {"rtx-4090": 660.8, "rtx-3090": 284, "h100-sxm": 1979, "a100-80gb-sxm": 624, "t4": 130,
                "b300": 150.0, "tesla-p40": 47.0, "v100-32gb": None, "m4-max-128gb": None, "rx-7900-xtx": None}
    for gpu_id, tops in expected.items():
        assert speed.int8_tops(catalog.gpu(gpu_id)) == pytest.approx(tops) if tops else \
            speed.int8_tops(catalog.gpu(gpu_id)) is None
    p = speed.peaks(RTX_4090, "q4_k_m")
    assert (p.flops, p.attention_flops) == (pytest.approx(660.8e12), 165.2e12)
    assert speed.peaks(RTX_4090, "awq-4bit").flops == speed.peaks(RTX_4090, "bf16").flops == 165.2e12
    # a Tesla P40 has no tensor cores: GGUF prompts at its dp4a INT8 rate (datasheet 47 TOPS), 16-bit ones no peak
    p40 = catalog.gpu("tesla-p40")
    assert speed.peaks(p40, "q4_k_m").flops == 47e12 and speed.peaks(p40, "bf16").flops is None
    # a MoE in GGUF stays at the 16-bit peak, as every MoE prompt's grouped GEMMs (speed.peak_format)
    moe = catalog.model("Qwen/Qwen3-30B-A3B").architecture
    assert (speed.peak_format(moe, "q4_k_m"), speed.peak_format(LLAMA2_7B, "q4_k_m")) == ("bf16", "q4_k_m")
    assert speed.inference_speed(moe, RTX_4090, "q4_k_m", engine="llama.cpp").basis.peaks.flops == 165.2e12


def test_a_prompt_in_ubatches_reads_the_weights_once_per_ubatch():
    """llama.cpp runs a 2,048-token prompt as 4 ubatches of 512: Llama 2 7B in Q4_0 reads its 3,750,273,024 B of
    matrices and 1,064,960 B of vectors 4 times (15,005,351,936 B; 2,000 tokens are 3 ubatches of 512 and one of
    464: 4 reads too), the FLOPs unchanged. gpt-oss-120b's 60,914,073,600 B of MXFP4 experts: 512 tokens routing to
    4 of 128 touch 1 - (124/128)^512 of them, all but ~1e-7, so each ubatch reads them again: 4 x ~64.09 GB =
    256.36 GB, 0.939 s at the DGX Spark's 273 GB/s, where the FLOPs take 0.17 s at its 125 TFLOPs."""
    spark = speed.peaks(catalog.gpu("dgx-spark"), "q4_0")
    one, four = (speed.prefill_phase(LLAMA2_7B, "q4_0", 1, 2048, spark, 1.0, 1.0, chunk) for chunk in (0, 512))
    assert one.bytes == 3_750_273_024 + 1_064_960 and four.bytes == 4 * one.bytes == 15_005_351_936
    assert four.flops == one.flops
    assert speed.prefill_phase(LLAMA2_7B, "q4_0", 1, 2000, spark, 1.0, 1.0, 512).bytes == four.bytes
    oss = catalog.model("openai/gpt-oss-120b").architecture
    p = speed.peaks(catalog.gpu("dgx-spark"), "mxfp4")
    whole, ubatches = (speed.prefill_phase(oss, "mxfp4", 1, 2048, p, 1.0, 1.0, chunk) for chunk in (0, 512))
    assert whole.bytes == pytest.approx(3_095_838_720 + 60_914_073_600 + 80_636_544, rel=1e-6)
    assert ubatches.bytes == pytest.approx(4 * whole.bytes, rel=1e-6)
    assert ubatches.memory_s == pytest.approx(256.36e9 / 273e9, rel=1e-3) and ubatches.bound == "memory"


def test_decode_throughput_grows_with_concurrency_and_per_sequence_speed_falls():
    one = speed.inference_speed(LLAMA2_7B, RTX_4090, "bf16", sequences=1, context=1024)
    many = speed.inference_speed(LLAMA2_7B, RTX_4090, "bf16", sequences=64, context=1024)
    assert many.throughput_tokens_per_s > 10 * one.throughput_tokens_per_s
    assert many.decode_tokens_per_s < one.decode_tokens_per_s
    assert many.throughput_tokens_per_s == pytest.approx(64 * many.decode_tokens_per_s)
    assert one.ttft_s == pytest.approx(512 / one.prefill_tokens_per_s)


def test_every_efficiency_names_its_records_and_lies_in_0_1():
    for key, e in speed._efficiency_table().items():
        assert 0 < e.value <= 1.5, key  # a measured fraction a little above 1 would be a peak understated
        assert e.records, key
    assert speed.efficiency("ollama", "apple", "decode", "quantized") == \
        speed.efficiency("llama.cpp", "apple", "decode", "quantized")


def test_training_flops_6n_full_4n_lora_8n_with_checkpointing():
    n = speed.matmul_parameters(LLAMA2_7B)
    attention = 2 * 4096 * 32 * 2048
    assert speed.training_flops_per_token(LLAMA2_7B, 2048, "full", False) == 3 * (2 * n + attention)
    assert speed.training_flops_per_token(LLAMA2_7B, 2048, "full", True) == 4 * (2 * n + attention)
    assert speed.training_flops_per_token(LLAMA2_7B, 2048, "lora", False) == 2 * (2 * n + attention)


def test_training_speed_is_efficiency_times_peak_over_flops_and_epoch_is_dataset_over_rate():
    g = catalog.gpu("h100-sxm")
    t = speed.training_speed(LLAMA2_7B, g, "full", batch=4, seq_len=2048, dataset_tokens=10**9)
    per_token = speed.training_flops_per_token(LLAMA2_7B, 2048, "full", False)
    e = speed.training_efficiency("", "nvidia-datacenter")  # derived: the datacenter records' median
    assert e.records and t.efficiency == e and e.text in " ".join(t.assumptions)
    assert t.tokens_per_s == pytest.approx(e.value * 989e12 / per_token)
    assert t.step_time_s == pytest.approx(4 * 2048 / t.tokens_per_s)
    assert t.epoch_time_s == pytest.approx(10**9 / t.tokens_per_s)
    low, high = t.tokens_per_s_range
    assert low == pytest.approx(e.spread[0] * 989e12 / per_token) and low < t.tokens_per_s < high
    # ZeRO-3 over 8 GPUs: 3 x parameters x 2 bytes x 7/8 per GPU per step over the link, overlapped with compute
    eight = speed.training_speed(LLAMA2_7B, g, "full", batch=4, seq_len=2048, gpus=8, zero_stage=3,
                                 dataset_tokens=10**9)
    link = (g.interconnect_gb_s or speed.FALLBACK_LINK_GB_S) * 1e9
    comm = 3 * 6_738_415_616 * 2 * 7 / 8 / link
    assert eight.step_time_s == pytest.approx(max(comm, t.step_time_s))
    assert eight.epoch_time_s == pytest.approx(10**9 / (8 * 4 * 2048 / eight.step_time_s))


def test_training_efficiency_key_falls_back_to_the_gpu_class_then_to_llama_3s_mfu():
    """(framework, GPU class) -> (GPU class) -> (framework) -> every record; an empty table: Llama 3's 38-43%."""
    table = speed.efficiency_table({"efficiencies": [
        {"key": ["torchtitan", "nvidia-datacenter", "training", ""], "value": 0.64, "records": ["a", "b"]},
        {"key": ["", "nvidia-datacenter", "training", ""], "value": 0.65, "records": ["a", "b", "c"],
         "range": [0.6, 0.9]},
        {"key": ["", "", "training", ""], "value": 0.62, "records": ["a", "b", "c", "d"]}]})
    assert speed.training_efficiency_in(table, "torchtitan", "nvidia-datacenter").value == 0.64
    assert speed.training_efficiency_in(table, "hf", "nvidia-datacenter").spread == (0.6, 0.9)
    assert speed.training_efficiency_in(table, "hf", "apple").value == 0.62
    fallback = speed.training_efficiency_in({}, "hf", "apple")
    assert (fallback.value, fallback.records, fallback.spread) == ((0.38 + 0.43) / 2, (), (0.38, 0.43))
    assert fallback.text.startswith("0.405 (no published training record: Llama 3's 38%-43% MFU")
    # 1,000 tokens/s at 0.64 becomes 1,000 x 0.62 / 0.64 at 0.62: the rate is linear in the efficiency
    a = speed.training_speed(LLAMA2_7B, catalog.gpu("a100-80gb-sxm"), "lora", 1, 1024,
                             e=speed.Efficiency(0.64, "x", ("r",)))
    b = speed.training_speed(LLAMA2_7B, catalog.gpu("a100-80gb-sxm"), "lora", 1, 1024,
                             e=speed.Efficiency(0.62, "y", ("r",)))
    assert b.tokens_per_s == pytest.approx(a.tokens_per_s * 0.62 / 0.64)


def test_a_decode_step_adds_the_engines_fixed_cost_per_step():
    """Llama 2 7B bf16 on an H100 SXM, one sequence at 64 tokens, e_bw 0.5 and 3 ms a step: the step reads
    13.48 GB at 3,350 GB/s x 0.5 and then pays the 3 ms."""
    p = speed.peaks(catalog.gpu("h100-sxm"), "bf16")
    bare = speed.decode_phase(LLAMA2_7B, "bf16", "bf16", 1, 1, 64, p, 0.5, 1.0)
    step = speed.decode_phase(LLAMA2_7B, "bf16", "bf16", 1, 1, 64, p, 0.5, 1.0, step_s=0.003)
    assert bare.seconds == pytest.approx(bare.bytes / (3350e9 * 0.5))
    assert step.seconds == pytest.approx(bare.seconds + 0.003) and step.bound == bare.bound


def test_an_engines_key_costs_its_layers_and_a_shared_key_its_step():
    """One engine's key costs each decoder layer its fitted time: 100 us x 32 layers = 3.2 ms, x 94 = 9.4 ms; a key
    shared by every engine costs its step whatever the depth. SGLang on 8 H100s decoding Qwen3-235B-A22B (94 layers)
    pays 94 x its key's layer cost on top of the bytes and the all-reduces; with no engine chosen, the shared
    key's fixed step."""
    layered = speed.Efficiency(0.8, "k", ("r",), layer_s=100e-6)
    assert layered.fixed_s(32) == pytest.approx(3.2e-3) and layered.fixed_s(94) == pytest.approx(9.4e-3)
    assert "100 us per layer" in layered.text
    shared = speed.Efficiency(0.8, "k", ("r",), step_s=3e-3)
    assert shared.fixed_s(32) == shared.fixed_s(94) == 3e-3 and "3.00 ms per step" in shared.text
    qwen, h100 = catalog.model("Qwen/Qwen3-235B-A22B").architecture, catalog.gpu("h100-sxm")
    assert qwen.num_layers == 94
    e = speed.efficiency("sglang", "nvidia-datacenter", "decode", "16-bit", "h100-sxm")
    s = speed.inference_speed(qwen, h100, "bf16", tp=8, engine="sglang")
    assert e.layer_s > 0 and s.basis.step.step_s == pytest.approx(94 * e.layer_s)
    step = s.basis.step
    assert 1 / s.decode_tokens_per_s == pytest.approx(step.bytes / (3350e9 * e.value) + step.comm_s + 94 * e.layer_s)
    anyone = speed.inference_speed(qwen, h100, "bf16", tp=8)
    assert anyone.basis.step.step_s == speed.efficiency("", "nvidia-datacenter", "decode", "16-bit", "h100-sxm").step_s


def _cli(*argv: str) -> dict:
    import contextlib
    import io
    import json

    from estimator.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return json.loads(out.getvalue())


def test_inference_json_rows_gain_the_speed_of_their_format_on_the_gpu():
    out = _cli("inference", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "rtx-4090", "--seq-len", "1024",
               "--concurrency", "4", "--json")
    by_row = {row["scenario"]: row["speed"] for row in out["rows"]}
    assert set(by_row["16-bit"]) == {"prefill_tokens_per_s", "ttft_s", "decode_tokens_per_s",
                                     "throughput_tokens_per_s", "bound", "assumptions"}
    expected = speed.inference_speed(LLAMA2_7B, RTX_4090, "awq-4bit", sequences=4, prompt=1024, context=1024)
    assert by_row["4-bit"]["decode_tokens_per_s"] == round(expected.decode_tokens_per_s, 3)
    assert by_row["4-bit"]["throughput_tokens_per_s"] == pytest.approx(4 * by_row["4-bit"]["decode_tokens_per_s"],
                                                                       rel=1e-4)
    assert by_row["4-bit"]["decode_tokens_per_s"] > by_row["16-bit"]["decode_tokens_per_s"]  # fewer bytes a step


def test_serve_json_gains_llama_bench_pp512_and_tg128_speed():
    out = _cli("serve", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "rtx-4090", "--engine", "llama.cpp",
               "--weights", "q4_0", "--json")
    bench = speed.llama_bench(LLAMA2_7B, RTX_4090, "q4_0")
    assert out["speed"]["decode_tokens_per_s"] == round(bench.decode_tokens_per_s, 3)
    assert out["speed"]["prefill_tokens_per_s"] == round(bench.prefill_tokens_per_s, 2)
    assert out["speed"]["ttft_s"] == pytest.approx(512 / out["speed"]["prefill_tokens_per_s"], rel=1e-4)


def test_serve_json_has_no_speed_when_the_engine_would_refuse_to_start():
    out = _cli("serve", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "rtx-4090", "--json")
    assert out["starts"] is False and out["speed"] is None


def test_finetune_json_gains_tokens_per_s_and_the_epoch_of_the_dataset():
    out = _cli("finetune", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "h100-sxm", "--technique", "lora",
               "--dataset-tokens", "100000000", "--json")
    rate = out["rows"][0]["speed"]
    assert rate["epoch_time_s"] == pytest.approx(1e8 / rate["tokens_per_s"], rel=1e-5)
    assert rate["step_time_s"] == pytest.approx(2048 / rate["tokens_per_s"], rel=1e-5)


def test_a_negative_dataset_size_is_one_line_on_stderr_and_exit_2(capsys):
    from estimator.cli import main

    assert main(["finetune", "--params", "7", "--dataset-tokens", "-5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Dataset tokens must be between 0 and" in err


def test_a_parameter_count_gets_the_speed_of_the_quick_estimates_bytes():
    """7B at 16-bit: 14 GB of weights + the quick KV cache of 2,048 tokens, read once per decode step; prefill of
    the 2,048-token prompt at 2 x 7e9 FLOPs per token."""
    from estimator.quick import quick_inference
    from estimator.scenarios import InferenceScenario, ParamCount

    s = InferenceScenario(ParamCount.from_billions(7))
    rate = speed.row_speed(s, "16-bit", RTX_4090)
    kv = quick_inference(s, 16, "16-bit").component("kv_cache")
    e_bw = speed.efficiency("", "nvidia-consumer", "decode", "16-bit")
    e_flops = speed.efficiency("", "nvidia-consumer", "prefill", "16-bit").value
    assert rate.decode_tokens_per_s == pytest.approx(1 / ((14_000_000_000 + kv) / (1008e9 * e_bw.value)
                                                          + e_bw.step_s))
    assert rate.prefill_tokens_per_s == pytest.approx(165.2e12 * e_flops / (2 * 7e9))
    # a MoE batch reads at most B x active / total of its weights: 4 x 13 / 47 of Mixtral-like counts
    moe = InferenceScenario(ParamCount.from_billions(47, 13), concurrency=4)
    assert "reading 100.0%" not in " ".join(speed.row_speed(moe, "16-bit", RTX_4090).assumptions)
    one = InferenceScenario(ParamCount.from_billions(47, 13))
    assert "27.7% of the weights" in " ".join(speed.row_speed(one, "16-bit", RTX_4090).assumptions)


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3",
                                      "google/gemma-3-27b-it", "Qwen/Qwen3-Next-80B-A3B-Thinking"])
def test_more_sequences_or_longer_contexts_never_speed_a_sequence_up_and_more_sequences_never_slow_the_total(model_id):
    a = catalog.model(model_id).architecture
    g = catalog.gpu("h200")
    previous = None
    for sequences in (1, 2, 8, 64, 512):
        rate = speed.inference_speed(a, g, "bf16", tp=8, sequences=sequences, context=4096)
        if previous is not None:
            assert rate.decode_tokens_per_s <= previous.decode_tokens_per_s
            assert rate.throughput_tokens_per_s >= previous.throughput_tokens_per_s
        previous = rate
    contexts = [speed.inference_speed(a, g, "bf16", tp=8, context=c).decode_tokens_per_s for c in (0, 1024, 65536)]
    assert contexts == sorted(contexts, reverse=True)
    prompts = [speed.inference_speed(a, g, "bf16", tp=8, prompt=p).ttft_s for p in (1, 512, 32768)]
    assert prompts == sorted(prompts)


def test_a_serve_without_cuda_graphs_says_its_decode_is_likely_slower():
    """--enforce-eager (vLLM) / --disable-cuda-graph (SGLang): the per-layer decode cost is that of runs with graphs
    on, so the speed says decode is likely slower, and gives the one eager record found; llama.cpp has no such flag."""
    from estimator.engines import ServeScenario, serve

    for engine in ("vllm", "sglang"):
        eager = ServeScenario(LLAMA2_7B, engine=engine, gpu="h100-sxm", enforce_eager=True)
        graphs = ServeScenario(LLAMA2_7B, engine=engine, gpu="h100-sxm")
        assert speed.EAGER_NOTE in speed.serve_speed(eager, serve(eager)).assumptions
        assert speed.EAGER_NOTE not in speed.serve_speed(graphs, serve(graphs)).assumptions
    assert "vllm-project/vllm#20469" in speed.EAGER_NOTE


def test_serve_ttft_is_the_forward_plus_vllms_request_cost_and_llama_bench_pp512_excludes_it():
    """vLLM serves over HTTP, so serve's TTFT of a 512-token request is the forward + speed.json's vLLM cost per
    request, 24.8724 ms (the median of 4 published client-timed TTFTs less their forwards: validation/speed.py
    request_costs); the prefill throughput stays the forward's, 512 / forward. llama-bench's pp512 is timed in
    process (no server): its TTFT is the forward alone, and llama.cpp has no request cost in speed.json."""
    from estimator.engines import ServeScenario, serve

    s = ServeScenario(LLAMA2_7B, engine="vllm", gpu="h100-sxm", model_id="meta-llama/Llama-2-7b-hf")
    rate = speed.serve_speed(s, serve(s))
    forward = rate.basis.fill.seconds
    assert rate.ttft_s == pytest.approx(forward + 24.8724e-3, abs=1e-9)
    assert rate.prefill_tokens_per_s == pytest.approx(512 / forward)
    prefill = next(n for n in rate.assumptions if n.startswith("Prefill of a 512-token prompt"))
    assert ("TTFT includes the server's fixed cost per request, 24.9 ms (median of 4 published client-timed TTFTs "
            "of vllm: gpustack-h100-qwen3-8b-vllm-c1-ttft, v1pf-bench3-h200-llama3-8b-c1-ttft, "
            "v1pf-vsx-4090-qwen25-7b-sweep-c1-ttft, v1pf-wmx-l4-qwen25-0.5b-c1-ttft)") in prefill
    # the same model and GPU with no serving engine (the inference page's row): the forward alone
    assert speed.inference_speed(LLAMA2_7B, catalog.gpu("h100-sxm"), "bf16", engine="vllm").ttft_s == forward

    bench = speed.llama_bench(LLAMA2_7B, RTX_4090, "q4_0")
    assert bench.ttft_s == bench.basis.fill.seconds == pytest.approx(512 / bench.prefill_tokens_per_s)
    assert speed.request_cost("llama.cpp") is None and speed.request_cost("ollama") is None
    assert any("fixed cost per request" in n and "not included" in n for n in bench.assumptions)
    served = ServeScenario(LLAMA2_7B, engine="llama.cpp", gpu="rtx-4090", weights="q4_0",
                           model_id="meta-llama/Llama-2-7b-hf")
    assert speed.serve_speed(served, serve(served)).ttft_s == bench.ttft_s


def test_serve_under_vllm_0_6_on_mi300x_prices_a_long_context_servers_prompt_attention_at_the_prefix_kernels_fraction():
    """`serve --engine vllm --engine-version 0.6.3` of Llama 3.1 405B at TP 8 on MI300Xs: at the model's own 131,072
    tokens V0 chunks the prompt, so its attention runs in the Triton prefix kernel at the fraction the dstack sweep
    set (speed.json: 0.0105); started at --max-model-len 32768 it does not, and the attention runs at the GEMMs'."""
    from estimator.engines import ServeScenario, serve

    llama405 = catalog.model("meta-llama/Llama-3.1-405B-Instruct").architecture
    fills = []
    for length in (0, 32768):
        s = ServeScenario(llama405, engine="vllm", engine_version="0.6.3", gpu="mi300x", tensor_parallel=8,
                          max_model_len=length)
        fills.append(speed.serve_speed(s, serve(s)).basis)
    chunked, whole = fills
    assert (chunked.attention_kernel, chunked.e_attention.value) == ("triton-prefix", 0.0105)
    assert (whole.attention_kernel, whole.e_attention) == ("flash", None)
    flops = speed.prefill_attention_flops(llama405, 512) / 8 / chunked.peaks.attention_flops
    assert chunked.fill.compute_s - whole.fill.compute_s == pytest.approx(
        flops / 0.0105 - flops / whole.e_flops.value)


def test_sglangs_serve_throughput_runs_as_many_requests_as_its_max_running_requests_and_kv_cache_hold():
    """SGLang's running-request limit is max_running_requests (its settings), not vLLM's max_num_seqs: the
    throughput runs min(that limit, KV-cache tokens // 640) requests of 512 + 128 tokens at once, not one."""
    from estimator.engines import ServeScenario, serve

    s = ServeScenario(LLAMA2_7B, engine="sglang", gpu="h100-sxm", model_id="meta-llama/Llama-2-7b-hf")
    report = serve(s)
    limit = dict(report.settings)["max_running_requests"]
    sequences = min(limit, report.kv_cache_tokens // 640)
    assert sequences > 1
    rate = speed.serve_speed(s, report)
    assert f"throughput over {sequences} concurrent 640-token request(s) (the engine's running-request limit " \
           f"{limit}," in rate.assumptions[0]
    many = speed.inference_speed(LLAMA2_7B, catalog.gpu("h100-sxm"), "bf16", sequences=sequences, prompt=512,
                                 context=512 + 64, engine="sglang")
    assert rate.throughput_tokens_per_s == many.throughput_tokens_per_s
