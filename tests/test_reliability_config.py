"""Reliability of the config.json reader (issue 6): pasted JSON from strangers gets a clear, short message, is only
ever read as data, and nothing in it can reach the page as HTML or break the page or the terminal.

tests/test_fuzz.py feeds random dicts to `architecture_from_config`; here hypothesis writes JSON *text* that gets
through to the family readers (a supported model_type and the fields they read, with random values), and checks
what comes out: a bounded message, or an architecture whose name is printable and whose estimate is sane."""

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimator as est
from ui import links
from estimator.hf_config import MAX_CONFIG_CHARS, READERS, SUPPORTED_MODEL_TYPES, parse_config_text
from tests.conftest import LLAMA3_8B

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_MESSAGE = 400  # the longest legitimate message lists the supported model types
INJECTIONS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[click](javascript:alert(1))",
              "![x](https://evil.example/x.png)", "{{7*7}}", "${7*7}", "__import__('os').system('id')",
              "'; DROP TABLE models; --", ":red[fake warning]", "$\\LaTeX$", "\u202egnp.exe", "a\x00b\x1b[31mc",
              "\ud800", "😀" * 100, "Ⅷ" + "\u0301" * 50, "\n" * 10 + "# Heading"]


def read(text):
    """What the app does with pasted text: parse, then build the architecture."""
    return est.architecture_from_config(parse_config_text(text))


def assert_clear(err: ValueError) -> None:
    message = str(err)
    assert message and len(message) <= MAX_MESSAGE, message
    message.encode("utf-8")  # can be sent to the browser and printed


def assert_safe_name(a: est.Architecture) -> None:
    assert a.name and len(a.name) <= 80 and a.name.isprintable(), repr(a.name)
    a.name.encode("utf-8")


# --- each kind of bad input the issue lists, with the words of its message ---
def with_(**fields):
    return json.dumps({**LLAMA3_8B, **fields})


