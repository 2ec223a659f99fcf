"""llama.cpp and Ollama start-ups against hand-computed buffers (estimator/engines/llama_cpp.py, ollama.py)."""

from dataclasses import replace

import pytest

import estimator as est
from estimator.engines import REFUSAL, ServeScenario, import_command, serve
from estimator.engines import llama_cpp, ollama
from estimator.engines.llama_cpp import host_matrices
from estimator.units import GiB

MiB = 2**20
LLAMA_8B = est.model("meta-llama/Llama-3.1-8B").architecture  # 32 layers, h 4096, 8 KV heads x 128, V 128,256


def _scenario(**kw):
    base = dict(engine="llama.cpp", gpu="rtx-4090", weights="q4_k_m", max_model_len=8192, max_num_seqs=1)
    return ServeScenario(LLAMA_8B, **{**base, **kw})


def _log_value(report, prefix):
    line = next(x for x in report.log if x.strip().startswith(prefix) or prefix in x)
    return float(line.rsplit("=", 1)[1].split()[0])


def test_model_buffers_full_offload():
    r = serve(_scenario())
    # token_embd stays on the CPU: Q4_K (144 bytes per 256 weights) under Q4_K_M
    assert _log_value(r, "CPU_Mapped model buffer size") == pytest.approx(128256 * 4096 // 256 * 144 / MiB, abs=0.01)
    assert "load_tensors: offloaded 33/33 layers to GPU" in r.log
    # -ngl 32 = every repeating layer but not the output layer: output (Q6_K, 210 / 256) and output_norm (f32)
    # join the CPU buffer
    r32 = serve(_scenario(n_gpu_layers=32))
    assert "load_tensors: offloaded 32/33 layers to GPU" in r32.log
    moved = 128256 * 4096 // 256 * 210 + 4096 * 4
    assert r.component("weights") - r32.component("weights") == moved
    assert r32.host_bytes - r.host_bytes > moved  # and the logits work moves to the host compute buffer


def test_kv_buffer_f16_and_q8_0():
    r = serve(_scenario())
    # 32 layers x (K + V) x 8 heads x 128 x 8192 cells, f16
    assert r.component("kv_cache") == 32 * 2 * 8 * 128 * 8192 * 2 == 1024 * MiB
    q8 = serve(_scenario(kv_dtype="q8_0"))
    # q8_0: 34 bytes per 32 elements
    assert q8.component("kv_cache") == 32 * 2 * (8 * 128 // 32 * 34) * 8192 == 544 * MiB
    assert r.kv_cache_tokens == 8192 and r.max_concurrency == 1


def test_context_padding_and_slots():
    # -c 8000 -np 3 without a unified cache: n_ctx 8192 (padded to 256), n_ctx_seq = pad(8192 // 3, 256) = 2816
    r = serve(_scenario(max_model_len=8000, max_num_seqs=3))
    assert dict(r.settings)["n_ctx"] == 3 * 2816 and r.max_model_len == 2816
    # -np unset: 4 slots sharing one cache of the training context (131,072)
    auto = serve(_scenario(max_model_len=0, max_num_seqs=0))
    # (one request of the full 131,072 tokens at a time: the slots share the cells)
    assert auto.max_concurrency == 1 and auto.kv_cache_tokens == 131072 and dict(auto.settings)["kv_unified"]
    assert r.max_concurrency == 3  # split caches: every slot holds a request of its own 2,816 tokens


def test_compute_buffer_with_and_without_flash_attention():
    fa = serve(_scenario(flash_attention=True))
    # the output layer's logits: V x n_ubatch f32, and the final norm's output h x n_ubatch f32
    assert fa.component("activations") == 128256 * 512 * 4 + 4096 * 512 * 4  # 258.50 MiB
    no_fa = serve(_scenario(flash_attention=False))
    # KQ = 32 heads x 8192 x 512 f32 + the f32 mask copy + Q + 3 hidden-width tensors
    kq = 32 * 8192 * 512 * 4
    assert no_fa.component("activations") == kq + 8192 * 512 * 4 + 4096 * 512 * 4 + 3 * 4096 * 512 * 4  # 560 MiB


def test_partial_offload_gpu_and_host():
    r = serve(_scenario(n_gpu_layers=20))
    # layers 12..31 on the GPU (the last 20), their KV there; layers 0..11's KV in host RAM
    assert r.component("kv_cache") == 20 * 32 * MiB
    assert "llama_kv_cache:  CUDA_Host KV buffer size = 384.00 MiB" in r.log
    full = serve(_scenario())
    layer_bytes = (full.component("weights") - r.component("weights"))
    assert r.host_bytes > full.host_bytes + layer_bytes - 1  # CPU layers' weights + KV + compute on the host
    assert "load_tensors: offloaded 20/33 layers to GPU" in r.log


def test_n_cpu_moe_moves_expert_weights_to_host():
    a = est.model("Qwen/Qwen3-30B-A3B").architecture
    base = ServeScenario(a, engine="llama.cpp", gpu="h100-sxm", weights="q4_k_m", max_model_len=8192,
                         max_num_seqs=1)
    from dataclasses import replace
    moe = replace(base, n_cpu_moe=10)
    r0, r10 = serve(base), serve(moe)
    from estimator.architecture import tensors
    from estimator.formats import tensor_bytes, weight_format
    fmt = weight_format("q4_k_m")
    experts = sum(tensor_bytes(fmt, t, a) for t in tensors(a) if t.is_expert and t.layer < 10)
    assert r0.component("weights") - r10.component("weights") == experts
    assert r10.host_bytes - r0.host_bytes == experts
    assert r0.component("kv_cache") == r10.component("kv_cache")  # the layers (and their KV) stay on the GPU


def test_refusal_when_the_gpu_part_does_not_fit():
    a = est.model("meta-llama/Llama-3.1-70B").architecture
    r = serve(ServeScenario(a, engine="llama.cpp", gpu="rtx-4090", weights="q4_k_m", n_gpu_layers=99,
                            max_model_len=8192, max_num_seqs=1))
    assert not r.starts
    refusal = next(w for w in r.warnings if w.startswith(REFUSAL))
    assert "allocating" in refusal and "on device 0: cudaMalloc failed: out of memory" in refusal
    # -ngl auto (--fit): layers leave the GPU until 1 GiB stays free, and it starts
    fit = serve(ServeScenario(a, engine="llama.cpp", gpu="rtx-4090", weights="q4_k_m", max_model_len=8192,
                              max_num_seqs=1))
    assert fit.starts and fit.total <= 24 * 10**9 - GiB + 2 * 10**9
    assert 0 < dict(fit.settings)["n_gpu_layers"] < 81


def test_ollama_default_num_ctx():
    assert ollama.default_num_ctx(16 * GiB) == 4096
    assert ollama.default_num_ctx(24 * 10**9) == 4096  # exactly 24 GB = 22.35 GiB: under the 23 GiB line
    assert ollama.default_num_ctx(23 * GiB) == 32768
    assert ollama.default_num_ctx(48 * GiB) == 262144
    r = serve(ServeScenario(LLAMA_8B, engine="ollama", gpu="rtx-4090", weights="q4_k_m"))
    # RTX 4090: 25,757,220,864 bytes = 23.99 GiB >= 23 GiB -> 32768; one slot (OLLAMA_NUM_PARALLEL=1)
    assert dict(r.settings)["num_ctx"] == 32768 and r.kv_cache_tokens == 32768 and r.max_concurrency == 1
    h100 = serve(ServeScenario(LLAMA_8B, engine="ollama", gpu="h100-sxm", weights="q4_k_m"))
    assert dict(h100.settings)["num_ctx"] == 131072  # 262144 capped at the training context
    par = serve(ServeScenario(LLAMA_8B, engine="ollama", gpu="rtx-4090", weights="q4_k_m", max_model_len=2048,
                              max_num_seqs=4))
    assert par.kv_cache_tokens == 8192  # -c num_ctx x parallel, each slot num_ctx
    assert any("layers.offload=33" in line for line in par.log)


def test_import_llama_server_command_with_unknown_flags():
    cmd = ("./llama-server -m models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -ngl 99 -c 16384 -np 2 "
           "-ctk q8_0 -ctv q8_0 -fa on --host 0.0.0.0 --port 8080 --mlock -t 8 --n-cpu-moe 4 -ub 1024")
    imp = import_command(cmd)
    assert imp.engine == "llama.cpp" and imp.model == "models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    assert dict(imp.fields) == {"n_gpu_layers": 99, "max_model_len": 16384, "max_num_seqs": 2, "kv_dtype": "q8_0",
                                "flash_attention": True, "n_cpu_moe": 4, "max_num_batched_tokens": 1024}
    assert set(imp.ignored) == {"-ctv q8_0", "--host 0.0.0.0", "--port 8080", "--mlock", "-t 8"}
    docker = import_command("docker run --gpus all ghcr.io/ggml-org/llama.cpp:server-cuda -m /m.gguf "
                            "--n-gpu-layers -1 --tensor-split 3,1")
    assert docker.engine == "llama.cpp"
    assert dict(docker.fields) == {"n_gpu_layers": -1, "tensor_split": "3,1", "tensor_parallel": 2}
    ol = import_command("OLLAMA_NUM_PARALLEL=2 ollama run llama3.1:8b")
    assert ol.engine == "ollama" and ol.model == "llama3.1:8b"


def test_command_round_trip():
    s = _scenario(n_gpu_layers=40, kv_dtype="q8_0", model_id="Llama-3.1-8B-Q4_K_M.gguf")
    line = llama_cpp.command(s)
    assert line == "llama-server -m Llama-3.1-8B-Q4_K_M.gguf -ngl 40 -c 8192 -np 1 -ctk q8_0 -ctv q8_0 -fa on"
    assert dict(import_command(line).fields)["kv_dtype"] == "q8_0"
    assert ollama.command(ServeScenario(LLAMA_8B, engine="ollama", kv_dtype="q8_0", model_id="llama3.1:8b")) == \
        "OLLAMA_KV_CACHE_TYPE=q8_0 OLLAMA_FLASH_ATTENTION=1 ollama run llama3.1:8b"


def test_tensor_split_shares_place_the_layers():
    """llama_model::load_tensors: layer il goes to the first device whose normalised cumulative --tensor-split share
    exceeds il / 37 (36 repeating layers + the output layer, -ngl 99). -ts 3,1 gives CUDA0 the layers with
    il / 37 < 0.75, il 0..27 (28 layers), CUDA1 il 28..35 (8) and the output layer (36 / 37 = 0.97). Qwen3-8B's KV
    cache at -c 32768 in f16: 8 KV heads x 128 x 2 (K and V) x 2 bytes x 32,768 = 128 MiB a layer: 3,584 and
    1,024 MiB. Equal shares (-ts 1,1) put 19 layers on each (il / 37 < 0.5: il 0..18) and the other 17 + output on
    CUDA1."""
    qwen = est.model("Qwen/Qwen3-8B").architecture
    three_one = ServeScenario(qwen, engine="llama.cpp", gpu="rtx-3090", weights="q4_k_m", max_model_len=32768,
                              max_num_seqs=1, tensor_parallel=2, tensor_split="3,1")
    lay = llama_cpp.layout(qwen, 99, (3.0, 1.0))
    assert lay.layer_device.count(0) == 28 and lay.layer_device.count(1) == 8 and lay.output_device == 1
    st, _ = llama_cpp.plan(three_one)
    assert (st.kv[0], st.kv[1]) == (28 * 128 * MiB, 8 * 128 * MiB) == (3584 * MiB, 1024 * MiB)
    equal = llama_cpp.layout(qwen, 99, (1.0, 1.0))
    assert equal.layer_device.count(0) == 19 and equal.layer_device.count(1) == 17
    # typed as shares of any size, with / or commas; the command carries them and reads them back
    assert ServeScenario(qwen, engine="llama.cpp", tensor_parallel=2, tensor_split="24/8").tensor_split == "24,8"
    line = llama_cpp.command(replace(three_one, model_id="Qwen3-8B-Q4_K_M.gguf"))
    assert line.endswith("--tensor-split 3,1")
    assert dict(import_command(line).fields)["tensor_split"] == "3,1"
    for bad, match in (("3,x", "shares separated by commas"), ("0,0", "one of them above 0"), ("-1,2", "at least 0")):
        with pytest.raises(ValueError, match=match):
            ServeScenario(qwen, engine="llama.cpp", tensor_parallel=2, tensor_split=bad)
    with pytest.raises(ValueError, match="Tensor split names 2 devices"):
        ServeScenario(qwen, engine="llama.cpp", tensor_parallel=4, tensor_split="3,1")


def test_validation_rows_for_the_llama_70b_partial_offload():
    """llama_cpp-8035-1 (-ngl 78 of 80 layers, n_ctx 8192, no flash attention): the CPU layers' KV in CUDA_Host,
    the KV total, the layers offloaded, n_ctx and the KQ-dominated compute buffer, as compare_llama_cpp reads them."""
    import json
    from pathlib import Path

    from validation import engines

    record = next(r for r in json.loads((Path(engines.LOGS) / "llama_cpp.json").read_text())["records"]
                  if r["id"] == "llama_cpp-8035-1")
    rows = {r["quantity"]: r for r in engines.compare_llama_cpp(record)}
    for quantity in ("kv_buffer CUDA_Host", "kv_total", "layers_offloaded", "n_ctx"):
        assert rows[quantity]["estimate"] == rows[quantity]["logged"], quantity
    # the weight type is not logged, and CUDA0's buffer holds the op-offload copy of the host output matrix
    assert "compute_buffer CUDA0" not in rows and "op-offload" in rows["skipped"]["note"]


def test_op_offload_copies_the_host_output_matrix_into_cuda0():
    """ggml-cuda.cu ggml_backend_cuda_device_offload_op (batch >= 32): with the output layer on the CPU (-ngl 20 of
    32 layers) the lm_head mat-mul of a 512-token ubatch runs on CUDA0 and its Q6_K / Q4_K weight is copied into the
    compute buffer, with the f32 input (4096 wide) and logits (128256 wide)."""
    import estimator as est
    from estimator.architecture import tensors
    from estimator.engines import ServeScenario, llama_cpp
    from estimator.formats import tensor_bytes, weight_format

    a = est.model("meta-llama/Llama-3.1-8B").architecture
    s = ServeScenario(a, engine="llama.cpp", gpu="rtx-4090", weights="q4_k_m", n_gpu_layers=20, max_model_len=4096)
    st, _ = llama_cpp.plan(s)
    output = next(t for t in tensors(a) if t.role == "output")
    copy = tensor_bytes(weight_format("q4_k_m"), output, a) + 4 * 512 * (128_256 + 4096)
    assert st.compute[0] == copy
    small, _ = llama_cpp.plan(ServeScenario(a, engine="llama.cpp", gpu="rtx-4090", weights="q4_k_m", n_gpu_layers=20,
                                            max_model_len=4096, max_num_batched_tokens=16))
    assert small.compute[0] < 4 * 2**20 * 16  # below 32 tokens the CPU runs it: no copy
    full, _ = llama_cpp.plan(ServeScenario(a, engine="llama.cpp", gpu="rtx-4090", weights="q4_k_m",
                                           max_model_len=4096))
    assert full.compute[0] < copy  # everything on the GPU: nothing to copy


def test_fewer_cells_than_slots_is_refused():
    """-c 100 over 8 split slots: 100 // 8 = 12 cells per slot, padded to 256 -> 256; -c 1 over 1,156 slots: 0."""
    assert serve(_scenario(max_model_len=100, max_num_seqs=8)).starts
    none = serve(_scenario(max_model_len=1, max_num_seqs=1156))
    assert not none.starts and "leaves no context per slot" in none.warnings[0] and none.max_concurrency == 0


def test_a_cache_type_llama_cpp_lacks_is_refused_in_its_words():
    r = serve(_scenario(kv_dtype="fp8"))
    assert not r.starts and "Unsupported cache type: f8" in r.warnings[0]


def test_gguf_file_names_and_ollama_tags_name_catalog_models_and_their_type():
    from estimator.engines.command import model_reference

    assert model_reference("models/Qwen3-8B-Q4_K_M.gguf", "llama.cpp") == ("Qwen/Qwen3-8B", "q4_k_m")
    assert model_reference("/data/Meta-Llama-3.1-8B-Instruct-Q8_0.gguf") == ("meta-llama/Llama-3.1-8B", "q8_0")
    assert model_reference("DeepSeek-R1-UD-IQ1_S-00001-of-00003.gguf") == ("deepseek-ai/DeepSeek-R1", None)
    assert model_reference("unsloth/Qwen3-30B-A3B-GGUF") == ("Qwen/Qwen3-30B-A3B", None)
    assert model_reference("qwen3:8b", "ollama") == ("Qwen/Qwen3-8B", "q4_k_m")  # Ollama's default type
    assert model_reference("llama3.1:8b-instruct-q8_0", "ollama") == ("meta-llama/Llama-3.1-8B", "q8_0")
    assert model_reference("gpt-oss-20b-F16.gguf") == ("openai/gpt-oss-20b", "bf16")
    assert model_reference("my-finetune.gguf") == ("", None)


def test_cli_serve_reads_the_model_and_type_from_a_llama_server_command():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "estimator", "serve", "--gpu", "rtx-3090", "--json", "--command",
                          "llama-server -m models/Qwen3-8B-Q4_K_M.gguf -ngl 99 -c 16384 --port 8080"],
                         capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["engine"] == "llama.cpp" and report["inputs"]["model"]["id"] == "Qwen/Qwen3-8B"
    assert report["inputs"]["weights"] == "q4_k_m" and report["kv_cache_tokens"] == 16384


