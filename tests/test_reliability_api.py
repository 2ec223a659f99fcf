"""Reliability of the API (issue 6): every input dataclass rejects nonsense with a ValueError that names the field
and its valid range, and whatever it accepts gives finite, non-negative integer sizes whose components sum to the
totals. Hypothesis drives random valid and invalid scenarios over every field, at the full accepted ranges
(tests/test_properties.py covers the estimate's properties at everyday sizes)."""

import json
import math
from dataclasses import fields, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimator as est
from estimator.formats import resolve_word
from estimator.hardware import max_concurrency, max_seq_len, with_gpus
from estimator.inputs import inputs
from estimator.training import OPTIMIZER_IMPLS
from estimator.vision import MAX_IMAGE_SIDE
from estimator.scenarios import (MAX_BATCH, MAX_IMAGES, MAX_CONCURRENCY, MAX_GPUS, MAX_OVERHEAD_GB, MAX_PARAMS_B,
                                 MAX_SEQ_LEN)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ARCHITECTURES = [m.architecture for m in est.models()]
LLAMA_1B = est.model("meta-llama/Llama-3.2-1B").architecture
SEVEN_B = est.ParamCount.from_billions(7)

# --- the nonsense the issue lists, one field at a time: (what, build, field named, range or choices named) ---
NONSENSE = [
    ("zero parameters", lambda: est.ParamCount.from_billions(0), "total parameters (B)", "between 0.001 and 20,000"),
    ("negative parameters", lambda: est.ParamCount.from_billions(-7), "total parameters (B)",
     "between 0.001 and 20,000"),
    ("10^6 B parameters", lambda: est.ParamCount.from_billions(1e6), "total parameters (B)", f"{MAX_PARAMS_B:,}"),
    ("NaN parameters", lambda: est.ParamCount.from_billions(math.nan), "total parameters (B)", "finite number"),
    ("infinite parameters", lambda: est.ParamCount.from_billions(math.inf), "total parameters (B)", "finite"),
    ("parameters as text", lambda: est.ParamCount.from_billions("7"), "total parameters (B)", "finite number"),
    ("fractional parameter count", lambda: est.ParamCount(7.5, 7), "total_params", "whole number"),
    ("bool parameter count", lambda: est.ParamCount(True, True), "total_params", "whole number"),
    ("MoE active > total", lambda: est.ParamCount.from_billions(47, 48), "active parameters", "cannot exceed"),
    ("MoE active > total (counts)", lambda: est.ParamCount(10, 11), "active parameters", "cannot exceed"),
    ("NaN active", lambda: est.ParamCount.from_billions(47, math.nan), "active parameters (B)", "finite"),
    ("zero sequence", lambda: est.InferenceScenario(SEVEN_B, seq_len=0), "seq_len", "1 and 10,000,000"),
    ("10^9 tokens", lambda: est.InferenceScenario(SEVEN_B, seq_len=10**9), "seq_len", "1 and 10,000,000"),
    ("fractional tokens", lambda: est.InferenceScenario(SEVEN_B, seq_len=2048.5), "seq_len", "whole number"),
    ("float tokens", lambda: est.FinetuneScenario(SEVEN_B, seq_len=2048.0), "seq_len", "whole number"),
    ("NaN batch", lambda: est.InferenceScenario(SEVEN_B, batch_size=math.nan), "batch_size", "whole number"),
    ("negative batch", lambda: est.FinetuneScenario(SEVEN_B, batch_size=-1), "batch_size", "1 and 65,536"),
    ("zero concurrency", lambda: est.InferenceScenario(SEVEN_B, concurrency=0), "concurrency", "1 and 65,536"),
    ("huge concurrency", lambda: est.InferenceScenario(SEVEN_B, concurrency=10**12), "concurrency", "65,536"),
    ("zero tensor parallel", lambda: est.InferenceScenario(SEVEN_B, tensor_parallel=0), "tensor_parallel", "512"),
    ("negative prefill chunk", lambda: est.InferenceScenario(SEVEN_B, prefill_chunk=-1), "prefill_chunk", "0 and"),
    ("negative overhead", lambda: est.InferenceScenario(SEVEN_B, overhead_gb=-1), "overhead_gb", "0 and 1,000"),
    ("NaN overhead", lambda: est.InferenceScenario(SEVEN_B, overhead_gb=math.nan), "overhead_gb", "finite"),
    ("infinite overhead", lambda: est.FinetuneScenario(SEVEN_B, overhead_gb=math.inf), "overhead_gb", "finite"),
    ("unknown weight format", lambda: est.InferenceScenario(SEVEN_B, weights="int3"), "weights", "one of"),
    ("unknown KV dtype", lambda: est.InferenceScenario(SEVEN_B, kv_dtype="fp3"), "kv_dtype", "one of"),
    ("unhashable KV dtype", lambda: est.InferenceScenario(SEVEN_B, kv_dtype=["fp8"]), "kv_dtype", "one of"),
    ("unknown method", lambda: est.InferenceScenario(SEVEN_B, method="fast"), "method", "one of"),
    ("detailed without an architecture", lambda: est.InferenceScenario(SEVEN_B, method="detailed"), "detailed",
     "catalog model or a config.json"),
    ("activation bits 8", lambda: est.InferenceScenario(SEVEN_B, activation_bits=8), "activation_bits",
     "one of 16, 32"),
    ("activation bits 16.0", lambda: est.InferenceScenario(SEVEN_B, activation_bits=16.0), "activation_bits",
     "one of 16, 32"),
    ("parameter bits 3", lambda: est.FinetuneScenario(SEVEN_B, param_bits=3), "param_bits", "one of 32, 16, 8, 4"),
    ("parameter bits True", lambda: est.FinetuneScenario(SEVEN_B, param_bits=True), "param_bits", "one of"),
    ("optimizer state bits 8", lambda: est.FinetuneScenario(SEVEN_B, optimizer_state_bits=8),
     "optimizer_state_bits", "one of 32, 16"),
    ("unknown optimizer", lambda: est.FinetuneScenario(SEVEN_B, optimizer="shampoo"), "optimizer", "one of"),
    ("unknown optimizer implementation", lambda: est.FinetuneScenario(SEVEN_B, optimizer_impl="apex"),
     "optimizer_impl", "one of"),
    ("adapter bits 8", lambda: est.FinetuneScenario(SEVEN_B, adapter_bits=8), "adapter_bits", "one of 32, 16"),
    ("unknown technique", lambda: est.FinetuneScenario(SEVEN_B, technique="dora"), "technique", "one of"),
    ("unknown regime", lambda: est.FinetuneScenario(SEVEN_B, regime="fp4"), "regime", "one of"),
    ("ZeRO stage 4", lambda: est.FinetuneScenario(SEVEN_B, zero_stage=4), "zero_stage", "one of 0, 1, 2, 3"),
    ("zero GPUs", lambda: est.FinetuneScenario(SEVEN_B, num_gpus=0), "num_gpus", "1 and 4,096"),
    ("zero LoRA rank", lambda: est.FinetuneScenario(SEVEN_B, lora_rank=0), "lora_rank", "1 and 65,536"),
    ("LoRA rank wider than the layer", lambda: est.FinetuneScenario(LLAMA_1B, technique="lora", lora_rank=2049),
     "lora_rank", "1 and 2,048"),
    ("LoRA rank wider than the layer, full fine-tuning (the table has LoRA rows)",
     lambda: est.FinetuneScenario(LLAMA_1B, technique="full", lora_rank=4096), "lora_rank", "1 and 2,048"),
    ("QLoRA rank wider than the layer", lambda: est.FinetuneScenario(LLAMA_1B, technique="qlora-4bit",
                                                                     lora_rank=10**4), "lora_rank", "2,048"),
    ("unknown LoRA target", lambda: est.FinetuneScenario(SEVEN_B, lora_targets="q,zz"), "lora_targets", "q_proj"),
    ("empty LoRA targets", lambda: est.FinetuneScenario(SEVEN_B, lora_targets=""), "lora_targets", "all-linear"),
    ("flag as text", lambda: est.FinetuneScenario(SEVEN_B, gradient_checkpointing="yes"), "gradient_checkpointing",
     "auto, True, False"),
    ("flag as 1", lambda: est.InferenceScenario(SEVEN_B, flash_attention=1), "flash_attention", "true or false"),
    ("no model", lambda: est.InferenceScenario(None), "model", "Architecture or a ParamCount"),
    ("model as text", lambda: est.FinetuneScenario("llama-7b"), "model", "Architecture or a ParamCount"),
]


