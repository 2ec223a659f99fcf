"""The share-link codec: round trips, short default links, and tolerance of tampered or stale links."""

import base64
import json
import zlib
from pathlib import Path

import pytest
from app_helpers import LLAMA3_8B
from hypothesis import given, settings
from hypothesis import strategies as st

import estimator as est
from estimator.formats import WEIGHT_FORMATS
from estimator.kv_cache import KV_DTYPE_BYTES
from estimator.training import OPTIMIZERS, REGIMES, TECHNIQUES
from ui import links, tables


# The page state is keyed by input name, the link by each input's short key
NAME = {page: {spec.link: name for name, spec in links.fields(page).items()} for page in links.ESTIMATE_PAGES}


def decode(query, landing="inference"):
    return links.decode(query, landing)


def test_default_inputs_give_the_shortest_link():
    assert links.encode("inference", links.defaults("inference"), links.view_defaults()) == {"v": "1",
                                                                                              "p": "inference"}


def test_default_link_is_the_reference_documents_7b_scenario():
    s = links.scenario_of("inference", links.defaults("inference"))
    assert s == est.InferenceScenario(est.ParamCount.from_billions(7), method="quick")  # as before the redesign
    assert [round(b.total / est.GB, 1) for b in est.inference_table(s)] == [18.8, 11.8, 8.3]


def test_a_link_reads_page_inputs_view_and_comparison():
    link = decode({"v": "1", "p": "finetune", "params": "13", "opt": "sgd", "seq": "4096", "unit": "GiB",
                   "gpu": "h100-sxm", "c1.p": "inference", "c1.model": "meta-llama/Llama-3.1-8B", "c1.seq": "8192",
                   "c1.name": "8B long"})
    assert link.warnings == []
    assert link.page == "finetune"
    assert (link.state["params"], link.state["optimizer"], link.state["seq_len"]) == (13.0, "sgd", 4096)
    assert link.view == {"unit": "GiB", "gpu": "h100-sxm"}
    [item] = link.compare
    assert (item.page, item.name, item.state["src"], item.state["seq_len"]) == ("inference", "8B long", "catalog", 8192)


def test_links_are_readable_and_only_name_what_differs():
    state = {**links.defaults("inference"), "src": "catalog", "model": "Qwen/Qwen3-8B", "seq_len": 32768,
             "kv_dtype": "fp8"}
    assert links.encode("inference", state, {"unit": "GB", "gpu": "h200"}) == {
        "v": "1", "p": "inference", "model": "Qwen/Qwen3-8B", "seq": "32768", "kv": "fp8", "gpu": "h200"}


def test_the_landing_page_is_used_when_the_link_names_none():
    assert decode({"seq": "4096"}, landing="finetune").page == "finetune"


@pytest.mark.parametrize("key, value, default", [
    ("seq", "abc", 2048), ("seq", "0", 2048), ("seq", "1e9", 2048), ("conc", "2.5", 1), ("params", "-5", 7.0),
    ("params", "nan", 7.0), ("params", "inf", 7.0), ("fa", "maybe", True), ("kv", "fp7", "bf16"),
    ("w", "gguf", None), ("act", "8", 16), ("oh", "1e6", 2.0), ("row", "2-bit", "16-bit"),
])
def test_a_bad_value_falls_back_to_its_default_with_a_warning_naming_it(key, value, default):
    link = decode({"p": "inference", key: value})
    name = NAME["inference"][key]
    assert link.state[name] == default
    [warning] = link.warnings
    instead = links.fallback_text(name, links.fields("inference")[name])
    assert f"{key}={value!r}" in warning and f"Using {instead} instead" in warning


def test_an_unknown_catalog_model_or_gpu_falls_back():
    link = decode({"model": "acme/SuperLM-1T", "gpu": "quantum-9000"})
    assert link.state["src"] == "params" and link.view["gpu"] == links.VIEW_FIELDS["gpu"].default
    assert len(link.warnings) == 2
    assert "acme/SuperLM-1T is not in the catalog nor in the local Hub cache" in link.warnings[0] + link.warnings[1]