def test_ollama_reads_its_environment_from_the_command_line_and_round_trips():
    from estimator.engines import import_command, launch_command

    imported = import_command("OLLAMA_KV_CACHE_TYPE=q8_0 OLLAMA_NUM_PARALLEL=2 OLLAMA_CONTEXT_LENGTH=16384 "
                              "OLLAMA_HOST=0.0.0.0 ollama run qwen3:8b")
    assert imported.engine == "ollama" and imported.model == "qwen3:8b"
    assert dict(imported.fields) == {"kv_dtype": "q8_0", "max_num_seqs": 2, "max_model_len": 16384}
    s = ServeScenario(est.model("Qwen/Qwen3-8B").architecture, engine="ollama", gpu="rtx-4090", kv_dtype="q4_0",
                      max_num_seqs=3, max_model_len=8192, flash_attention=False, model_id="qwen3:8b")
    assert dict(import_command(launch_command(s)).fields) == {"kv_dtype": "q4_0", "flash_attention": False,
                                                               "max_num_seqs": 3, "max_model_len": 8192}
    with pytest.raises(ValueError, match="OLLAMA_KV_CACHE_TYPE"):
        import_command("OLLAMA_KV_CACHE_TYPE=fp4 ollama run qwen3:8b")


PYTHIA_2_8B = est.model("EleutherAI/pythia-2.8b").architecture  # gptneox: 32 layers, h 2560, ffn 10240, vocab 50304


