"""Fake-tensor traces of real Hugging Face model code against the detailed estimate (issue 5).

Runs the fast subset of the validation matrix (small dimensions, about a second per case) once per session
and asserts the tolerances of the issue: weights, gradients, optimizer states and KV cache within 0.5% of the
measured bytes; activations and the training peak within 10%; the inference peak within 10%.
Skipped when torch, transformers or peft are not installed
(pip install -r requirements-validation.txt).
"""

import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from validation import compare, matrix, trace  # noqa: E402
from validation.tracker import ACTIVATIONS, MemoryTracker  # noqa: E402

import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

TOLERANCE_PCT = {"weights": 0.5, "gradients": 0.5, "optimizer_states": 0.5, "kv_cache": 0.5,
                 ("training", "activations"): 10, ("training", "peak"): 10, ("inference", "peak"): 10}

FAST_CASES = [c for c in matrix.cases(fast=True)]
COMPONENTS = {"inference": ("weights", "kv_cache", "peak"),
              "training": ("weights", "gradients", "optimizer_states", "activations", "peak")}
ASSERTED = [(c.name, comp) for c in FAST_CASES if not c.variant for comp in COMPONENTS[c.kind]]


@pytest.fixture(scope="session")
def fast_results():
    """{case name: (case, rows by component, measurement)} for the fast subset, traced once (timed)."""
    t0 = time.perf_counter()
    out = {}
    for case in FAST_CASES:
        rows, measured = matrix.run_case(case)
        out[case.name] = (case, {r["component"]: r for r in rows}, measured)
    out["_wall_s"] = time.perf_counter() - t0
    return out


def _tolerance(kind: str, component: str) -> float:
    return TOLERANCE_PCT.get(component, TOLERANCE_PCT.get((kind, component)))


@pytest.mark.parametrize("case_name, component", ASSERTED, ids=[f"{n}:{c}" for n, c in ASSERTED])
def test_estimate_matches_trace(fast_results, case_name, component):
    case, rows, _ = fast_results[case_name]
    row = rows[component]
    limit = _tolerance(case.kind, component)
    assert abs(row["error_pct"]) <= limit, (
        f"{case.scenario}: {component} estimate {row['estimate_bytes']:,} B vs measured {row['measured_bytes']:,} B "
        f"({row['error_pct']:+.2f}%, limit {limit}%)")


def test_fast_subset_runs_in_time(fast_results):
    assert fast_results["_wall_s"] < 150, f"fast subset took {fast_results['_wall_s']:.0f} s"


# --- the tracer itself ----------------------------------------------------------------------------------

def test_tracker_counts_storages_once_and_frees_them():
    tr = MemoryTracker()
    with FakeTensorMode(), tr:
        with tr.phase("p"):
            a = torch.empty(1000, dtype=torch.bfloat16)
            view = a[10:20]  # a view costs nothing and keeps the whole storage
            assert tr.current == 2000 and view.untyped_storage().nbytes() == 2000
            b = a * 2
            assert tr.current == 4000 and tr.live_bytes(ACTIVATIONS) == 4000
            tr.retag(b, "gradients")
            assert tr.live_bytes("gradients") == 2000 and tr.live_bytes(ACTIVATIONS) == 2000
            del a, view
            assert tr.current == 2000
        del b
    assert tr.current == 0 and tr.peaks["p"].total == 4000


def test_training_trace_identities():
    cfg = dict(matrix.SMALL_CONFIGS["llama"], num_hidden_layers=2, vocab_size=8000)
    m = trace.trace_training(cfg, batch=1, seq=128)
    params = m["trainable_params"]
    assert m["weights"] == 2 * params and m["gradients"] == 2 * params
    n_tensors = 2 * 9 + 3  # per layer: 4 attention + 3 MLP + 2 norms; embedding, final norm, lm_head
    assert m["optimizer_states"] == 2 * 2 * params + 4 * n_tensors  # bf16 exp_avg, exp_avg_sq + fp32 step
    assert m["optimizer_step_temporaries"] == 0  # fused AdamW
    # fp32 log-softmax + int64 shifted labels + a few fp32 scalars (nll output and weight, the loss)
    assert 0 <= m["logits_saved"] - (4 * 128 * 8000 + 8 * 128) <= 64
    assert m["peak"] == max(m["phases"].values())


def test_optimizer_implementations_temporaries():
    cfg = dict(matrix.SMALL_CONFIGS["llama"], num_hidden_layers=2, vocab_size=8000)
    foreach = trace.trace_training(cfg, batch=1, seq=64, optimizer_impl="foreach")
    single = trace.trace_training(cfg, batch=1, seq=64, optimizer_impl="single-tensor")
    assert foreach["optimizer_step_temporaries"] == foreach["weights"]  # one param-sized buffer per tensor
    extra = single["optimizer_step_temporaries"] - 2 * 2 * 8000 * 512  # 2 x the largest tensor (embedding)
    assert 0 <= extra <= 4096  # + a few scalar temporaries


