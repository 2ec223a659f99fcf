"""Every input is declared once (estimator/inputs.py, on the scenario fields) and the CLI, the share links and the
widgets accept exactly the same values, with the same bounds. Each test probes the interfaces themselves: the
argparse parser, the link decoder and the widgets the app draws."""

import contextlib
import io

import pytest
from app_helpers import start

from estimator.cli import build_parser
from estimator.inputs import Input, inputs
from estimator.scenarios import ACTIVE_PARAMS, CATALOG_MODEL, LORA_SHORT_NAMES, PARAMS, TARGET_GPU
from ui import links

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
    at = start({"model": "deepseek-ai/DeepSeek-V3"}, page=page)  # a catalog model: every input is drawn
    for name, spec in inputs(links.SCENARIOS[page]).items():
        key = f"{page}.{name}"
        if name == "method":  # drawn as Detailed ("auto": the architecture is known) or Quick
            radio = at.radio(key=key)
            assert [radio.format_func(v) for v in ("auto", "quick")] == radio.options and "quick" in spec.choices
        elif name == "lora_targets":  # the projections the text accepts, one tag each
            widget = at.multiselect(key=key)
            assert [widget.format_func(v) for v in LORA_SHORT_NAMES] == widget.options
            assert all(spec.parse(short) == short for short in LORA_SHORT_NAMES)
        elif spec.kind is bool:
            assert at.toggle(key=key).label == spec.label
        elif spec.choices:
            widget = next(w for w in [*at.selectbox, *at.radio] if w.key == key)
            offered = ((None,) if spec.optional else ()) + tuple(spec.choices)
            assert [widget.format_func(v) for v in offered] == widget.options, name
            assert widget.label == spec.label or name == links.ROW[page], name  # the row picker says what it is for
        else:
            widget = at.number_input(key=key)
            assert (widget.min, widget.max, widget.label) == (spec.low, spec.high, spec.label), name
