"""The share-link codec: round trips, short default links, and tolerance of tampered or stale links."""

import base64
import json
import zlib

import pytest
from app_helpers import LLAMA3_8B
from hypothesis import given, settings
from hypothesis import strategies as st

import estimator as est
from estimator import share
from estimator.formats import WEIGHT_FORMATS
from estimator.kv_cache import KV_DTYPE_BYTES
from estimator.training import OPTIMIZERS, REGIMES, TECHNIQUES


def decode(query, landing="inference"):
    return share.decode(query, landing)


def test_default_inputs_give_the_shortest_link():
    assert share.encode("inference", share.defaults("inference"), share.view_defaults()) == {"v": "1",
                                                                                              "p": "inference"}


def test_default_link_is_the_reference_documents_7b_scenario():
    s = share.scenario("inference", share.defaults("inference"))
    assert s == est.InferenceScenario(est.ParamCount.from_billions(7), method="quick")
    assert [round(b.total / est.GB, 1) for b in est.inference_table(s)] == [18.8, 11.8, 8.3]


def test_a_link_reads_page_inputs_view_and_comparison():
    link = decode({"v": "1", "p": "finetune", "params": "13", "opt": "sgd", "seq": "4096", "unit": "GiB",
                   "gpu": "h100-sxm", "c1.p": "inference", "c1.model": "meta-llama/Llama-3.1-8B", "c1.seq": "8192",
                   "c1.name": "8B long"})
    assert link.warnings == []
    assert link.page == "finetune"
    assert (link.state["params"], link.state["opt"], link.state["seq"]) == (13.0, "sgd", 4096)
    assert link.view == {"unit": "GiB", "gpu": "h100-sxm"}
    [item] = link.compare
    assert (item.page, item.name, item.state["src"], item.state["seq"]) == ("inference", "8B long", "catalog", 8192)


def test_links_are_readable_and_only_name_what_differs():
    state = {**share.defaults("inference"), "src": "catalog", "model": "Qwen/Qwen3-8B", "seq": 32768, "kv": "fp8"}
    assert share.encode("inference", state, {"unit": "GB", "gpu": "h200"}) == {
        "v": "1", "p": "inference", "model": "Qwen/Qwen3-8B", "seq": "32768", "kv": "fp8", "gpu": "h200"}


def test_the_landing_page_is_used_when_the_link_names_none():
    assert decode({"seq": "4096"}, landing="finetune").page == "finetune"


@pytest.mark.parametrize("key, value, default", [
    ("seq", "abc", 2048), ("seq", "0", 2048), ("seq", "1e9", 2048), ("conc", "2.5", 1), ("params", "-5", 7.0),
    ("params", "nan", 7.0), ("params", "inf", 7.0), ("fa", "maybe", True), ("kv", "fp7", "bf16"),
    ("w", "gguf", ""), ("act", "8", 16), ("oh", "1e6", 2.0), ("row", "2-bit", "16-bit"),
])
def test_a_bad_value_falls_back_to_its_default_with_a_warning_naming_it(key, value, default):
    link = decode({"p": "inference", key: value})
    assert link.state[key] == default
    [warning] = link.warnings
    assert f"{key}={value!r}" in warning and f"Using {share.fields('inference')[key].default_text} instead" in warning


def test_an_unknown_catalog_model_or_gpu_falls_back():
    link = decode({"model": "acme/SuperLM-1T", "gpu": "quantum-9000"})
    assert link.state["src"] == "params" and link.view["gpu"] == share.DEFAULT_GPU
    assert len(link.warnings) == 2
    assert "unknown catalog model 'acme/SuperLM-1T'" in link.warnings[0] + link.warnings[1]


def test_unknown_keys_and_versions_and_pages_are_named_in_warnings():
    link = decode({"v": "9", "p": "settings", "zzz": "1", "utm_source": "x"})
    text = " ".join(link.warnings)
    assert "v='9'" in text and "p='settings'" in text and "zzz" in text and "utm_source" in text
    assert link.page == "inference" and link.state == share.defaults("inference")


def test_inputs_the_estimator_rejects_together_drop_the_later_field():
    link = decode({"moe": "1", "params": "7", "active": "13"})  # active > total
    assert (link.state["params"], link.state["active"]) == (7.0, None)
    [warning] = link.warnings
    assert "active" in warning and "cannot exceed" in warning


def test_a_lora_rank_wider_than_the_model_is_refused_whatever_the_selected_row():
    link = decode({"p": "finetune", "model": "meta-llama/Llama-3.2-1B", "rank": "60000", "row": "full"})
    assert link.state["rank"] == 16 and link.state["src"] == "catalog"
    assert "lora_rank" in link.warnings[0]


def test_repeated_keys_take_the_last_value():
    assert decode({"seq": ["1024", "4096"]}).state["seq"] == 4096


def test_a_pasted_config_travels_compressed_and_comes_back_verbatim():
    text = json.dumps(LLAMA3_8B, indent=2)
    state = {**share.defaults("inference"), "src": "config", "cfg": text}
    params = share.encode("inference", state, share.view_defaults())
    assert len(params["cfg"]) < len(text) and set(params["cfg"]) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    link = decode(params)
    assert link.warnings == [] and link.state["src"] == "config" and link.state["cfg"] == text
    assert share.model_of(link.state) == est.architecture_from_config(LLAMA3_8B)