def test_kv_cache_is_exact_and_sliding_layers_hold_the_window():
    llama = dict(matrix.SMALL_CONFIGS["llama"], num_hidden_layers=2)
    m = trace.trace_inference(llama, batch=2, prefill_len=100, decode_steps=4)
    assert m["kv_cache_after_prefill"] == 2 * 2 * 2 * 64 * 100 * 2 * 2
    assert m["kv_cache"] == 2 * 2 * 2 * 64 * 104 * 2 * 2
    mistral = dict(matrix.SMALL_CONFIGS["mistral"], num_hidden_layers=2, sliding_window=64)
    w = trace.trace_inference(mistral, batch=1, prefill_len=100, decode_steps=2)
    assert w["kv_cache_after_prefill"] == 2 * 2 * 2 * 64 * 100 * 2  # a view of the whole prompt's k/v
    assert w["kv_cache"] == 2 * 2 * 2 * 64 * 64 * 2  # after a decode step: window-sized storage


def test_scaled_trace_extrapolates_exactly():
    cfg = dict(matrix.SMALL_CONFIGS["llama"], num_hidden_layers=4, vocab_size=8000)
    direct = trace.trace_training(cfg, batch=1, seq=128)
    scaled = trace.trace_scaled(trace.trace_training, cfg, (2, 3), batch=1, seq=128)
    for key in ("weights", "gradients", "optimizer_states", "activations", "peak"):
        assert scaled[key] == direct[key], key
    assert scaled["phases"] == direct["phases"]


def test_lora_adapter_dtypes():
    cfg = dict(matrix.SMALL_CONFIGS["llama"], num_hidden_layers=2, vocab_size=8000)
    fp32 = trace.trace_training(cfg, batch=1, seq=64, technique="lora")
    bf16 = trace.trace_training(cfg, batch=1, seq=64, technique="lora", lora_dtype="base")
    r, h, kv = 16, 512, 128
    adapters = 2 * ((r * h + h * r) + (r * h + kv * r))  # q and v adapters (A: r x in, B: out x r) in 2 layers
    assert fp32["trainable_params"] == bf16["trainable_params"] == adapters
    assert fp32["gradients"] == 4 * adapters and bf16["gradients"] == 2 * adapters


def test_estimates_use_the_same_config():
    e = compare.estimate_training(matrix.SMALL_CONFIGS["llama"], batch=2, seq=512)
    m = trace.trace_training(matrix.SMALL_CONFIGS["llama"], batch=2, seq=512)
    assert e["weights"] == m["weights"] and e["optimizer_states"] <= m["optimizer_states"] < e["optimizer_states"] + 200


def test_gated_deltanet_prefill_is_the_fallbacks_working_set():
    """Three Gated DeltaNet layers and a full-attention one at distinct sizes (n_k 2 x d_k 32, n_v 6 x d_v 48, s 300:
    5 chunks of 64, 20 padded positions): the prefill peak is layer 2's reshape copy after the chunk loop
    (validation/FINDINGS.md 45)."""
    from estimator.activations import _linear_attention_inference

    cfg = dict(matrix.SMALL_CONFIGS["qwen3_5_text"], linear_num_key_heads=2,
               linear_key_head_dim=32, linear_num_value_heads=6, linear_value_head_dim=48)
    m = trace.trace_inference(cfg, batch=2, prefill_len=300, decode_steps=1)
    t = 2 * 300
    layer = _linear_attention_inference(compare.architecture(cfg), 2, 300, 2)
    assert layer == 10_392_976
    base = 3 * 2 * t * 512  # embedding output, layer 2's input and its normed copy
    rope = 2 * 2 * t * 16  # cos and sin of the 16 rotary dims (partial_rotary_factor 0.25 of 64)
    positions = 8 * 300  # int64 position ids
    conv_state, recurrent_state = 2 * (2 * 32 * 2 + 6 * 48) * 4 * 2, 4 * 2 * 6 * 32 * 48  # HF cache (FINDINGS 41)
    assert m["activations"] == layer + base + rope + positions + 2 * (conv_state + recurrent_state) + conv_state


def test_deepseek_v32_indexer_scores_and_keys_under_eager():
    """Two DeepSeek-V3.2 layers under eager, index heads 6 x 48 (distinct from MLA's 8 x 64 + 32): the prefill peak
    is layer 1's indexer scoring; the indexer keys are KV cache, in bf16 (validation/FINDINGS.md 43)."""
    from estimator.activations import _indexer_inference

    cfg = dict(matrix.SMALL_CONFIGS["deepseek_v32"], num_hidden_layers=2, index_n_heads=6, index_head_dim=48)
    m = trace.trace_inference(cfg, batch=2, prefill_len=300, decode_steps=1, attn_impl="eager")
    latent, index_key = (128 + 32) * 2, 48 * 2  # bytes per token and layer: MLA latent, HF's bf16 indexer key
    assert m["kv_cache_after_prefill"] == m["kv_cache_formula_storage"] - 2 * 2 * (latent + index_key)
    assert m["kv_cache_after_prefill"] == 2 * 2 * 300 * (latent + index_key)
    t = 2 * 300
    scoring = _indexer_inference(compare.architecture(cfg), 2, 300, 300, 2)
    assert scoring == 45_427_200
    base = 3 * 2 * t * 512 + 2 * 2 * 300 * 300  # embedding, layer input, normed; the additive mask (b, 1, s, s)
    rope = 2 * 2 * 300 * 32  # cos and sin (1, s, d_r)
    assert m["activations"] == scoring + base + rope + 8 * 300