BAD_TEXT = [
    ("over the size cap", "{" + " " * MAX_CONFIG_CHARS + "}", "too large"),
    ("over the depth cap", '{"a":' * 21 + "1" + "}" * 21, "nested more than 20 levels"),
    ("recursion bomb", "[" * 200_000, "nested too deeply"),
    ("top-level list", "[1, 2, 3]", "must be a JSON object"),
    ("top-level string", '"llama"', "must be a JSON object"),
    ("top-level number", "7", "must be a JSON object"),
    ("top-level null", "null", "must be a JSON object"),
    ("empty", "   \n", "empty"),
    ("not JSON", "model_type: llama", "not valid JSON"),
    ("truncated JSON", with_()[:-20], "not valid JSON"),
    ("Python literal", "{'model_type': 'llama'}", "not valid JSON"),
    ("NaN", with_().replace("4096", "NaN", 1), "hidden_size must be a whole number between 1 and 1,000,000, got nan"),
    ("-Infinity", with_().replace("4096", "-Infinity", 1),
     "hidden_size must be a whole number between 1 and 1,000,000, got -inf"),
    ("5,000-digit integer", with_().replace("4096", "9" * 5_000, 1), "number with too many digits"),
    ("4,000-digit integer", with_().replace("4096", "9" * 4_000, 1), "hidden_size must be between 1 and 1,000,000"),
    ("float overflow", with_().replace("4096", "1e999", 1), "hidden_size must be a whole number"),
    ("huge but valid integer", with_(num_hidden_layers=10**9), "num_hidden_layers must be between 1 and 2,000"),
    ("wrong type: string", with_(hidden_size="4096"), "hidden_size must be a whole number"),
    ("wrong type: float", with_(hidden_size=4096.0), "hidden_size must be a whole number"),
    ("wrong type: bool", with_(hidden_size=True), "hidden_size must be a whole number"),
    ("wrong type: list", with_(num_attention_heads=[32]), "num_attention_heads must be a whole number"),
    ("wrong type: flag", with_(tie_word_embeddings=1), "tie_word_embeddings must be true or false"),
    ("long string value", with_(hidden_size="x" * 900_000), "hidden_size must be a whole number"),
    ("long list flag", with_(attention_bias=list(range(100_000))), "attention_bias must be true or false"),
    ("wrong type: model_type", with_(model_type=["llama"]), "model_type must be a string"),
    ("missing model_type", json.dumps({k: v for k, v in LLAMA3_8B.items() if k != "model_type"}),
     "missing model_type"),
    ("missing field", json.dumps({k: v for k, v in LLAMA3_8B.items() if k != "vocab_size"}), "missing vocab_size"),
    ("zero field", with_(num_hidden_layers=0), "num_hidden_layers must be between 1 and 2,000, got 0"),
    ("negative field", with_(vocab_size=-5), "vocab_size must be between 1 and 10,000,000"),
    ("unknown model type, no standard fields", '{"model_type": "bert"}', "config.json is missing hidden_size; "
                                                                         "model_type 'bert' has no reader of its own"),
    ("unknown model type, hybrid layers", with_(model_type="zamba3", hybrid_override_pattern="M-M-*-"),
     "model_type 'zamba3' has layers the estimator cannot read yet (hybrid_override_pattern"),
    ("hybrid with no Mamba heads", with_(model_type="nemotron_h", hybrid_override_pattern="M-M-*-", mamba_num_heads=0),
     "mamba_num_heads must be between 1 and 16,384, got 0"),
    ("hybrid pattern with an unknown block", with_(model_type="nemotron_h", hybrid_override_pattern="M-X*"),
     "hybrid_override_pattern must be at most 2,000 of the letters M, E, * and -"),
    ("long unknown model type", with_(model_type="m" * 10_000), "model_type is not a model type name: 'mmmmm"),
    ("HTML model type", '{"model_type": "<b>llama</b>"}', "model_type '<b>llama</b>' has no reader of its own"),
    ("hidden not divisible by heads", with_(hidden_size=4100), "not divisible by num_attention_heads"),
    ("kv heads > heads", with_(num_key_value_heads=64), "num_key_value_heads (64) cannot exceed"),
    ("kv heads do not divide heads", with_(num_key_value_heads=5), "must be a multiple of num_key_value_heads"),
    ("experts per token > experts", json.dumps({**LLAMA3_8B, "model_type": "mixtral", "num_local_experts": 8,
                                                "num_experts_per_tok": 9}), "experts_per_token"),
    ("layer_types of the wrong length", with_(sliding_window=4096, layer_types=["sliding_attention"] * 3),
     "layer_types has 3 entries"),
    ("text_config not an object", json.dumps({"model_type": "gemma3", "text_config": "x"}),
     "text_config must be a JSON object"),
]


@pytest.mark.parametrize("what, text, message", BAD_TEXT, ids=[case[0] for case in BAD_TEXT])
def test_each_kind_of_bad_config_gets_a_short_clear_message(what, text, message):
    with pytest.raises(ValueError) as caught:
        read(text)
    assert message in str(caught.value), str(caught.value)
    assert_clear(caught.value)


def test_bytes_that_are_not_utf8_get_a_clear_message():
    with pytest.raises(ValueError, match="must be UTF-8 text"):
        parse_config_text(b'{"model_type": "llama", "_name_or_path": "\xff\xfe"}')


@pytest.mark.parametrize("name", INJECTIONS)
def test_names_with_unicode_html_or_control_characters_are_kept_as_printable_text(name):
    a = read(with_(_name_or_path=name))
    assert_safe_name(a)
    kept = "".join(ch for ch in name if ch.isprintable()).strip()[:80]
    assert a.name == (kept or "custom llama")


def test_the_estimate_of_a_config_with_remote_code_fields_is_read_as_data_only():
    """auto_map / trust_remote_code / custom classes are ignored: the same architecture as without them."""
    hostile = {**LLAMA3_8B, "auto_map": {"AutoModelForCausalLM": "evil.Model", "AutoConfig": "evil.Config"},
               "trust_remote_code": True, "architectures": ["__import__('os').system('id')"],
               "quantization_config": {"quant_method": "pickle", "payload": "gASVAAAAAAAAAAA="},
               "torch_dtype": "eval('1+1')", "__class__": "os.system", "_name_or_path": "acme/model"}
    a = read(json.dumps(hostile))
    # an unknown quant_method is named and the weights stay 16-bit (estimator/checkpoint.py); nothing else is read
    assert a.checkpoint.format_id is None and "'pickle' not recognised" in a.checkpoint.notes[0]
    assert dataclasses.replace(a, checkpoint=None) == est.architecture_from_config(LLAMA3_8B, "acme/model")