def test_a_fused_attn_qkv_takes_the_attn_v_rule():
    """gptneox stores Q, K and V as one attn_qkv tensor (gguf-py tensor_mapping ATTN_QKV); llama-quant.cpp's
    category_is_attn_v counts it as attn_v-like, so under Q4_K_M the whole 7680 x 2560 tensor is Q6_K on the 16
    use_more_bits layers of 32 and Q4_K on the others. Llama's separate attn_q keeps the base type."""
    from estimator.architecture import tensors
    from estimator.formats import gguf_tensor_type

    qkv = [t for t in tensors(PYTHIA_2_8B) if t.role in ("attn_q", "attn_k", "attn_v")]
    by_layer = {t.layer: {gguf_tensor_type("q4_k_m", u, PYTHIA_2_8B) for u in qkv if u.layer == t.layer} for t in qkv}
    assert all(len(types) == 1 for types in by_layer.values())  # q, k and v of a layer share one type
    six = sorted(i for i, types in by_layer.items() if types == {"Q6_K"})
    assert six == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]  # i < 4, i >= 28, (i - 4) % 3 == 2
    llama_q = next(t for t in tensors(LLAMA_8B) if t.role == "attn_q" and t.layer == 0)
    assert gguf_tensor_type("q4_k_m", llama_q, LLAMA_8B) == "Q4_K"