def test_unknown_keys_and_versions_and_pages_are_named_in_warnings():
    link = decode({"v": "9", "p": "settings", "zzz": "1", "utm_source": "x"})
    text = " ".join(link.warnings)
    assert "v='9'" in text and "p='settings'" in text and "zzz" in text and "utm_source" in text
    assert link.page == "inference" and link.state == links.defaults("inference")


def test_inputs_the_estimator_rejects_together_drop_the_later_field():
    link = decode({"moe": "1", "params": "7", "active": "13"})  # active > total
    assert (link.state["params"], link.state["active"]) == (7.0, None)
    [warning] = link.warnings
    assert "active" in warning and "cannot exceed" in warning


def test_a_lora_rank_wider_than_the_model_is_refused_whatever_the_selected_row():
    link = decode({"p": "finetune", "model": "meta-llama/Llama-3.2-1B", "rank": "60000", "row": "full"})
    assert link.state["lora_rank"] == 16 and link.state["src"] == "catalog"
    assert "lora_rank" in link.warnings[0]


def test_repeated_keys_take_the_last_value():
    assert decode({"seq": ["1024", "4096"]}).state["seq_len"] == 4096


def test_a_pasted_config_travels_compressed_and_comes_back_verbatim():
    text = json.dumps(LLAMA3_8B, indent=2)
    state = {**links.defaults("inference"), "src": "config", "cfg": text}
    params = links.encode("inference", state, links.view_defaults())
    assert len(params["cfg"]) < len(text) and set(params["cfg"]) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    link = decode(params)
    assert link.warnings == [] and link.state["src"] == "config" and link.state["cfg"] == text
    assert links.model_of(link.state) == est.architecture_from_config(LLAMA3_8B)


@pytest.mark.parametrize("token, message", [
    ("!!!not-base64!!!", "not encoded correctly"),
    (base64.urlsafe_b64encode(b"plain bytes").decode(), "not encoded correctly"),
    (links.pack_config('{"model_type": "foo"}'), "missing hidden_size; model_type 'foo' has no reader of its own"),
    (links.pack_config('{"model_type": "llama", "hidden_size": 64}'), "missing"),
    (links.pack_config("x" * (links.MAX_LINK_CONFIG_CHARS + 1)), "longer than"),
])
def test_a_broken_config_in_a_link_falls_back_to_the_parameter_count(token, message):
    link = decode({"cfg": token})
    assert link.state["src"] == "params" and link.state["cfg"] == ""
    assert message in link.warnings[0]


def test_a_compression_bomb_is_refused_without_inflating_it():
    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * 50_000_000, 9)).decode().rstrip("=")
    with pytest.raises(ValueError, match="longer than"):
        links.unpack_config(bomb)


def test_comparison_items_round_trip_with_their_names_and_rows():
    items = [links.Item("inference", {**links.defaults("inference"), "seq_len": 8192, "row": "4-bit"}, "long 4-bit"),
             links.Item("finetune", {**links.defaults("finetune"), "technique": "qlora-4bit"})]
    params = links.encode("compare", None, links.view_defaults(), items)
    assert params["c1.name"] == "long 4-bit" and "c2.name" not in params
    link = decode(params, landing="inference")
    assert link.page == "compare" and link.state is None and link.warnings == []
    assert [(i.page, i.name, i.state) for i in link.compare] == [(i.page, i.name, i.state) for i in items]


def test_a_comparison_item_with_a_bad_page_is_dropped_and_extra_items_are_unknown():
    link = decode({"p": "compare", "c1.p": "training", "c1.seq": "9", "c7.p": "inference"})
    assert link.compare == []
    assert any("Comparison 1" in w for w in link.warnings) and any("c7.p" in w for w in link.warnings)


def test_scenario_names_are_cleaned_and_bounded():
    assert links.clean_scenario_name("  a\x00b\nc " + "x" * 100) == ("abc " + "x" * 100)[:links.MAX_SCENARIO_NAME_CHARS]


def test_the_finetune_state_builds_the_scenario_the_page_shows():
    state = {**links.defaults("finetune"), "src": "catalog", "model": "meta-llama/Llama-3.1-8B", "num_gpus": 4,
             "zero_stage": 3, "offload_optimizer": True, "lora_targets": "all-linear", "technique": "lora",
             "method": "detailed"}
    s = links.scenario_of("finetune", state)
    assert (s.num_gpus, s.zero_stage, s.offload_optimizer, s.technique, s.resolved_method) == (4, 3, True, "lora",
                                                                                                "detailed")
    assert s.model == est.model("meta-llama/Llama-3.1-8B").architecture