@pytest.mark.parametrize("token, message", [
    ("!!!not-base64!!!", "not encoded correctly"),
    (base64.urlsafe_b64encode(b"plain bytes").decode(), "not encoded correctly"),
    (share.pack_config('{"model_type": "foo"}'), "unsupported model_type 'foo'"),
    (share.pack_config('{"model_type": "llama", "hidden_size": 64}'), "missing"),
    (share.pack_config("x" * (share.MAX_CONFIG_CHARS + 1)), "longer than"),
])
def test_a_broken_config_in_a_link_falls_back_to_the_parameter_count(token, message):
    link = decode({"cfg": token})
    assert link.state["src"] == "params" and link.state["cfg"] == ""
    assert message in link.warnings[0]


def test_a_compression_bomb_is_refused_without_inflating_it():
    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * 50_000_000, 9)).decode().rstrip("=")
    with pytest.raises(ValueError, match="longer than"):
        share.unpack_config(bomb)


def test_comparison_items_round_trip_with_their_names_and_rows():
    items = [share.Item("inference", {**share.defaults("inference"), "seq": 8192, "row": "4-bit"}, "long 4-bit"),
             share.Item("finetune", {**share.defaults("finetune"), "row": "qlora-4bit"})]
    params = share.encode("compare", None, share.view_defaults(), items)
    assert params["c1.name"] == "long 4-bit" and "c2.name" not in params
    link = decode(params, landing="inference")
    assert link.page == "compare" and link.state is None and link.warnings == []
    assert [(i.page, i.name, i.state) for i in link.compare] == [(i.page, i.name, i.state) for i in items]


def test_a_comparison_item_with_a_bad_page_is_dropped_and_extra_items_are_unknown():
    link = decode({"p": "compare", "c1.p": "training", "c1.seq": "9", "c7.p": "inference"})
    assert link.compare == []
    assert any("Comparison 1" in w for w in link.warnings) and any("c7.p" in w for w in link.warnings)


def test_scenario_names_are_cleaned_and_bounded():
    assert share.clean_name("  a\x00b\nc " + "x" * 100) == ("abc " + "x" * 100)[:share.MAX_NAME_CHARS]


def test_the_finetune_state_builds_the_scenario_the_page_shows():
    state = {**share.defaults("finetune"), "src": "catalog", "model": "meta-llama/Llama-3.1-8B", "gpus": 4,
             "zero": 3, "offload": True, "targets": "all-linear", "row": "lora", "method": "detailed"}
    s = share.scenario("finetune", state)
    assert (s.num_gpus, s.zero_stage, s.offload_optimizer, s.technique, s.resolved_method) == (4, 3, True, "lora",
                                                                                                "detailed")
    assert s.model == est.model("meta-llama/Llama-3.1-8B").architecture


def test_the_quick_method_can_be_chosen_for_a_catalog_model():
    state = {**share.defaults("inference"), "src": "catalog", "method": "quick"}
    assert share.scenario("inference", state).resolved_method == "quick"


def test_model_names():
    assert share.model_name(share.defaults("inference")) == "7B"
    assert share.model_name({**share.defaults("inference"), "moe": True, "params": 47.0, "active": 13.0}) == \
        "47B MoE (13B active)"
    assert share.model_name({**share.defaults("inference"), "src": "catalog"}) == "Llama 3.1 8B"


# Any valid page state survives encode -> decode unchanged (the fields its model source uses).
finite = dict(allow_nan=False, allow_infinity=False)
common = dict(
    params=st.floats(1, 2000, **finite), seq=st.integers(1, 1_000_000), batch=st.integers(1, 64),
    fa=st.booleans(), oh=st.floats(0, 100, **finite), act=st.sampled_from((16, 32)),
)
inference_states = st.fixed_dictionaries({
    **common, "conc": st.integers(1, 4096), "w": st.sampled_from(("", *WEIGHT_FORMATS)),
    "kv": st.sampled_from(tuple(KV_DTYPE_BYTES)), "tp": st.integers(1, 512),
    "row": st.sampled_from(share.INFERENCE_ROWS),
})
finetune_states = st.fixed_dictionaries({
    **common, "bits": st.sampled_from((32, 16, 8, 4)), "opt": st.sampled_from(tuple(OPTIMIZERS)),
    "regime": st.sampled_from(tuple(REGIMES)), "osb": st.sampled_from((32, 16)), "rank": st.integers(1, 64),
    "targets": st.sampled_from(("q,v", "q,k,v,o", "q,k,v,o,gate,up,down", "down")), "gc": st.booleans(),
    "gpus": st.integers(1, 64), "zero": st.integers(0, 3), "offload": st.booleans(), "row": st.sampled_from(TECHNIQUES),
})


@settings(max_examples=60, deadline=None)
@given(inference_states, st.sampled_from(("GB", "GiB")))
def test_any_inference_state_round_trips(values, unit):
    state = {**share.defaults("inference"), **values}
    link = decode(share.encode("inference", state, {"unit": unit, "gpu": "h200"}))
    assert link.warnings == [] and link.state == state and link.view == {"unit": unit, "gpu": "h200"}


@settings(max_examples=60, deadline=None)
@given(finetune_states)
def test_any_finetune_state_round_trips_including_as_a_comparison_item(values):
    state = {**share.defaults("finetune"), **values}
    link = decode(share.encode("finetune", state, share.view_defaults(), [share.Item("finetune", state, "x")]))
    assert link.warnings == [] and link.state == state and link.compare[0].state == state


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=12), st.text(max_size=30), max_size=8))
def test_decoding_never_raises(query):
    link = decode(query)
    assert link.page in share.PAGES