def test_pythia_q4_k_m_model_buffer_by_hand():
    """Pythia 2.8B Q4_K_M, -ngl 99 -c 2048 (llama.cpp CI on a V100, llama_cpp-ggmlci-5). Q4_K is 144 bytes per
    256 weights, Q6_K 210; vectors are f32. CUDA0 holds every layer, output_norm and the output matrix."""
    s = ServeScenario(PYTHIA_2_8B, engine="llama.cpp", gpu="v100-16gb", weights="q4_k_m", n_gpu_layers=99,
                      max_model_len=2048, max_num_seqs=1, max_num_batched_tokens=512, flash_attention=False)
    st, _ = llama_cpp.plan(s)
    qkv, attn_out, ffn = 3 * 2560 * 2560, 2560 * 2560, 10240 * 2560
    more = 16 * (qkv + ffn) * 210 // 256 + 16 * (qkv + ffn) * 144 // 256  # attn_qkv and ffn_down, per use_more_bits
    rest = 32 * (attn_out + ffn) * 144 // 256  # attn_output, ffn_up
    vectors = 32 * 4 * (7680 + 2560 + 10240 + 2560 + 4 * 2560) + 4 * 2 * 2560  # biases, 2 LayerNorms, output_norm
    output = 50304 * 2560 * 210 // 256
    assert st.model[0] == more + rest + vectors + output == 1_714_731_520  # 1635.30 MiB
    assert st.model[-1] == 50304 * 2560 * 144 // 256  # token_embd (Q4_K) stays on the CPU: 69.08 MiB logged
    # the CI's file (build b4385, 2024-12) logged 1632.95 MiB: that build's separate attn_qkv branch made all 32
    # fused tensors Q5_K (176 bytes / 256) instead of 16 x Q6_K + 16 x Q4_K
    old = st.model[0] - 16 * qkv * (210 + 144) // 256 + 32 * qkv * 176 // 256
    assert round(old / MiB, 2) == 1632.95
    assert st.kv[0] == 32 * 2 * 2560 * 2 * 2048 == 640 * MiB  # logged 640.00 MiB


