"""Reliability of share links through the app (issue 6): whatever query string a stranger crafts (unknown keys,
repeated keys, wrong types, out-of-range or very long values, injection attempts, broken configs and comparison
items) the page opens without a traceback or an error box, falls back for the bad fields, names each of them in
its warning, shows user text escaped, and writes a repaired link into the address bar.

Hypothesis generates the query dicts and drives the real app through AppTest (tests/app_helpers.py). Each run
costs about 0.3 s, so the example count is kept modest; the codec itself is fuzzed faster in tests/test_share.py.
"""

import json
import re

import pytest
from app_helpers import APP, LLAMA3_8B, TIMEOUT, plain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

import estimator as est
from estimator.inputs import Input
from ui import links

LANDING = "inference"
EMBED_KEYS = ("embed", "embed_options")  # reserved by Streamlit: never reach the app (see docs/SECURITY.md)
INJECTIONS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))",
              "![x](https://evil.example/p.png)", "**bold** _it_ `code`", ":red[fake]", "$x^2$", "{{7*7}}",
              "'; DROP TABLE x; --", "../../etc/passwd", "%00", "\x00\x1b[31m", "\u202eevil", "😀" * 30, "a\nb\n# h"]
JUNK = st.one_of(st.text(max_size=30), st.sampled_from(INJECTIONS), st.text(min_size=200, max_size=2_000),
                 st.sampled_from(["", " ", "nan", "NaN", "inf", "-inf", "1e309", "-1", "0", "1.5", "0x10", "1,000",
                                  "True", "None", "null", "[]", "{}", "9" * 5_000, "1" * 400]),
                 st.integers(-10**15, 10**15).map(str), st.floats().map(repr))
