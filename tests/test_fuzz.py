"""Fuzzing: whatever JSON or values a stranger sends, only ValueError (with a message) may come out."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimator as est
from estimator.hf_config import parse_config_text

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REAL_CONFIGS = [json.loads(json.dumps(m)) for m in
                json.loads((est.catalog.resources.files("estimator").joinpath("data", "models.json")).read_text())
                ["models"]]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=20)


def _only_value_error(config):
    try:
        a = est.architecture_from_config(config)
    except ValueError as err:
        assert str(err)
        return
    rows = est.inference_table(est.InferenceScenario(a)) + est.finetune_table(est.FinetuneScenario(a))
    assert all(r.total >= 0 for r in rows)


@SETTINGS
@given(st.dictionaries(st.text(max_size=30), json_values, max_size=10))
def test_arbitrary_json_objects_raise_only_value_error(config):
    _only_value_error(config)


OPTIONAL_FIELDS = ["mlp_only_layers", "layer_types", "text_config", "sliding_window", "use_sliding_window",
                   "max_window_layers", "decoder_sparse_step", "first_k_dense_replace", "moe_layer_freq",
                   "q_lora_rank", "head_dim", "num_key_value_heads", "tie_word_embeddings", "sliding_window_pattern",
                   "shared_expert_intermediate_size", "n_shared_experts", "new_decoder_architecture", "n_inner"]


@SETTINGS
@given(st.sampled_from(REAL_CONFIGS), st.data())
def test_real_configs_with_one_field_replaced_raise_only_value_error(entry, data):
    config = dict(entry["config"])
    key = data.draw(st.sampled_from(sorted(set(config) | set(OPTIONAL_FIELDS))))
    config[key] = data.draw(json_values)
    _only_value_error(config)


@SETTINGS
@given(st.sampled_from(REAL_CONFIGS), st.data())
def test_real_configs_with_fields_removed_raise_only_value_error(entry, data):
    config = dict(entry["config"])
    for key in data.draw(st.lists(st.sampled_from(sorted(config)), max_size=4)):
        config.pop(key, None)
    _only_value_error(config)


@SETTINGS
@given(st.text(max_size=200) | st.binary(max_size=200))
def test_arbitrary_text_raises_only_value_error(text):
    try:
        parse_config_text(text)
    except ValueError as err:
        assert str(err)