@pytest.mark.parametrize("what, build, field, valid", NONSENSE, ids=[case[0] for case in NONSENSE])
def test_nonsense_is_a_value_error_naming_the_field_and_the_valid_range(what, build, field, valid):
    with pytest.raises(ValueError) as caught:
        build()
    message = str(caught.value)
    assert field in message and valid in message, message
    assert len(message) < 400


# --- one bad field in an otherwise valid scenario: the message names that field ---
INT_FIELDS = {"batch_size": (1, MAX_BATCH), "seq_len": (1, MAX_SEQ_LEN), "concurrency": (1, MAX_CONCURRENCY),
              "tensor_parallel": (1, 512), "prefill_chunk": (0, MAX_SEQ_LEN), "lora_rank": (1, 65_536),
              "num_gpus": (1, MAX_GPUS), "zero_stage": (0, 3), "images": (0, MAX_IMAGES),
              "image_width": (1, MAX_IMAGE_SIDE), "image_height": (1, MAX_IMAGE_SIDE)}
garbage = st.one_of(st.none(), st.text(max_size=30), st.lists(st.integers(), max_size=3),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.just(object()),
                    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(max_magnitude=10))


def bad_values(name: str):
    """Values that field `name` must refuse."""
    if name in INT_FIELDS:
        low, high = INT_FIELDS[name]
        return st.one_of(garbage, st.booleans(), st.integers(max_value=low - 1), st.integers(min_value=high + 1),
                         st.integers(low, high).map(float))
    if name == "overhead_gb":
        return st.one_of(garbage.filter(lambda v: not isinstance(v, float) or not 0 <= v <= MAX_OVERHEAD_GB),
                         st.booleans(), st.floats(max_value=-1e-9), st.floats(min_value=MAX_OVERHEAD_GB + 1e-6))
    if name in ("flash_attention", "mla_latent_cache", "gradient_checkpointing", "offload_optimizer"):
        return st.one_of(garbage.filter(lambda v: v != "auto"), st.integers())  # 'auto': checkpointing's default
    if name.endswith("_bits"):
        return st.one_of(garbage, st.booleans(), st.integers().filter(lambda v: v not in (4, 8, 16, 32)),
                         st.sampled_from([16.0, 32.0, "16"]))
    if name == "lora_targets":
        return st.one_of(st.none(), st.integers(), st.just(""), st.just(" , "),
                         st.text(alphabet="xyz_,", min_size=1, max_size=20).filter(lambda t: t.strip(" ,")))
    if name == "model":
        return st.one_of(garbage, st.integers(), st.builds(dict, name=st.text(max_size=5)))
    spec = {**inputs(est.InferenceScenario), **inputs(est.FinetuneScenario)}[name]
    if spec.low is not None and not spec.choices:  # any other bounded number: outside its declared range
        low, high = spec.low, spec.high
        if spec.kind is int:
            return st.one_of(garbage, st.booleans(), st.integers(max_value=int(low) - 1),
                             st.integers(min_value=int(high) + 1), st.integers(int(low), int(high)).map(float))
        return st.one_of(garbage.filter(lambda v: not isinstance(v, float) or not low <= v <= high), st.booleans(),
                         st.floats(max_value=low - 1e-9), st.floats(min_value=high + 1e-6))
    # choices: weights, kv_dtype, method, technique, optimizer, regime; words a user may type for a choice ('FP16',
    # ' bf16', 'half': formats.ALIASES, issue 14) are accepted, so they are not bad values

    def refused(value) -> bool:
        return not (isinstance(value, str) and resolve_word(value, spec.choices) is not None)
    return st.one_of(garbage.filter(lambda v: v not in ("auto", "quick", "detailed")).filter(refused), st.integers(),
                     st.sampled_from(["BF17", "int3", "fp3", "shampoo", "dora", "fast", " bf 17"]))