CATALOG_IDS = [m.id for m in est.models()]
GPU_IDS = [g.id for g in est.gpus()]
PUBLISHED = [links.pack_config(json.dumps(LLAMA3_8B)),
             links.pack_config(json.dumps({  # Qwen3-30B-A3B, with markup in its name
                 "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48,
                 "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
                 "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                 "_name_or_path": "<b>[evil](javascript:1)</b>"}))]


def valid_text(f: Input):
    """URL strings field `f` accepts."""
    if f.link == "model":
        return st.sampled_from(CATALOG_IDS) | st.sampled_from(CATALOG_IDS).map(str.upper)
    if f.link == "gpu":
        return st.sampled_from(GPU_IDS)
    if f.link == "cfg":
        return st.sampled_from(PUBLISHED)
    if f.link == "targets":
        return st.sampled_from(["q,v", "attention", "all-linear", "q,k,v,o", "down", "Q, V"])
    if f.choices:
        return st.sampled_from([f.format(c) for c in f.choices])
    if isinstance(f.default, bool):
        return st.sampled_from(["0", "1", "true", "false"])
    if isinstance(f.default, int):
        return st.integers(int(f.low), int(min(f.high, 8192 if f.link == "seq" else f.high))).map(str)
    values = st.floats(f.low, f.high).map(f.format)
    return values | st.just("") if f.optional else values


def bad(text: str | None, f: Input) -> bool:
    if text is None:
        return False
    try:
        f.parse(text)
    except ValueError:
        return True
    return False


def field_values(f: Input):
    return st.one_of(valid_text(f), valid_text(f), JUNK)


unknown_keys = st.text(min_size=1, max_size=40).filter(
    lambda k: k not in ("v", "p") and k.lower() not in EMBED_KEYS and not re.match(r"c[1-6]\.", k)
    and not any(k == spec.link for page in links.ESTIMATE_PAGES for spec in links.fields(page).values())
    and k not in ("unit", "gpu"))


@st.composite
def queries(draw):
    """A query dict: a page (or junk), some of its fields valid or not, view settings, a comparison item,
    unknown keys, and repeated keys (a list: the last value counts, as in a browser)."""
    q = {}
    page = draw(st.sampled_from(["inference", "finetune", "compare", "methodology", None]) | JUNK)
    if page is not None:
        q["p"] = page
    if draw(st.integers(0, 3)) == 0:
        q["v"] = draw(st.sampled_from(["1", "2", "", "1.0", "0"]) | JUNK)
    fields_page = page if page in links.ESTIMATE_PAGES else draw(st.sampled_from(links.ESTIMATE_PAGES))
    page_fields = [*links.FIELDS[fields_page].values(), *links.VIEW_FIELDS.values()]
    for f in draw(st.lists(st.sampled_from(page_fields), max_size=6,
                           unique_by=lambda f: f.link)):
        q[f.link] = draw(field_values(f))
    if draw(st.integers(0, 3)) == 0:
        item_page = draw(st.sampled_from(links.ESTIMATE_PAGES) | JUNK)
        q["c1.p"] = item_page
        item_fields = list(links.FIELDS.get(item_page, links.FIELDS["inference"]).values())
        for f in draw(st.lists(st.sampled_from(item_fields), max_size=3,
                               unique_by=lambda f: f.link)):
            q["c1." + f.link] = draw(field_values(f))
        if draw(st.booleans()):
            q["c1.name"] = draw(JUNK)
    for key in draw(st.lists(unknown_keys, max_size=3)):
        q[key] = draw(JUNK)
    if q and draw(st.integers(0, 3)) == 0:
        key = draw(st.sampled_from(sorted(q)))
        q[key] = [draw(JUNK), q[key]]
    return q


def last(value):
    return value[-1] if isinstance(value, list) else value


def expected_mentions(query: dict) -> list[str]:
    """What the warning must name: each field whose value its parser refuses, a bad page or version, a dropped
    comparison item, and the unknown keys (the first eight, each shortened to 20 characters)."""
    q = {k: last(v) for k, v in query.items()}
    mentions, consumed = [], {"v", "p"}
    if "v" in q and q["v"] != links.VERSION:
        mentions.append(" v=")
    page = q.get("p", LANDING)
    if page not in links.PAGES:
        mentions.append(" p=")
        page = LANDING
    for f in [*links.VIEW_FIELDS.values(), *(links.FIELDS[page].values() if page in links.ESTIMATE_PAGES else ())]:
        consumed.add(f.link)
        if bad(q.get(f.link), f):
            mentions.append(f" {f.link}=")
    for i in range(1, links.MAX_COMPARE + 1):
        prefix = f"c{i}."
        keys = {k for k in q if k.startswith(prefix)}
        if not keys:
            continue
        item_page = q.get(prefix + "p")
        if item_page not in links.ESTIMATE_PAGES:
            mentions.append(f"Comparison {i} ignored")
            consumed |= keys
            continue
        consumed |= {prefix + "p", prefix + "name"} | {prefix + f.link for f in links.FIELDS[item_page].values()}
        mentions += [f" {prefix}{f.link}=" for f in links.FIELDS[item_page].values()
                     if bad(q.get(prefix + f.link), f)]
    unknown = sorted(k for k in q if k not in consumed and k.lower() not in EMBED_KEYS)
    mentions += [k if len(k) <= 20 else k[:20] + "..." for k in unknown[:8]]
    if len(unknown) > 8:
        mentions.append(f"and {len(unknown) - 8} more")
    return mentions


def open_link(query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    return at


def assert_handled(at: AppTest, query: dict) -> str:
    """No traceback, no error box, every bad field named, user text escaped, and the link repaired."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title, "the page did not render"
    raw = "\n".join(w.value for w in at.warning)
    warning = plain(raw)
    for mention in expected_mentions(query):
        assert mention in warning, (mention, warning)
    assert not re.search(r"(?<!\\)[<>\[\]`*_]", raw), raw  # user text is Markdown-escaped: \<script, \[x\]
    repaired = links.decode(dict(at.query_params), LANDING)
    assert repaired.warnings == [], repaired.warnings
    return warning


@settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(queries())
def test_any_query_string_opens_a_page_that_names_the_bad_fields(query):
    assert_handled(open_link(query), query)


BIG_CONFIG = links.pack_config(json.dumps({**LLAMA3_8B, "hidden_size": 2**19, "intermediate_size": 10**6,
                                           "num_hidden_layers": 2000, "vocab_size": 10**7,
                                           "num_attention_heads": 16384, "num_key_value_heads": 16384}))
CASES = {
    "unknown keys": {"utm_source": "x", "zzz": "1", "SEQ": "4096"},
    "many unknown keys": {f"k{i}": str(i) for i in range(50)},
    "repeated keys, the last one bad": {"seq": ["4096", "lots"], "p": ["finetune", "inference", "nope"]},
    "wrong types": {"seq": "4096.5", "conc": "two", "fa": "maybe", "params": "7B", "act": "16.0", "moe": "yes"},
    "out of range": {"seq": "0", "conc": "65537", "params": "20001", "oh": "-1", "tp": "513", "batch": "1e9"},
    "non-finite": {"params": "nan", "oh": "inf", "active": "-inf", "moe": "1"},
    "very long values": {"seq": "9" * 100_000, "model": "x" * 100_000, "gpu": "<" * 50_000, "zzz": "y" * 100_000},
    "very long key": {"k" * 100_000: "1"},
    "injection in values": {"model": "<script>alert(1)</script>", "kv": "[x](javascript:alert(1))",
                            "gpu": "<img src=x onerror=alert(1)>", "targets": "q,<b>v</b>", "w": "$(rm -rf /)"},
    "injection in keys": {"<script>alert(1)</script>": "1", "[x](javascript:1)": "2", "**k**": "3"},
    "bad page and version": {"p": "../../admin", "v": "999"},
    "broken config": {"cfg": "%%%not-base64"},
    "compression bomb": {"cfg": links.pack_config(" " * 5_000_000)},
    "config that is not JSON": {"cfg": links.pack_config("import os; os.system('id')")},
    "config with a pickle": {"cfg": links.pack_config("\x80\x04\x95" + "A" * 50)},
    "largest accepted architecture": {"cfg": BIG_CONFIG, "seq": "10000000", "conc": "65536", "fa": "0"},
    "largest inference inputs": {"params": "20000", "seq": "10000000", "batch": "65536", "conc": "65536",
                                 "fa": "0", "tp": "512", "oh": "1000", "act": "32"},
    "largest fine-tuning inputs": {"p": "finetune", "model": "deepseek-ai/DeepSeek-V3", "seq": "10000000",
                                   "batch": "65536", "gpus": "4096", "zero": "3", "fa": "0", "rank": "7168",
                                   "targets": "all-linear", "row": "qlora-4bit"},
    "MoE active over total": {"moe": "1", "params": "7", "active": "70"},
    "LoRA rank over the layer": {"p": "finetune", "model": "meta-llama/Llama-3.2-1B", "rank": "65536"},
    "six comparison items and a seventh": {"p": "compare", **{f"c{i}.p": "finetune" for i in range(1, 8)},
                                           **{f"c{i}.seq": str(512 * i) for i in range(1, 8)}},
}
COMBINATION_WARNINGS = {"MoE active over total": "cannot exceed", "LoRA rank over the layer": "lora_rank",
                        "compression bomb": "longer than", "config that is not JSON": "not valid JSON",
                        "config with a pickle": "not valid JSON", "largest accepted architecture": "",
                        "six comparison items and a seventh": "c7.p"}


def test_a_repeated_key_takes_its_last_value_as_a_browser_does():
    at = open_link({"seq": ["lots", "4096", "8192"], "p": ["finetune", "inference"]})
    assert_handled(at, {})
    assert not at.warning and at.number_input(key="inference.seq_len").value == 8192


def test_a_comparison_name_is_free_text_shown_literally_never_as_markup():
    name = "<script>x</script>[a](javascript:b) **c**\x00\n"
    at = open_link({"p": "compare", "c1.p": "inference", "c1.name": name})
    assert_handled(at, {})
    assert at.text_input(key="compare.name.1").value == links.clean_scenario_name(name)
    assert links.clean_scenario_name(name) in at.dataframe[0].value.columns  # a data grid cell, not Markdown
    raw = "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])
    assert "<script" not in raw and "javascript" not in raw


@pytest.mark.parametrize("name", list(CASES))
def test_each_kind_of_tampering_the_issue_lists_is_handled(name):
    query = CASES[name]
    warning = assert_handled(open_link(query), query)
    assert COMBINATION_WARNINGS.get(name, "") in warning
    if name not in ("largest accepted architecture", "largest inference inputs", "largest fine-tuning inputs"):
        assert warning, "a tampered link must say what it ignored"
