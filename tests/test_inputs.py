"""Every input is declared once (estimator/inputs.py, on the scenario fields) and the CLI, the share links and the
widgets accept exactly the same values, with the same bounds. Each test probes the interfaces themselves: the
argparse parser, the link decoder and the widgets the app draws."""

import contextlib
import io

import pytest
from app_helpers import assert_clean, gb, segmented, start, totals

import estimator as est
from estimator.cli import build_parser
from estimator.inputs import Input, inputs
from estimator.scenarios import ACTIVE_PARAMS, CATALOG_MODEL, LORA_SHORT_NAMES, PARAMS, TARGET_GPU
from ui import form, links

SCENARIO_INPUTS = [(page, name, spec) for page, cls in links.SCENARIOS.items() for name, spec in inputs(cls).items()]
COMMAND = {"inference": "inference", "finetune": "finetune"}
MODEL_INPUTS = [("params", PARAMS), ("active", ACTIVE_PARAMS), ("model", CATALOG_MODEL)]


def probes(spec: Input) -> list[str]:
    """Texts on both sides of every bound and choice, and a few that no input accepts."""
    texts = ["", "x", "nan", "inf", "-inf", "1e9", "1.5", "0", "-1", "<b>1</b>", "9" * 400]
    if spec.low is not None:
        texts += [spec.format(v) for v in (spec.low, spec.high)] + [str(spec.low - 1), str(spec.high + 1)]
        texts += [str(int(spec.low)), str(int(spec.high)), f"{spec.high:.0f}", f"{spec.low + 1e-9}"]
    texts += [spec.format(c) for c in spec.choices] + ["nope", "16.0", "32"]
    if spec.text is not None:
        texts += ["q,v", "all-linear", "Q, V", "attention", "zz", "q,<b>v</b>", "meta-llama/llama-3.1-8b", "h100-sxm"]
    return texts


def cli_accepts(command: str, spec: Input, text: str) -> bool:
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            build_parser().parse_args([command, spec.flag, text])
        except SystemExit:
            return False
    return True


def link_accepts(page: str, spec: Input, text: str) -> bool:
    link = links.decode({"p": page, spec.link: text}, page)
    return not any(f" {spec.link}=" in w or f"parameter {spec.link}=" in w for w in link.warnings)


def test_every_scenario_input_has_a_link_key_and_a_cli_flag_and_the_page_reads_it():
    for page, name, spec in SCENARIO_INPUTS:
        assert spec.link and spec.flag.startswith("--"), name
        assert links.fields(page)[name] is spec  # the page state and the link use the very declaration
    for page in links.ESTIMATE_PAGES:
        keys = [spec.link for spec in links.fields(page).values()]
        assert len(keys) == len(set(keys)), keys