def test_validation_rows_for_the_llama_cpp_ci_pythia_runs():
    """llama_cpp-ggmlci-1..7 (the llama.cpp CI's Pythia 2.8B runs on a V100): the model buffers of Q8_0, Q6_K,
    Q5_0 and Q4_0 files (no per-tensor rule changed since) are the logged MiB to 0.01; KV, n_ctx and layers equal."""
    import json
    from pathlib import Path

    from validation import engines

    records = [r for r in json.loads((Path(engines.LOGS) / "llama_cpp.json").read_text())["records"]
               if r["id"].startswith("llama_cpp-ggmlci-")]
    assert len(records) == 7
    for record in records:
        rows = {r["quantity"]: r for r in engines.compare_llama_cpp(record)}
        for quantity in ("kv_buffer CUDA0", "kv_total", "n_ctx", "layers_offloaded", "model_buffer CPU_Mapped"):
            assert abs(rows[quantity]["estimate"] - rows[quantity]["logged"]) < 0.01, (record["id"], quantity)
        if record["weights"] in ("Q8_0", "Q6_K", "Q5_0", "Q4_0"):
            assert abs(rows["model_buffer CUDA0"]["estimate"] - rows["model_buffer CUDA0"]["logged"]) < 0.01


def test_override_tensor_places_the_tensors_its_patterns_match():
    r"""-ot / --override-tensor (common/arg.cpp parse_tensor_buffer_overrides: pattern=BUFFER items, several -ot
    appending): llama_model::load_tensors searches each pattern in the GGUF tensor name and the first match sets the
    buffer. '\.ffn_.*_exps\.=CPU' keeps every expert in host RAM, as --cpu-moe does; 'blk\.(1[0-9])\.ffn_.*_exps=CPU'
    the experts of layers 10-19; on two GPUs 'blk\.1[0-9]\.=CUDA1' first, then 'exps=CPU', puts layers 10-19 whole
    on the second GPU (its experts too: the first match wins) and every other expert in host RAM."""
    from estimator.architecture import tensors
    from estimator.formats import tensor_bytes, weight_format

    a = est.model("Qwen/Qwen3-30B-A3B").architecture  # 48 layers of 128 experts
    base = ServeScenario(a, engine="llama.cpp", gpu="h100-sxm", weights="q4_k_m", max_model_len=8192,
                         max_num_seqs=1, n_gpu_layers=99, model_id="Qwen3-30B-A3B-Q4_K_M.gguf")
    fmt = weight_format("q4_k_m")

    def experts(layers) -> int:
        return sum(tensor_bytes(fmt, t, a) for t in tensors(a) if t.is_expert and t.layer in layers)

    every = serve(replace(base, override_tensor=r"\.ffn_.*_exps\.=CPU"))
    assert every.host_bytes == serve(replace(base, n_cpu_moe=10_000)).host_bytes
    assert every.host_bytes - serve(base).host_bytes == experts(range(48))
    ten = serve(replace(base, override_tensor=r"blk\.(1[0-9])\.ffn_.*_exps=CPU"))
    assert ten.host_bytes - serve(base).host_bytes == experts(range(10, 20))
    assert llama_cpp.gguf_name(next(t for t in tensors(a) if t.role == "expert_up" and t.layer == 3)) == \
        "blk.3.ffn_up_exps.weight"
    two = serve(replace(base, tensor_parallel=2, override_tensor=r"blk\.1[0-9]\.=CUDA1,exps=CPU"))
    assert two.host_bytes - serve(replace(base, tensor_parallel=2)).host_bytes == \
        experts(set(range(48)) - set(range(10, 20)))
    assert "--cpu-moe" in serve(replace(base, n_cpu_moe=10_000)).command  # written back as llama.cpp's switch

    line = (r"llama-server -m Qwen3-30B-A3B-Q4_K_M.gguf -ngl 99 -c 8192 -np 1 -ot 'blk\.(1[0-9])\.ffn_.*_exps=CPU' "
            r"--override-tensor 'blk\.2[0-9]\.ffn_.*_exps=CPU'")
    fields = dict(import_command(line).fields)
    assert fields["override_tensor"] == r"blk\.(1[0-9])\.ffn_.*_exps=CPU,blk\.2[0-9]\.ffn_.*_exps=CPU"
    s = replace(base, override_tensor=fields["override_tensor"])
    assert serve(s).host_bytes - serve(base).host_bytes == experts(range(10, 30))
    assert dict(import_command(llama_cpp.command(s)).fields)["override_tensor"] == fields["override_tensor"]
    assert dict(import_command("llama-server -m m.gguf -cmoe").fields) == {"n_cpu_moe": 10_000}


