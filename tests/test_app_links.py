"""Share links through the app: the URL follows the inputs, reproduces them in a fresh session, and a
tampered or stale link warns instead of failing."""

import json
from urllib.parse import parse_qsl, urlsplit

from app_helpers import LLAMA3_8B, assert_clean, gb, segmented, start, table, totals

import estimator as est
from ui import links


def test_the_url_follows_every_edit():
    at = start()
    at.number_input(key="inference.seq_len").set_value(8192).run()
    assert at.query_params == {"v": "1", "p": "inference", "seq": "8192"}
    segmented(at, "inference.src").set_value("catalog").run()
    at.selectbox(key="inference.model").set_value("Qwen/Qwen3-8B").run()
    at.selectbox(key="inference.kv_dtype").set_value("fp8").run()
    assert at.query_params == {"v": "1", "p": "inference", "model": "Qwen/Qwen3-8B", "seq": "8192", "kv": "fp8"}


def test_a_link_opened_in_a_fresh_session_reproduces_inputs_and_numbers():
    first = start()
    segmented(first, "inference.src").set_value("catalog").run()
    first.selectbox(key="inference.model").set_value("mistralai/Mixtral-8x7B-v0.1")
    first.number_input(key="inference.concurrency").set_value(8)
    first.number_input(key="inference.seq_len").set_value(16384)
    first.selectbox(key="inference.weights").set_value("q4_k_m")
    first.selectbox(key="inference.kv_dtype").set_value("q8_0")
    first.number_input(key="inference.tensor_parallel").set_value(2)
    first.selectbox(key="inference.row").set_value("4-bit")
    segmented(first, "inference.unit").set_value("GiB").run()
    assert_clean(first)

    second = start(dict(first.query_params))
    for key in ("model", "concurrency", "seq_len", "weights", "kv_dtype", "tensor_parallel", "row"):
        widget = second.selectbox(key=f"inference.{key}") if key in ("model", "weights", "kv_dtype", "row") else \
            second.number_input(key=f"inference.{key}")
        assert widget.value == first.session_state[f"inference.{key}"], key
    assert segmented(second, "inference.unit").value == "GiB"
    assert table(second).equals(table(first))
    assert second.query_params == first.query_params


def test_a_finetune_link_opens_its_page_with_its_inputs():
    query = {"v": "1", "p": "finetune", "model": "Qwen/Qwen3-8B", "opt": "adamw-8bit", "gpus": "4", "zero": "2",
             "gc": "1", "row": "lora", "gpu": "a100-80gb-sxm"}
    at = start(query)
    assert at.title[0].value == "Fine-tuning memory"
    assert at.selectbox(key="finetune.optimizer").value == "adamw-8bit"
    assert at.radio(key="finetune.gradient_checkpointing").value is True
    s = est.FinetuneScenario(est.model("Qwen/Qwen3-8B").architecture, optimizer="adamw-8bit", num_gpus=4, zero_stage=2,
                             gradient_checkpointing=True)
    assert totals(at) == gb(est.finetune_table(s))
    assert at.selectbox(key="finetune.technique").value == "lora"
    assert at.query_params == query


def test_a_config_link_reproduces_the_pasted_config():
    text = json.dumps(LLAMA3_8B)
    at = start({"cfg": links.pack_config(text), "seq": "4096"})
    assert segmented(at, "inference.src").value == "config"
    assert at.text_area(key="inference.cfg").value == text
    s = est.InferenceScenario(est.architecture_from_config(LLAMA3_8B), seq_len=4096)
    assert totals(at) == gb(est.inference_table(s))


def test_a_tampered_link_warns_names_the_bad_fields_and_uses_their_defaults():
    at = start({"v": "1", "p": "inference", "seq": "lots", "conc": "-3", "params": "13", "kv": "fp3",
                "model": "acme/none", "zzz": "1", "gpu": "nope"})
    assert not at.exception and not at.error
    [warning] = at.warning
    for name in ("seq='lots'", "conc='-3'", "kv='fp3'", "model='acme/none'", "zzz", "gpu='nope'"):
        assert name in warning.value.replace("\\", ""), name
    assert at.number_input(key="inference.seq_len").value == 2048
    assert at.number_input(key="inference.params").value == 13
    assert totals(at) == gb(est.inference_table(est.InferenceScenario(est.ParamCount.from_billions(13))))
    assert at.query_params == {"v": "1", "p": "inference", "params": "13"}  # the link is repaired


def test_the_warning_shows_once():
    at = start({"seq": "lots"})
    assert len(at.warning) == 1
    at.number_input(key="inference.concurrency").set_value(2).run()
    assert len(at.warning) == 0


def test_a_malformed_config_or_page_in_a_link_warns():
    at = start({"p": "admin", "cfg": "%%%", "c1.p": "inference", "c1.seq": "x"})
    assert not at.exception and at.title[0].value == "Inference memory"
    text = at.warning[0].value.replace("\\", "")
    assert "p='admin'" in text and "cfg=" in text and "c1.seq='x'" in text


def test_the_share_control_shows_the_link():
    at = start({"params": "70", "seq": "8192"})
    [code] = at.code
    query = dict(parse_qsl(urlsplit(code.value).query))
    assert query == {"v": "1", "p": "inference", "params": "70", "seq": "8192"}


def test_inputs_survive_moving_between_pages():
    at = start()
    at.number_input(key="inference.seq_len").set_value(4096).run()
    at.switch_page("views/finetune.py").run()
    at.number_input(key="finetune.batch_size").set_value(8).run()
    segmented(at, "finetune.unit").set_value("GiB").run()
    at.switch_page("views/inference.py").run()
    assert_clean(at)
    assert at.number_input(key="inference.seq_len").value == 4096
    assert segmented(at, "inference.unit").value == "GiB"
    assert at.query_params == {"v": "1", "p": "inference", "seq": "4096", "unit": "GiB"}
    at.switch_page("views/finetune.py").run()
    assert at.number_input(key="finetune.batch_size").value == 8


def test_a_pasted_config_survives_a_visit_to_another_page():
    text = '{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22, ' \
           '"num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000}'
    at = start()
    segmented(at, "inference.src").set_value("config").run()
    at.text_area(key="inference.cfg").input(text).run()
    at.switch_page("views/compare.py").run()
    at.switch_page("views/inference.py").run()
    assert_clean(at)
    assert at.text_area(key="inference.cfg").value == text
    assert totals(at) == gb(est.inference_table(est.InferenceScenario(est.architecture_from_config(json.loads(text)))))
