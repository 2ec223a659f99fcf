"""The quick method reproduces the reference document's worked examples exactly (GB = 10^9 bytes)."""

import pytest

import estimator as est

GB = 10**9
SEVEN_B = est.ParamCount.from_billions(7)


def _gb(rows):
    return {r.row: {name: size / GB for name, size in r.components} | {"total": r.total / GB} for r in rows}


def test_inference_table_is_the_reference_documents():
    rows = _gb(est.inference_table(est.InferenceScenario(SEVEN_B)))
    assert rows == {
        "16-bit": {"weights": 14, "kv_cache": 1.4, "activations": 1.4, "overhead": 2, "total": 18.8},
        "8-bit": {"weights": 7, "kv_cache": 1.4, "activations": 1.4, "overhead": 2, "total": 11.8},
        "4-bit": {"weights": 3.5, "kv_cache": 1.4, "activations": 1.4, "overhead": 2, "total": 8.3},
    }


def test_finetune_table_is_the_reference_documents():
    rows = _gb(est.finetune_table(est.FinetuneScenario(SEVEN_B)))
    assert rows == {
        "full": {"weights": 14, "gradients": 14, "optimizer_states": 56, "activations": 1.4, "overhead": 2,
                 "total": 87.4},
        "lora": {"weights": 14, "gradients": 0.14, "optimizer_states": 0.56, "activations": 1.4, "overhead": 2,
                 "total": 18.1},
        "qlora-8bit": {"weights": 7, "gradients": 0.14, "optimizer_states": 0.56, "activations": 1.4,
                       "overhead": 2, "total": 11.1},
        "qlora-4bit": {"weights": 3.5, "gradients": 0.14, "optimizer_states": 0.56, "activations": 1.4,
                       "overhead": 2, "total": 7.6},
    }


@pytest.mark.parametrize("optimizer, expected", [
    ("sgd", [0, 0, 0, 0]),
    ("sgd-momentum", [28, 0.28, 0.28, 0.28]),
    ("rmsprop", [28, 0.28, 0.28, 0.28]),
    ("adamw", [56, 0.56, 0.56, 0.56]),
])
def test_optimizer_table_is_the_reference_documents(optimizer, expected):
    rows = est.finetune_table(est.FinetuneScenario(SEVEN_B, optimizer=optimizer))
    assert [r.component("optimizer_states") / GB for r in rows] == expected


def test_moe_weights_use_total_and_activations_use_active_parameters():
    deepseek_r1 = est.ParamCount.from_billions(671, 37)
    row = est.inference_table(est.InferenceScenario(deepseek_r1))[0]
    assert row.component("weights") == 1342 * GB
    assert row.component("activations") == row.component("kv_cache") == round(7.4 * GB)


def test_activations_and_kv_scale_with_batch_sequence_and_concurrency():
    row = est.inference_table(est.InferenceScenario(SEVEN_B, batch_size=2, seq_len=4096, concurrency=3))[0]
    assert row.component("activations") == 5_600_000_000  # 1.4 GB x (2 x 4096 / 2048)
    assert row.component("kv_cache") == 16_800_000_000  # x 3 concurrent requests


def test_overhead_is_editable():
    row = est.inference_table(est.InferenceScenario(SEVEN_B, overhead_gb=1.0))[0]
    assert row.total == 17_800_000_000


def test_32_bit_activations_double_the_reference_share():
    row = est.finetune_table(est.FinetuneScenario(SEVEN_B, activation_bits=32))[0]
    assert row.component("activations") == 2_800_000_000


def test_a_bare_parameter_count_uses_the_quick_method_and_an_architecture_the_detailed(llama3_8b):
    assert est.InferenceScenario(SEVEN_B).resolved_method == "quick"
    assert est.InferenceScenario(llama3_8b).resolved_method == "detailed"
    assert est.InferenceScenario(llama3_8b, method="quick").resolved_method == "quick"


def test_quick_method_on_an_architecture_uses_its_exact_counts(llama3_8b):
    row = est.inference_table(est.InferenceScenario(llama3_8b, method="quick"))[0]
    assert row.component("weights") == 2 * 8_030_261_248
