"""The Inference page's serving engine, through Streamlit's AppTest: choosing an engine, pasting its command,
the start-up report it shows, a refusal, and the share link that carries the engine's options."""

from app_helpers import assert_clean, errors, start, texts

import estimator as est
from estimator.engines import MODULES, REFUSAL, ServeScenario, launch_command, serve
from ui import engine, links

QWEN = "Qwen/Qwen3-8B"
PASTED = f"vllm serve {QWEN} --tensor-parallel-size 2 --max-model-len 32768 --foo bar"


def paste(at, text: str):
    at.text_area(key="inference.command").input(text)
    at.button(key="inference.read_command").click().run()
    return at


def engine_widgets(at) -> set[str]:
    """The page-state names of the engine options drawn on the page."""
    drawn = [*at.number_input, *at.selectbox, *at.toggle, *at.text_input]
    return {w.key[len("inference."):] for w in drawn if w.key and w.key.startswith("inference.e.")}


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_no_engine_is_the_page_as_before():
    at = start()
    assert at.selectbox(key="inference.engine").value is None
    assert at.selectbox(key="inference.engine").options[1:] == [links.ENGINE_LABELS.get(e, e) for e in MODULES]
    assert not engine_widgets(at) and not at.text_area
    assert at.query_params == {"v": "1", "p": "inference"}


def test_a_pasted_vllm_command_sets_the_engine_options_and_model_and_the_page_shows_vllms_numbers():
    at = start()
    at.selectbox(key="inference.engine").set_value("vllm").run()
    assert_clean(at)
    assert at.info  # a parameter count has no architecture: the page says what to do, no error
    paste(at, PASTED)
    assert_clean(at)
    assert at.selectbox(key="inference.model").value == QWEN
    assert at.number_input(key="inference.e.tensor_parallel").value == 2
    assert at.number_input(key="inference.e.max_model_len").value == 32768
    note = texts(at) + "\n".join(i.value for i in at.info)
    assert "--foo bar" in note.replace("\\", "")  # the ignored option is named

    s = ServeScenario(est.model(QWEN).architecture, engine="vllm", gpu=links.VIEW_FIELDS["gpu"].default,
                      tensor_parallel=2, max_model_len=32768, model_id=QWEN)
    expected = serve(s)
    assert expected.starts
    assert metric(at, "KV-cache tokens") == f"{expected.kv_cache_tokens:,}"
    assert metric(at, "Max concurrency") == f"{expected.max_concurrency:,.2f}x"
    commands = [c.value for c in at.code]
    assert launch_command(s) in commands
    assert launch_command(s) == f"vllm serve {QWEN} --tensor-parallel-size 2 --max-model-len 32768"
    assert "\n".join(expected.log) in commands
    assert [c.key for c in at.get("plotly_chart")] == ["inference.engine_bar"]


def test_text_that_is_not_an_engine_command_is_an_error_naming_it_and_keeps_the_text():
    at = start({"model": QWEN, "engine": "vllm"})
    paste(at, "rm -rf / --tensor-parallel-size 2")
    assert "no engine command found" in errors(at)[0]
    assert not at.exception and at.text_area(key="inference.command").value == "rm -rf / --tensor-parallel-size 2"
    assert at.number_input(key="inference.e.tensor_parallel").value == 1


def test_a_70b_model_on_one_24gb_gpu_shows_the_engines_refusal():
    at = start({"model": "meta-llama/Llama-3.3-70B-Instruct", "engine": "vllm", "gpu": "rtx-4090"})
    assert not at.exception
    s = ServeScenario(est.model("meta-llama/Llama-3.3-70B-Instruct").architecture, engine="vllm", gpu="rtx-4090")
    [refusal] = [w for w in serve(s).warnings if w.startswith(REFUSAL)]
    assert "refuses to start" in texts(at)
    assert refusal[len(REFUSAL):] in [c.value for c in at.code]  # in the engine's words


def test_an_invalid_combination_names_the_field_and_keeps_the_value():
    at = start({"model": QWEN, "engine": "vllm"})
    at.number_input(key="inference.e.pipeline_parallel").set_value(100).run()
    assert "Pipeline parallel: pipeline_parallel must be between 1 and 36" in errors(at)[0]
    assert not at.exception and at.number_input(key="inference.e.pipeline_parallel").value == 100


def test_the_share_link_carries_the_engine_and_its_options():
    first = start()
    first.selectbox(key="inference.engine").set_value("vllm").run()
    paste(first, PASTED)
    first.number_input(key="inference.e.gpu_memory_utilization").set_value(0.8).run()
    assert_clean(first)
    query = dict(first.query_params)
    assert query == {"v": "1", "p": "inference", "model": QWEN, "engine": "vllm", "e.tp": "2", "e.mml": "32768",
                     "e.util": "0.8"}
    second = start(query)
    for name in ("e.tensor_parallel", "e.max_model_len", "e.gpu_memory_utilization"):
        assert second.number_input(key=f"inference.{name}").value == first.session_state[f"inference.{name}"]
    assert metric(second, "KV-cache tokens") == metric(first, "KV-cache tokens")
    assert second.query_params == first.query_params