@SETTINGS
@given(st.sampled_from(["inference", "finetune"]), st.data())
def test_one_bad_field_is_refused_by_name(page, data):
    kind = est.InferenceScenario if page == "inference" else est.FinetuneScenario
    name = data.draw(st.sampled_from([f.name for f in fields(kind)]))
    value = data.draw(bad_values(name))
    base = {"model": LLAMA_1B} if name in ("lora_rank", "method") else {"model": SEVEN_B}
    try:
        kind(**{**base, name: value})
    except ValueError as err:
        message = str(err)
        assert name.split("_")[0] in message or (name == "model" and "model" in message), (name, value, message)
        assert len(message) < 1_000, message
    else:
        raise AssertionError(f"{kind.__name__}({name}={value!r}) was accepted")


# --- random scenarios, valid or not: only ValueError escapes; accepted ones give sane numbers ---
def anything(valid):
    return st.one_of(valid, valid, valid, garbage, st.integers(-10, 10**12), st.booleans())


models = st.one_of(st.sampled_from(ARCHITECTURES),
                   st.builds(lambda total, share: est.ParamCount(total, max(1, int(total * share))),
                             st.integers(1, MAX_PARAMS_B * 10**9), st.floats(0, 1)),
                   st.builds(est.ParamCount.from_billions, st.floats(0.001, MAX_PARAMS_B)))