@pytest.mark.parametrize("bad, words", [("exps", "pattern=BUFFER"), ("exps=GPU", "not CPU or a device"),
                                        ("(exps=CPU", "not a regular expression"), ("(.*)*x=CPU", "exponential"),
                                        ("exps=CUDA1", "Tensor parallel")])
def test_a_bad_override_is_refused_by_name(bad, words):
    with pytest.raises(ValueError, match=words):
        ServeScenario(LLAMA_8B, engine="llama.cpp", override_tensor=bad)


def test_op_offload_copies_a_tied_embedding_used_as_lm_head():
    """A tied embedding is also the lm_head (src/llama-model.cpp creates `output` from token_embd with
    TENSOR_DUPLICATED: the same tensor when both sit in host memory): with the output layer on the CPU (-ngl 48 of
    Gemma 3 12B's 48 blocks + output) the lm_head mat-mul of a 512-token ubatch is offloaded like an untied output.
    The tied embedding is Q6_K under Q4_K_M (210 bytes per 256): 262,208 x 3840 / 256 x 210 = 825,955,200 bytes,
    plus the f32 input (3840 wide) and logits (262,208 wide) of 512 tokens: 4 x 512 x 266,048 = 544,866,304."""
    a = est.model("google/gemma-3-12b-it").architecture
    s = ServeScenario(a, engine="llama.cpp", gpu="rtx-4090", weights="q4_k_m", n_gpu_layers=48, max_model_len=8192,
                      max_num_seqs=1)
    st, _ = llama_cpp.plan(s)
    assert st.layout.output_device == -1
    assert st.compute[0] == 262_208 * 3840 // 256 * 210 + 4 * 512 * (262_208 + 3840) == 1_370_821_504
    full, _ = llama_cpp.plan(replace(s, n_gpu_layers=49))
    assert full.compute[0] < 1_370_821_504  # the output layer on the GPU: nothing to copy