# --- hypothesis: JSON text that reaches the family readers ---
FIELDS = sorted({"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                 "vocab_size", "head_dim", "max_position_embeddings", "tie_word_embeddings", "attention_bias",
                 "mlp_bias", "sliding_window", "layer_types", "use_sliding_window", "max_window_layers",
                 "num_local_experts", "num_experts_per_tok", "num_experts", "moe_intermediate_size",
                 "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "qk_rope_head_dim",
                 "qk_nope_head_dim", "kv_lora_rank", "q_lora_rank", "v_head_dim", "n_routed_experts",
                 "first_k_dense_replace", "moe_layer_freq", "n_shared_experts", "n_embd", "n_head", "n_layer",
                 "n_positions", "n_inner", "new_decoder_architecture", "num_kv_heads", "multi_query",
                 "parallel_attn", "bias", "ffn_hidden_size", "qk_layernorm", "ffn_dim", "word_embed_proj_dim",
                 "enable_bias", "text_config", "sliding_window_pattern", "qkv_bias", "experts_per_token",
                 "num_ln_in_parallel_attn", "n_head_kv"})
sizes = st.one_of(st.integers(1, 64), st.sampled_from([128, 256, 1024, 2048, 4096, 8192, 14336, 32000, 128256]),
                  st.integers(-2, 10**10), st.integers(10**20, 10**40))
json_scalars = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                         st.text(max_size=20), st.sampled_from(INJECTIONS[:-4]))
json_values = st.recursive(json_scalars | sizes, lambda kids: st.lists(kids, max_size=4)
                           | st.dictionaries(st.text(max_size=8), kids, max_size=4), max_leaves=12)
field_values = st.one_of(sizes, sizes, sizes, st.booleans(), json_values,
                         st.lists(st.integers(0, 64), max_size=40),
                         st.lists(st.sampled_from(["sliding_attention", "full_attention"]), max_size=40))


PUBLISHED = [m["config"] for m in json.loads(
    est.catalog.resources.files("estimator").joinpath("data", "models.json").read_text())["models"]]


@st.composite
def near_valid_configs(draw):
    """A published config with fields removed, replaced or added, sometimes read as another model type."""
    config = dict(draw(st.sampled_from(PUBLISHED)))
    for key in draw(st.lists(st.sampled_from(sorted(config)), max_size=2)):
        config.pop(key, None)
    if draw(st.integers(0, 3)) == 0:
        config["model_type"] = draw(st.sampled_from(SUPPORTED_MODEL_TYPES))
    config.update(draw(st.dictionaries(st.sampled_from(FIELDS), field_values, max_size=12)))
    if draw(st.booleans()):
        config["_name_or_path"] = draw(st.one_of(st.sampled_from(INJECTIONS), st.text(max_size=120)))
    if draw(st.booleans()):
        config["text_config"] = dict(config)
    return config


def check_config_text(text) -> None:
    try:
        a = read(text)
    except ValueError as err:
        assert_clear(err)
        return
    assert a.model_type in READERS or a.notes[0].startswith("Generic reader")  # read by a reader that says which
    assert_safe_name(a)
    s = est.InferenceScenario(a, seq_len=4096)
    rows = est.inference_table(s) + est.finetune_table(est.FinetuneScenario(a, lora_rank=1))
    assert all(isinstance(r.total, int) and r.total > 0 for r in rows)
    assert all(size >= 0 for r in rows for _, size in r.components)


@SETTINGS
@given(near_valid_configs(), st.sampled_from([None, 2]))
def test_near_valid_config_text_gives_a_clear_message_or_a_sane_estimate(config, indent):
    check_config_text(json.dumps(config, indent=indent))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=20), json_values, max_size=8))
def test_arbitrary_json_objects_as_text_give_a_clear_message_or_a_sane_estimate(config):
    check_config_text(json.dumps(config))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300),
                 st.builds(lambda c, cut: json.dumps(c)[:cut], near_valid_configs(), st.integers(0, 400))))
def test_arbitrary_or_truncated_text_gives_a_clear_message(text):
    try:
        read(text)
    except ValueError as err:
        assert_clear(err)