def test_the_quick_method_can_be_chosen_for_a_catalog_model():
    state = {**links.defaults("inference"), "src": "catalog", "method": "quick"}
    assert links.scenario_of("inference", state).resolved_method == "quick"


def test_model_names():
    assert links.model_name(links.defaults("inference")) == "7B"
    assert links.model_name({**links.defaults("inference"), "moe": True, "params": 47.0, "active": 13.0}) == \
        "47B MoE (13B active)"
    assert links.model_name({**links.defaults("inference"), "src": "catalog"}) == "Llama 3.1 8B"


# Any valid page state survives encode -> decode unchanged (the fields its model source uses).
finite = dict(allow_nan=False, allow_infinity=False)
common = dict(
    params=st.floats(1, 2000, **finite), seq_len=st.integers(1, 1_000_000), batch_size=st.integers(1, 64),
    flash_attention=st.booleans(), overhead_gb=st.floats(0, 100, **finite), activation_bits=st.sampled_from((16, 32)),
)
inference_states = st.fixed_dictionaries({
    **common, "concurrency": st.integers(1, 4096), "weights": st.sampled_from((None, *WEIGHT_FORMATS)),
    "kv_dtype": st.sampled_from(tuple(KV_DTYPE_BYTES)), "tensor_parallel": st.integers(1, 512),
    "row": st.sampled_from(links.INFERENCE_ROWS),
})
finetune_states = st.fixed_dictionaries({
    **common, "param_bits": st.sampled_from((32, 16, 8, 4)), "optimizer": st.sampled_from(tuple(OPTIMIZERS)),
    "regime": st.sampled_from(tuple(REGIMES)), "optimizer_state_bits": st.sampled_from((32, 16)),
    "lora_rank": st.integers(1, 64),
    "lora_targets": st.sampled_from(("q,v", "q,k,v,o", "q,k,v,o,gate,up,down", "down")),
    "gradient_checkpointing": st.booleans(), "num_gpus": st.integers(1, 64), "zero_stage": st.integers(0, 3),
    "offload_optimizer": st.booleans(), "technique": st.sampled_from(TECHNIQUES),
})


@settings(max_examples=60, deadline=None)
@given(inference_states, st.sampled_from(("GB", "GiB")))
def test_any_inference_state_round_trips(values, unit):
    state = {**links.defaults("inference"), **values}
    link = decode(links.encode("inference", state, {"unit": unit, "gpu": "h200"}))
    assert link.warnings == [] and link.state == state and link.view == {"unit": unit, "gpu": "h200"}


@settings(max_examples=60, deadline=None)
@given(finetune_states)
def test_any_finetune_state_round_trips_including_as_a_comparison_item(values):
    state = {**links.defaults("finetune"), **values}
    link = decode(links.encode("finetune", state, links.view_defaults(), [links.Item("finetune", state, "x")]))
    assert link.warnings == [] and link.state == state and link.compare[0].state == state


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=12), st.text(max_size=30), max_size=8))
def test_decoding_never_raises(query):
    link = decode(query)
    assert link.page in links.PAGES


SAVED = json.loads((Path(__file__).parent / "data" / "links_v1.json").read_text())["links"]


def _totals(page, state):
    s = links.scenario_of(page, state)
    return [row.fn(s).total for row in tables.table_rows(page, s, state.get("weights"))]


@pytest.mark.parametrize("saved", SAVED, ids=range(len(SAVED)))
def test_links_saved_before_the_input_declarations_open_unchanged(saved):
    """40 links encoded by the app before inputs were declared on the scenarios (tests/data/links_v1.json, made
    with random page states at commit 0e390a8), with the byte totals of every table row they open to (regenerated
    when a formula changes on purpose; the file says when)."""
    query = saved["query"]
    link = decode(query)
    assert link.warnings == []
    assert _totals(query["p"], link.state) == saved["totals"]
    assert [_totals(item.page, item.state) for item in link.compare] == saved["compare_totals"]
    assert links.encode(link.page, link.state, link.view, link.compare) == query  # the same link again