common = dict(batch_size=st.integers(1, MAX_BATCH), seq_len=st.integers(1, MAX_SEQ_LEN),
              flash_attention=st.booleans(), overhead_gb=st.floats(0, MAX_OVERHEAD_GB),
              activation_bits=st.sampled_from([16, 32]), method=st.sampled_from(est.scenarios.METHODS))
INFERENCE = dict(common, weights=st.sampled_from(list(est.WEIGHT_FORMATS)),
                 kv_dtype=st.sampled_from(list(est.KV_DTYPE_BYTES)), concurrency=st.integers(1, MAX_CONCURRENCY),
                 tensor_parallel=st.integers(1, 512), mla_latent_cache=st.booleans(),
                 prefill_chunk=st.integers(0, MAX_SEQ_LEN))
FINETUNE = dict(common, technique=st.sampled_from(est.TECHNIQUES), optimizer=st.sampled_from(list(est.OPTIMIZERS)),
                param_bits=st.sampled_from([32, 16, 8, 4]), regime=st.sampled_from(list(est.REGIMES)),
                optimizer_state_bits=st.sampled_from([32, 16]), optimizer_impl=st.sampled_from(OPTIMIZER_IMPLS),
                adapter_bits=st.sampled_from([32, 16]), lora_rank=st.integers(1, 4096),
                lora_targets=st.sampled_from(["q,v", "attention", "all-linear", "down", "q,k,v,o,gate,up,down"]),
                gradient_checkpointing=st.booleans(), num_gpus=st.integers(1, MAX_GPUS),
                zero_stage=st.integers(0, 3), offload_optimizer=st.booleans())


def check_breakdowns(rows) -> None:
    """Finite, non-negative integer bytes; components sum to the total; the JSON export is strict JSON."""
    for row in rows:
        assert row.components and all(isinstance(size, int) and size >= 0 for _, size in row.components), row
        assert row.total == sum(size for _, size in row.components) >= 0
        assert all(isinstance(size, int) and 0 <= size for _, size in row.phases)
        if row.phases:
            assert dict(row.phases)[row.peak_phase] == row.total == max(size for _, size in row.phases)
        assert isinstance(row.host_bytes, int) and row.host_bytes >= 0 and row.gpus >= 1
        json.dumps(row.to_dict(), allow_nan=False)


def check_gpu_fit(s, row_fn) -> None:
    gpu = est.gpu("h100-sxm")
    placed = est.fit(s, row_fn, gpu)
    assert placed.count is None or placed.count >= 1
    assert placed.per_gpu_bytes >= 0 and placed.headroom_bytes == gpu.memory_bytes - placed.per_gpu_bytes
    if placed.count:
        spread = with_gpus(s, placed.count)
        assert 0 <= max_seq_len(spread, row_fn, gpu.memory_bytes) <= MAX_SEQ_LEN
        if isinstance(s, est.InferenceScenario):
            assert 0 <= max_concurrency(spread, row_fn, gpu.memory_bytes) <= MAX_CONCURRENCY