def test_op_offload_reaches_cuda0_with_no_layer_offloaded():
    """-ngl 0 on a CUDA build still reserves a CUDA0 compute buffer (llama_cpp-ik357-3: Qwen3-235B-A22B Q6_K,
    'offloaded 0/95 layers', 'CUDA0 compute buffer size = 742.00 MiB'): llama_prepare_model_devices (src/llama.cpp)
    gives the model every GPU whatever -ngl says, and the scheduler offloads the host mat-muls of a 512-token ubatch
    to CUDA0. The largest copy here is the Q6_K lm_head (151936 x 4096, 210 bytes per 256 weights) with its f32
    input (4096 wide) and logits (151936 wide)."""
    a = est.model("Qwen/Qwen3-235B-A22B").architecture
    s = ServeScenario(a, engine="llama.cpp", gpu="rtx-3090", weights="q6_k", n_gpu_layers=0, max_model_len=16384,
                      max_num_seqs=1, kv_dtype="q8_0", flash_attention=True)
    st, _ = llama_cpp.plan(s)
    assert st.layout.offloaded == 0 and not st.model.get(0)
    assert st.compute[0] == 151936 * 4096 // 256 * 210 + 4 * 512 * (151936 + 4096)  # 791.6 MiB


def test_the_bare_flash_attention_switch_of_older_releases_imports():
    """llama.cpp took -fa without a value until its on / off / auto form (2025); commands pasted from older threads
    (llama_cpp-ik357-*: '-fa -ctk q8_0') read as flash attention on, whatever follows."""
    for line in ("llama-server -m Qwen3-8B-Q4_K_M.gguf -fa -c 4096", "llama-server -m m.gguf -c 4096 -fa"):
        assert dict(import_command(line).fields) == {"flash_attention": True, "max_model_len": 4096}
    assert dict(import_command("llama-server -m m.gguf --flash-attn off").fields) == {"flash_attention": False}