@settings(max_examples=100, deadline=None)
@given(near_valid_configs())
def test_configs_in_links_decode_without_raising_and_name_the_problem(config):
    """The same configs, packed into a share link: the link falls back to the parameter count with a warning."""
    link = links.decode({"cfg": links.pack_config(json.dumps(config))}, "inference")
    if link.state["src"] == "config":
        assert link.warnings == []
        assert_safe_name(links.config_architecture(link.state["cfg"]))
    else:
        [warning] = link.warnings
        assert warning.startswith("Link parameter cfg=") and len(warning) < 600


# --- nothing is executed, rendered as HTML or stored: what the code can do, checked on its syntax tree ---
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "breakpoint"}
FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "marshal", "shelve", "subprocess", "socket", "requests", "httpx",
                     "urllib.request", "http.client", "yaml", "joblib", "torch", "transformers", "huggingface_hub",
                     "ctypes"}
SOURCES = sorted([*ROOT.glob("estimator/*.py"), *ROOT.glob("ui/*.py"), *ROOT.glob("views/*.py"), ROOT / "app.py"])
# Models by Hub id (issue 16): estimator/hub.py is the one module that reaches the network, only through
# huggingface_hub; it and the GGUF header reader open files read-only (the Hub cache's config.json, a local .gguf)
ALLOWED_MODULES = {"hub.py": {"huggingface_hub"}}
READ_ONLY_OPENERS = {"hub.py", "gguf.py"}


def read_only(call: ast.Call) -> bool:
    """`open(path, "rb")` or `os.open(path, os.O_RDONLY | ...)`: a file opened for reading only."""
    if len(call.args) < 2 or call.keywords:
        return False
    mode = ast.unparse(call.args[1])
    if isinstance(call.func, ast.Attribute):  # os.open
        return "O_RDONLY" in mode and not any(flag in mode for flag in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC"))
    return mode in ("'rb'", "'r'")


def constant_style(call: ast.Call, tree: ast.Module) -> bool:
    """`st.html(NAME)` where NAME is a module constant holding one <style> element and nothing else: the
    app's own CSS, with no place for user text."""
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Name):
        return False
    values = [node.value for node in tree.body if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == call.args[0].id for t in node.targets)]
    return (len(values) == 1 and isinstance(values[0], ast.Constant) and isinstance(values[0].value, str)
            and re.fullmatch(r"<style>[^<]*</style>", values[0].value) is not None)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_app_and_estimator_never_execute_load_fetch_or_render_html(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            assert not (isinstance(func, ast.Name) and name in FORBIDDEN_CALLS), where  # builtins (not re.compile)
            assert name not in ("html", "iframe", "components") or (name == "html" and constant_style(node, tree)), \
                f"{where}: raw HTML element"
            for keyword in node.keywords:
                assert keyword.arg not in ("unsafe_allow_html", "trust_remote_code"), where
            if name == "open" or name in ("write_text", "write_bytes", "mkdir", "unlink", "touch"):
                assert (path.name == "cli.py" or path.name in READ_ONLY_OPENERS and read_only(node)) and \
                    name == "open", f"{where}: writes or opens files"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in names:
                assert not any(module == m or module.startswith(m + ".") for m in FORBIDDEN_MODULES
                               if m not in ALLOWED_MODULES.get(path.name, ())), where
    text = path.read_text(encoding="utf-8")
    assert "trust_remote_code=True" not in text and "unsafe_allow_html=True" not in text


def test_the_cli_opens_config_files_for_reading_only():
    """The only files the CLI opens: the config it was given, read-only, and /dev/null (after a broken pipe)."""
    tree = ast.parse((ROOT / "estimator" / "cli.py").read_text(encoding="utf-8"))
    opens = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", getattr(node.func, "id", "")) == "open"]
    assert opens
    for node in opens:
        first = node.args[0]
        if isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", "") == "os":
            flags = ast.unparse(node.args[1])
            assert ast.unparse(first) == "os.devnull" or (flags.startswith("os.O_RDONLY") and not any(
                mode in flags for mode in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"))), ast.unparse(node)
        else:
            assert isinstance(first, ast.Constant) and first.value == "rb", ast.unparse(node)