@SETTINGS
@given(st.sampled_from(["inference", "finetune"]), st.data())
def test_random_scenarios_raise_only_value_error_and_accepted_ones_give_sane_numbers(page, data):
    kind, spec = (est.InferenceScenario, INFERENCE) if page == "inference" else (est.FinetuneScenario, FINETUNE)
    invalid = data.draw(st.booleans())
    kwargs = {name: data.draw(anything(valid) if invalid else valid, label=name) for name, valid in spec.items()}
    try:
        s = kind(data.draw(anything(models) if invalid else models, label="model"), **kwargs)
    except ValueError as err:
        assert str(err) and len(str(err)) < 1_000
        return
    rows = est.inference_table(s) if page == "inference" else est.finetune_table(s)
    check_breakdowns(rows)
    check_breakdowns([(est.estimate_inference if page == "inference" else est.estimate_finetune)(s)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["inference", "finetune"]), st.data())
def test_gpu_fit_and_limits_are_sane_at_any_valid_scenario(page, data):
    kind, spec = (est.InferenceScenario, INFERENCE) if page == "inference" else (est.FinetuneScenario, FINETUNE)
    kwargs = {name: data.draw(valid, label=name) for name, valid in spec.items()}
    if page == "finetune":
        kwargs["lora_rank"] = data.draw(st.integers(1, 64))
    try:
        s = kind(data.draw(models, label="model"), **kwargs)
    except ValueError as err:  # only the combinations: 'detailed' for a bare parameter count
        assert "detailed" in str(err)
        return
    row_fn = est.estimate_inference if page == "inference" else est.estimate_finetune
    check_gpu_fit(s, row_fn)


@pytest.mark.parametrize("architecture", ARCHITECTURES, ids=lambda a: a.name)
def test_the_largest_accepted_inputs_give_finite_numbers_for_every_catalog_model(architecture):
    """The upper bounds at once, eager attention (s x s scores): big integers, never inf, NaN or an overflow."""
    big = est.InferenceScenario(architecture, batch_size=MAX_BATCH, concurrency=MAX_CONCURRENCY, seq_len=MAX_SEQ_LEN,
                                flash_attention=False, overhead_gb=MAX_OVERHEAD_GB, activation_bits=32,
                                kv_dtype="fp32", weights="fp32")
    check_breakdowns(est.inference_table(big) + (est.estimate_inference(replace(big, tensor_parallel=512)),))
    rank = min(architecture.hidden_size, 65_536)
    train = est.FinetuneScenario(architecture, batch_size=MAX_BATCH, seq_len=MAX_SEQ_LEN, flash_attention=False,
                                 activation_bits=32, regime="fp32", lora_rank=rank, lora_targets="all-linear",
                                 num_gpus=MAX_GPUS, zero_stage=3, offload_optimizer=True, overhead_gb=MAX_OVERHEAD_GB)
    check_breakdowns(est.finetune_table(train))


def test_the_largest_parameter_count_gives_finite_numbers():
    model = est.ParamCount.from_billions(MAX_PARAMS_B, 0.001)
    big = est.InferenceScenario(model, batch_size=MAX_BATCH, concurrency=MAX_CONCURRENCY, seq_len=MAX_SEQ_LEN,
                                activation_bits=32, kv_dtype="fp32", tensor_parallel=512)
    check_breakdowns(est.inference_table(big))
    check_breakdowns(est.finetune_table(est.FinetuneScenario(model, batch_size=MAX_BATCH, seq_len=MAX_SEQ_LEN,
                                                             param_bits=32, num_gpus=MAX_GPUS, zero_stage=3)))


def test_a_lora_rank_wider_than_the_layer_is_refused_for_every_catalog_model_and_technique():
    for a in ARCHITECTURES:
        widest = max(a.hidden_size, a.q_width)
        for technique in est.TECHNIQUES:
            est.FinetuneScenario(a, technique=technique, lora_rank=min(widest, 65_536))
            with pytest.raises(ValueError, match="lora_rank must be between 1 and"):
                est.FinetuneScenario(a, technique=technique, lora_rank=widest + 1)