def test_the_trained_context_override_lifts_llama_servers_slot_cap():
    """llama-server caps each slot at the GGUF's <arch>.context_length ('the slot context (131072) exceeds the
    training context of the model (40960) - capping', tools/server); --override-kv qwen3.context_length=int:131072
    (common/arg.cpp string_parse_kv_override) raises n_ctx_train, as Qwen3's 128k GGUF instructions do with YaRN. The
    YaRN flags themselves change no buffer and are reported as not modelled."""
    qwen = est.model("Qwen/Qwen3-8B").architecture
    line = ("llama-server -m Qwen3-8B-Q4_K_M.gguf -c 131072 -ngl 99 --rope-scaling yarn --rope-scale 4 "
            "--yarn-orig-ctx 32768 --override-kv qwen3.context_length=int:131072 --override-kv tokenizer.x=bool:false")
    imported = import_command(line)
    assert dict(imported.fields) == {"max_model_len": 131_072, "n_gpu_layers": 99, "context_override": 131_072}
    assert "--rope-scaling yarn" in imported.ignored
    s = ServeScenario(qwen, engine="llama.cpp", gpu="h100-sxm", model_id="Qwen3-8B-Q4_K_M.gguf",
                      **dict(imported.fields))
    capped = serve(replace(s, context_override=0))
    assert capped.max_model_len == 40_960 and serve(s).max_model_len == 131_072
    assert "--override-kv qwen3.context_length=int:131072" in llama_cpp.command(s)
    assert dict(import_command(llama_cpp.command(s)).fields)["context_override"] == 131_072
    assert llama_cpp.gguf_arch(est.model("Qwen/Qwen3-30B-A3B").architecture) == "qwen3moe"
    with pytest.raises(ValueError, match="override-kv"):
        import_command("llama-server -m m.gguf --override-kv qwen3.context_length")


def test_the_speeds_say_when_llama_cpp_computes_with_host_weights():
    """Layers or experts left in host RAM (-ngl below the layers, --n-cpu-moe, -ot ...=CPU, or --fit's choice) run on
    the CPU at the host's memory bandwidth, which the GPU roofline does not hold: the speed's assumptions say so, with
    the host bytes of the start-up; a model wholly on the GPU (the token embedding aside) gets no such line."""
    from estimator.speed import serve_speed
    a = est.model("Qwen/Qwen3-30B-A3B").architecture
    base = ServeScenario(a, engine="llama.cpp", gpu="h100-sxm", weights="q4_k_m", max_model_len=8192, n_gpu_layers=99)

    def host_notes(s):
        return [n for n in serve_speed(s, serve(s)).assumptions if "GiB of weight matrices in host RAM" in n]

    assert host_notes(base) == [] and serve_speed(base, serve(base)).host_bytes_left_out == 0
    experts = replace(base, override_tensor=r"\.ffn_.*_exps\.=CPU")
    [note] = host_notes(experts)
    dense, expert = host_matrices(experts)  # every layer's experts; the token embedding is GET_ROWS, not a read
    assert dense == 0 and f"keeps {expert / GiB:.2f} GiB of weight matrices in host RAM" in note
    assert "no host memory bandwidth given (--host-memory-bandwidth)" in note
    assert serve_speed(experts, serve(experts)).host_bytes_left_out == serve(experts).host_bytes
    assert host_notes(replace(base, n_gpu_layers=20)) and host_notes(replace(base, n_cpu_moe=4))