def test_the_shifted_loss_of_transformers_4_47_peaks_in_the_forward_as_estimated():
    """transformers 4.46-4.47's ForCausalLMLoss (v4.47.1 loss/loss_utils.py L32-47), traced: during its
    cross-entropy the 16-bit logits (2 B), their fp32 upcast (4 B), the shifted contiguous copy and its fp32
    log-softmax (4 B each over b x (s - 1) rows) are alive. b = 2, s = 128, V = 8,000:
    6 x 256 x 8,000 + 8 x 2 x 127 x 8,000 = 12,288,000 + 16,256,000 = 28,544,000 B. Today's loss (padded labels,
    no copy) peaks at backward start instead, at 12 B per logit."""
    from estimator.activations import loss_bytes
    cfg = dict(matrix.SMALL_CONFIGS["llama"], num_hidden_layers=2, vocab_size=8000)
    shifted = trace.trace_training(cfg, batch=2, seq=128, technique="lora", loss="shifted")
    standard = trace.trace_training(cfg, batch=2, seq=128, technique="lora")
    assert shifted["peak_phase"] == "forward" and standard["peak_phase"] == "backward"
    a = compare.architecture(cfg)
    estimate = loss_bytes(a, 2, 128, 2, "shifted")
    assert estimate == 28_544_000
    assert 0 <= shifted["logits_forward_peak"] - estimate <= 8_192  # + the int64 labels, a few scalars
    assert standard["logits"] - loss_bytes(a, 2, 128, 2, "standard") in range(0, 64)


def test_peft_kbit_cast_makes_the_residual_stream_fp32_under_bf16_autocast():
    """What `activations.residual_stream_bytes` rests on: after prepare_model_for_kbit_training's cast (every 16-bit
    parameter but the 4-bit linears to fp32; here bf16 linears stand for them), transformers 5.24's Llama layers
    receive fp32 hidden states under the Trainer's bf16 autocast, while the logits are bf16."""
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=256)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    for name, p in model.named_parameters():
        p.requires_grad_(False)
        if "proj" not in name:  # peft v0.20.0 src/peft/utils/other.py L197-202, Params4bit excepted
            p.data = p.data.to(torch.float32)
    model.gradient_checkpointing_enable()
    model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear"))
    seen = []
    for layer in model.base_model.model.model.layers:
        layer.register_forward_pre_hook(lambda _m, args, kwargs: seen.append((args or (kwargs["hidden_states"],))[0]
                                                                             .dtype), with_kwargs=True)
    ids = torch.randint(0, 256, (1, 16))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(input_ids=ids, labels=ids)
    assert seen == [torch.float32, torch.float32] and out.logits.dtype == torch.bfloat16


def test_compiled_chunked_cross_entropy_saves_the_16_bit_chunk_and_two_row_statistics():
    """torchtune's `compile: True` compiles CEWithChunkedOutputLoss.compute_cross_entropy (torchtune 0031bfb
    torchtune/training/_compile.py L80-83): the compiled graph keeps the 16-bit chunk itself (the input's storage),
    the labels and two fp32 values per row, where eager keeps the fp32 log-probabilities (4 B per logit): what
    `loss_bytes(..., "chunked-compiled")` counts, A t V + 8 t. Inductor's CPU backend; its partitioner (which
    tensors are saved) runs before code generation, the same for CUDA."""
    import torch.nn.functional as F

    def compute_cross_entropy(logits, labels):  # torchtune 0031bfb modules/loss/ce_chunked_output_loss.py
        return F.cross_entropy(logits.float(), labels, ignore_index=-100, reduction="sum")

    rows, vocab = 64, 512
    x = torch.randn(rows, vocab, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, vocab, (rows,))
    saved = {}
    for name, fn in (("eager", compute_cross_entropy), ("compiled", torch.compile(compute_cross_entropy))):
        new = {}  # storage -> bytes, the input's own storage excluded (alive anyway)

        def pack(t, new=new):
            if t.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
                new[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = fn(x, labels)
        loss.backward()
        assert x.grad.dtype == torch.bfloat16
        x.grad = None
        saved[name] = sum(new.values())
    assert saved["eager"] == 4 * rows * vocab + 8 * rows + 4  # fp32 log-softmax, int64 labels, the weight scalar
    assert saved["compiled"] == 8 * rows + 2 * 4 * rows  # int64 labels and two fp32 row statistics