@pytest.mark.parametrize("page, name, spec", [(p, n, s) for p, n, s in SCENARIO_INPUTS if s.kind is not bool],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_cli_and_the_links_accept_the_same_values(page, name, spec):
    disagree = [text for text in probes(spec)
                if cli_accepts(COMMAND[page], spec, text) != link_accepts(page, spec, text)]
    assert not disagree, (name, disagree)
    assert any(cli_accepts(COMMAND[page], spec, text) for text in probes(spec))  # the probes reach valid values


@pytest.mark.parametrize("name, spec", MODEL_INPUTS + [("gpu", TARGET_GPU)],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_model_and_gpu_inputs_accept_the_same_values(name, spec):
    context = {"moe": "1", "params": "20000"} if name == "active" else {}  # active counts need an MoE model
    for text in probes(spec) + ["7", "0.001", "0.0009", "20000", "20001", "Qwen/Qwen3-8B", "RTX-4090", "tpu"]:
        in_link = links.decode({**context, spec.link: text}, "inference").warnings == []
        assert cli_accepts("inference", spec, text) == in_link, (name, text)


def test_flags_are_on_off_pairs_on_the_cli_and_1_or_0_in_links():
    for page, name, spec in SCENARIO_INPUTS:
        if spec.kind is bool:
            on = build_parser().parse_args([COMMAND[page], spec.flag])
            off = build_parser().parse_args([COMMAND[page], "--no-" + spec.flag[2:]])
            assert (getattr(on, name), getattr(off, name)) == (True, False)
            assert (spec.parse("1"), spec.parse("0")) == (True, False)


@pytest.mark.parametrize("page", links.ESTIMATE_PAGES)
def test_the_widgets_offer_the_declared_bounds_and_choices(page):
    apps = {}  # a catalog model: every input is drawn (an objective's own inputs with that objective)

    def app(objective: str = "sft"):
        if objective not in apps:
            apps[objective] = start({"model": "deepseek-ai/DeepSeek-V3", **({"obj": objective} if page == "finetune"
                                                                           else {})}, page=page)
        return apps[objective]
    multimodal = start({"model": "Qwen/Qwen3-VL-8B-Instruct"}, page=page)  # and the image inputs for this one
    for name, spec in inputs(links.SCENARIOS[page]).items():
        key = f"{page}.{name}"
        at = app(form.OBJECTIVE_INPUTS[name][0] if name in form.OBJECTIVE_INPUTS else "sft")
        if name.startswith("image"):
            assert not any(w.key == key for w in at.number_input), name  # a text-only model: not drawn
            widget = multimodal.number_input(key=key)
            assert widget.label == spec.label and spec.range_text in widget.help, name
            continue
        if name == "method":  # drawn as Detailed ("auto": the architecture is known) or Quick
            radio = at.radio(key=key)
            assert [radio.format_func(v) for v in ("auto", "quick")] == radio.options and "quick" in spec.choices
        elif name == "lora_targets":  # presets, and Custom: the projections the text accepts, one tag each
            presets = at.button_group(key=f"{page}.lora_preset")
            assert presets.options[:3] == ["q, v", "Attention", "All linear"] and presets.options[3] == "Custom"
            presets.set_value("custom").run()
            widget = at.multiselect(key=key)  # a MoE model: experts and router too
            assert [widget.format_func(v) for v in LORA_SHORT_NAMES] == widget.options
            assert all(spec.parse(short) == short for short in LORA_SHORT_NAMES)
        elif spec.kind is bool and not spec.choices:  # gradient checkpointing: auto, on, off (a radio)
            assert at.toggle(key=key).label == spec.label
        elif spec.choices:
            widget = next(w for w in [*at.selectbox, *at.radio] if w.key == key)
            offered = ((None,) if spec.optional else ()) + tuple(spec.choices)
            assert [widget.format_func(v) for v in offered] == widget.options, name
            assert widget.label == spec.label or name == links.ROW[page], name  # the row picker says what it is for
        else:  # no bounds in the widget (the browser would drop an out-of-range value silently): in its help
            widget = at.number_input(key=key)
            assert widget.label == spec.label and spec.range_text in widget.help, name


@pytest.mark.parametrize("typed", [70000, 0, -3, 0.0001])
def test_an_out_of_range_number_is_kept_and_named_with_its_range(typed):
    """Issue 14 item 6: the value typed stays in the field, the field and its range are named under it, and the
    results give no estimate for the old value."""
    at = start()
    at.number_input(key="inference.params").set_value(typed).run()
    assert not at.exception
    assert at.number_input(key="inference.params").value == typed
    shown = [e.value for e in at.error]
    assert any(text.startswith("Total parameters (B) must be between 0.001 and 20,000, got ") for text in shown), shown
    at.number_input(key="inference.params").set_value(13.0).run()  # a valid value: the table again, no error
    assert not at.error and "33.2" in " ".join(m.value for m in at.markdown)


def test_every_number_widget_names_its_range_in_the_help():
    at = start({"model": "deepseek-ai/DeepSeek-V3"}, page="finetune")
    for widget in at.number_input:
        spec = links.fields("finetune")[widget.key.split(".", 1)[1]]
        assert f"Valid: {spec.range_text}" in widget.help, widget.key


def test_the_mla_toggle_shows_only_for_mla_models():
    at = start({"model": "deepseek-ai/DeepSeek-V3"})
    assert [t.label for t in at.toggle if t.key == "inference.mla_latent_cache"] == ["Cache the MLA latent"]
    at = start({"model": "meta-llama/Llama-3.1-8B"})
    assert not [t for t in at.toggle if t.key == "inference.mla_latent_cache"]


def test_common_words_for_formats_are_accepted_everywhere():
    import estimator as est

    weights = links.fields("inference")["weights"]
    for word, meant in (("fp16", "bf16"), ("FLOAT16", "bf16"), ("half", "bf16"), ("bfloat16", "bf16"),
                        ("f16", "bf16"), ("int4", "awq-4bit"), ("4bit", "awq-4bit"), ("8bit", "fp8"),
                        ("q4", "q4_k_m"), ("Q4_K_M", "q4_k_m"), ("fp8_block", "fp8-block")):
        assert weights.parse(word) == meant, word
        assert est.InferenceScenario(est.ParamCount.from_billions(7), weights=word).weights == meant
        assert links.decode({"w": word}, "inference").state["weights"] == meant
    kv = links.fields("inference")["kv_dtype"]
    assert kv.parse("fp16") == "bf16" and kv.parse("Q8") == "q8_0"
    with pytest.raises(ValueError, match="must be one of"):
        kv.parse("q4")  # q4 is a GGUF weight recipe, not a cache type
    with pytest.raises(ValueError, match="weights must be one of"):
        est.InferenceScenario(est.ParamCount.from_billions(7), weights="fp17")


LLAMA = "meta-llama/Llama-3.1-8B"


def test_lora_target_presets_set_the_targets_and_custom_starts_from_them():
    """Issue 14 item 3: q, v / Attention / All linear / Custom instead of adding tags one by one; a dense model's
    custom list offers no experts or router."""
    at = start({"model": LLAMA}, page="finetune")
    presets = segmented(at, "finetune.lora_preset")
    assert presets.options == ["q, v", "Attention", "All linear", "Custom"] and presets.value == "q,v"
    presets.set_value("all-linear").run()
    assert_clean(at)
    all_linear = est.FinetuneScenario(est.model(LLAMA).architecture, lora_targets="all-linear")
    assert totals(at) == gb(est.finetune_table(all_linear))
    assert at.query_params["targets"] == "q,k,v,o,gate,up,down,experts,router"
    segmented(at, "finetune.lora_preset").set_value("custom").run()
    targets = at.multiselect(key="finetune.lora_targets")
    assert targets.value == ["q", "k", "v", "o", "gate", "up", "down"] and "experts" not in targets.options
    at = start({"model": LLAMA, "targets": "q,k,v,o"}, page="finetune")  # a link: its preset is chosen
    assert segmented(at, "finetune.lora_preset").value == "attention"