def test_each_engine_shows_only_its_options_and_starts_its_report():
    at = start({"model": QWEN, "engine": "vllm"})
    for name in MODULES:
        at.selectbox(key="inference.engine").set_value(name).run()
        assert_clean(at)
        assert engine_widgets(at) == set(engine.options(name)), name
        assert any(m.label == "KV-cache tokens" for m in at.metric), name


def test_the_bar_stacks_the_components_and_the_unused_headroom_up_to_the_budget():
    from ui import charts

    s = ServeScenario(est.model(QWEN).architecture, engine="transformers", gpu="h100-sxm", max_model_len=4096)
    r = serve(s)
    fig = charts.engine_bar(r, "GB")
    names = [t.name for t in fig.data]
    assert names[-1] == "Unused" and names[0] == "Weights"
    assert abs(sum(t.x[0] for t in fig.data) - max(r.total, r.budget_bytes) / 1e9) < 1e-6
    assert sorted(shape.x0 for shape in fig.layout.shapes) == sorted([r.budget_bytes / 1e9, r.gpu_bytes / 1e9])


def test_a_yarn_command_starts_on_the_page_and_its_link_carries_the_override():
    """Qwen's documented YaRN launch (131,072 tokens over Qwen3-0.6B's 40,960 positions) starts in vLLM's terms: the
    pasted --hf-overrides fills the RoPE-scaling option, the KV numbers are serve()'s and the link reproduces them."""
    yarn = '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}'
    small = "Qwen/Qwen3-0.6B"
    at = start()
    at.selectbox(key="inference.engine").set_value("vllm").run()
    paste(at, f"vllm serve {small} --max-model-len 131072 --hf-overrides '{yarn}'")
    assert_clean(at)
    rope = at.text_input(key="inference.e.rope_scaling").value
    assert rope == '{"factor":4.0,"original_max_position_embeddings":32768,"rope_type":"yarn"}'
    s = ServeScenario(est.model(small).architecture, engine="vllm", gpu=links.VIEW_FIELDS["gpu"].default,
                      max_model_len=131072, rope_scaling=rope, model_id=small)
    assert serve(s).starts and not any(REFUSAL in e.value for e in at.error)
    assert metric(at, "KV-cache tokens") == f"{serve(s).kv_cache_tokens:,}"
    assert at.query_params["e.rope"] == rope
    again = start(dict(at.query_params))
    assert again.text_input(key="inference.e.rope_scaling").value == rope
    assert metric(again, "KV-cache tokens") == metric(at, "KV-cache tokens")
    at.text_input(key="inference.e.rope_scaling").input("").run()  # without it, vLLM refuses 131,072 tokens
    assert any("derived max_model_len (max_position_embeddings=40960" in c.value for c in at.code)


def test_the_options_most_start_ups_leave_alone_open_when_a_command_sets_them():
    """The engine form keeps the rarely set options (ui.engine.ADVANCED) in "More ... options", closed on a fresh
    page and open, naming how many are set, once a pasted command sets any."""
    at = start({"model": QWEN, "engine": "vllm"})
    [more] = [e for e in at.expander if e.label.startswith("More vLLM options")]
    assert more.label == "More vLLM options" and not more.proto.expanded
    paste(at, f"vllm serve {QWEN} --enable-lora --max-lora-rank 64 --max-num-batched-tokens 4096")
    assert_clean(at)
    [more] = [e for e in at.expander if e.label.startswith("More vLLM options")]
    assert more.label == "More vLLM options · 3 set" and more.proto.expanded
    assert at.toggle(key="inference.e.enable_lora").value is True


def test_llama_cpp_host_weights_name_the_missing_ram_bandwidth_and_the_link_carries_it():
    """Experts in host RAM (--n-cpu-moe): without the RAM's bandwidth the caption says what is left out and where
    to give it; the link's `e.hostbw` sets it (the page's option, as the CLI's --host-memory-bandwidth)."""
    query = {"model": "Qwen/Qwen3-30B-A3B", "engine": "llama.cpp", "gpu": "rtx-3090", "e.ncmoe": "20"}
    at = start(query)
    captions = [c.value for c in at.caption]
    assert any("Give the host's memory bandwidth (More options)" in c for c in captions), captions
    at = start({**query, "e.hostbw": "96"})
    assert at.number_input(key="inference.e.host_memory_gb_s").value == 96.0
    assert not any("Give the host's memory bandwidth" in c.value for c in at.caption)
    assert any("These speeds include the time of the weights kept in host memory" in c.value and "a decoded token"
               in c.value for c in at.caption)
