"""Share links: the inputs of a page <-> the URL query string, versioned and tolerant of bad input.

A link such as `?v=1&p=inference&params=70&conc=8&seq=8192` reproduces the same inputs, hence the same
numbers, in a fresh browser. Its keys are the `link` keys of the estimator's input declarations
(`estimator/scenarios.py`, `estimator/inputs.py`), read with the same parser as the CLI options; a value equal
to its default is left out so links stay short, which is safe because the defaults are pinned per link version
(`VERSION`): changing a default means a new version, or keeping the link default and giving the scenario field
its own (gradient checkpointing: a link without `gc` means off, a fresh page is 'auto', written `gc=auto`). On the
Fine-tuning page the framework preset's values (`fw`, estimator/frameworks.py) are the defaults of the inputs it sets,
as on the CLI: `fw=unsloth` alone means Unsloth's settings, and `fw=unsloth&loss=standard` one changed back.
Compared scenarios ride along as `c1.*`, `c2.*`, ... with
the same keys, and a pasted config.json travels as `cfg` (zlib-compressed, base64url). A .gguf file opened in the
app (`ui/gguf_file.py`) cannot travel: its link carries what its header says as a config.json (`cfg`, the
architecture) and the recipe of its general.file_type as the weight format (`w`, the selected row `custom`, an
engine's `e.w`), so the link reproduces the architecture and that recipe's bytes, not the file's exact tensor bytes
nor a projector file's tower.

Decoding never raises. An unknown key, a malformed or out-of-range value, or a combination the estimator
rejects (active > total parameters, a LoRA rank wider than the model) falls back to the default of the
offending input, and a warning names it.

The page state is a plain dict keyed by input name: the scenario's field names (`seq_len`, `concurrency`, ...), the
model's source `src` ("params", "catalog", "config" or "gguf") and its inputs (`moe`, `params`, `active`, `model`,
`cfg`; `gguf` and `mmproj`: keys of opened .gguf files in `GGUF_FILES`, "" for none), and on the Inference page the
selected `row`, the serving `engine` (None: no engine) and the engine's options as `e.<ServeScenario field>` (link
keys `e.<its link key>`, e.g. `e.tp`, `e.mml`: the page's own `tp`, `kv`, `w` and `fa` mean something else).
`scenario_of(page, state)` turns it into the estimator's scenario, `serve_scenario_of(state, gpu)` into the
engine's.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from estimator import hub
from estimator.architecture import Architecture
from estimator.checks import printable_text
from estimator.engines import MODULES, ServeScenario
from estimator.formats import CHECKPOINT
from estimator.frameworks import preset_fields
from estimator.gguf import FILE_TYPES, GgufHeader, config_of
from estimator.hf_config import architecture_from_config, parse_config_text
from estimator.inputs import INPUT, Input, inputs
from estimator.scenarios import (ACTIVE_PARAMS, CATALOG_MODEL, PARAMS, TARGET_GPU, FinetuneScenario, InferenceScenario,
                                 ParamCount)

VERSION = "1"
PAGES = ("inference", "finetune", "compare", "methodology")
SCENARIOS = {"inference": InferenceScenario, "finetune": FinetuneScenario}
ESTIMATE_PAGES = tuple(SCENARIOS)
SOURCES = ("params", "catalog", "config", "gguf")
GGUF, MMPROJ = "gguf", "mmproj"  # page-state names of an opened .gguf model file and its projector (registry keys)
MAX_COMPARE = 6
MAX_SCENARIO_NAME_CHARS = 60
MAX_LINK_CONFIG_CHARS = 100_000  # a config.json is a few KB; this also bounds what a link can make us decompress
# custom: the extra row of the chosen weight format; checkpoint: a quantized config's own format (the first row)
INFERENCE_ROWS = ("16-bit", "8-bit", "4-bit", "custom", "checkpoint")
ROW = {"inference": "row", "finetune": "technique"}  # the input that selects the row for the fit and Compare
FALLBACK = {"model": "the parameter count", "cfg": "the parameter count"}  # replaces a bad value (else: default)


def pack_config(text: str) -> str:
    """config.json text -> the `cfg` value of a link (zlib + base64url, no padding)."""
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def unpack_config(token: str) -> str:
    """The inverse of `pack_config`; refuses anything that does not decode to at most MAX_LINK_CONFIG_CHARS."""
    try:
        data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(data, 4 * MAX_LINK_CONFIG_CHARS + 1)  # UTF-8 is at most 4 bytes a character
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError, zlib.error, UnicodeDecodeError):
        raise ValueError("the config.json in the link is not encoded correctly (truncated link?)") from None
    if inflater.unconsumed_tail or len(text) > MAX_LINK_CONFIG_CHARS:
        raise ValueError(f"the config.json in the link is longer than {MAX_LINK_CONFIG_CHARS:,} characters")
    return text


def _check_config(token: str) -> str:
    """A link's `cfg` value -> the config.json text it packs, which must read as an architecture."""
    text = unpack_config(token)
    config_architecture(text)  # fails here, with the parser's message, rather than later on the page
    return text


ENGINE = "engine"  # the page-state name of the serving engine (None: the memory estimate only)
ENGINE_PREFIX = "e."  # engine options: page-state name "e." + ServeScenario field, link key "e." + its link key
ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama.cpp", "ollama": "Ollama",
                 "transformers": "transformers generate()"}
# The ServeScenario fields the page sets itself: the engine (its own input, optional) and the GPU (the target GPU)
_NOT_OPTIONS = ("engine", "gpu")


def engine_inputs() -> dict[str, Input]:
    """The Inference page's serving-engine inputs by page-state name: the engine, then every engine option."""
    serve = inputs(ServeScenario)
    engine = replace(serve["engine"], label="Serving engine", choices=tuple(MODULES), optional=True,
                     help="A serving engine's own start-up accounting (its memory budget, KV-cache tokens, maximum "
                          "concurrency and refusals) for the model on the target GPU. None: the estimate table.")
    options = {ENGINE_PREFIX + name: replace(spec, link=ENGINE_PREFIX + spec.link)
               for name, spec in serve.items() if name not in _NOT_OPTIONS}
    return {ENGINE: engine, **options}


def _page_inputs(page: str) -> dict[str, Input]:
    """Every input of an estimate page by name, in link order: the model's, then the scenario's (method first),
    and on the Inference page the selected row and the serving engine with its options (on the Fine-tuning page
    the technique is the row)."""
    scenario = inputs(SCENARIOS[page])
    model = {"moe": Input("Model type (MoE)", False, link="moe"), "params": PARAMS, "active": ACTIVE_PARAMS,
             "model": CATALOG_MODEL, "cfg": Input("config.json", "", link="cfg", text=_check_config),
             "method": scenario.pop("method")}
    row = {"row": Input("Selected row", "16-bit", link="row", choices=INFERENCE_ROWS)} if page == "inference" else {}
    engine = engine_inputs() if page == "inference" else {}
    return {**model, **scenario, **row, **engine}


FIELDS = {page: _page_inputs(page) for page in ESTIMATE_PAGES}
VIEW_FIELDS = {"unit": Input("Unit", "GB", link="unit", choices=("GB", "GiB")), "gpu": TARGET_GPU}


def fields(page: str) -> dict[str, Input]:
    """The inputs of an estimate page ("inference" or "finetune"), by name."""
    return FIELDS[page]


def page_default(spec: Input) -> object:
    """An input's value on a fresh page: its default, or None for an input the page may leave unset."""
    return None if spec.optional else spec.default


def link_defaults(page: str) -> dict:
    """What a link without a page's keys means: every input at its link default (`page_default`)."""
    return {"src": "params", GGUF: "", MMPROJ: "", **{name: page_default(spec) for name, spec in FIELDS[page].items()}}


def _fresh(page: str) -> dict:
    """The scenario fields whose own default differs from what a link without their key means: gradient
    checkpointing is 'auto' on a fresh page, while a link without `gc` keeps meaning off, as it always did (links
    made now spell `gc=auto`)."""
    return {f.name: f.default for f in dataclasses.fields(SCENARIOS[page])
            if INPUT in f.metadata and f.default != f.metadata[INPUT].default}


def defaults(page: str) -> dict:
    """A fresh page state with every input at its default (a bare 7 B parameter count, quick method)."""
    return {**link_defaults(page), **_fresh(page)}


def view_defaults() -> dict:
    return {name: spec.default for name, spec in VIEW_FIELDS.items()}


def fallback_text(name: str, spec: Input) -> str:
    """What a link's bad value of this input is replaced by, in words."""
    return FALLBACK.get(name) or spec.format(page_default(spec)) or "none"


@functools.lru_cache(maxsize=32)
def config_architecture(text: str):
    """The Architecture of a pasted config.json (cached: pages re-read it on every rerun)."""
    return architecture_from_config(parse_config_text(text))


@functools.lru_cache(maxsize=64)
def resolved_model(model_id: str) -> hub.ResolvedModel:
    """A model id's architecture and source: the catalog, else the Hugging Face Hub (estimator/hub.py; cached, as
    pages re-read it on every rerun; a failure is not cached, so a later rerun asks again). ValueError in one line."""
    return hub.resolve(model_id)


@dataclass(frozen=True, eq=False)
class GgufFile:
    """A .gguf file opened in the app: its name and size, its parsed header, and how many of its bytes the browser
    handed over (the header's window, never the file); `key` names it in `GGUF_FILES` and the page state."""

    name: str
    size: int
    header: GgufHeader
    read_bytes: int
    key: str


GGUF_FILES: dict[str, GgufFile] = {}  # key -> file: every session's opened files (each puts its own back each run)
MAX_GGUF_FILES = 256


def gguf_key(name: str, header_bytes: bytes) -> str:
    """The key of a file by its name and header bytes: the same file opened twice is one entry."""
    return hashlib.sha256(name.encode("utf-8", "replace") + b"\0" + header_bytes).hexdigest()[:24]


def add_gguf_file(file: GgufFile, key: str | None = None) -> None:
    GGUF_FILES[key or file.key] = file
    while len(GGUF_FILES) > MAX_GGUF_FILES:
        del GGUF_FILES[next(iter(GGUF_FILES))]


def gguf_file(key: str) -> GgufFile:
    if not key:
        raise ValueError("open a .gguf file to estimate from its header")
    if key not in GGUF_FILES:
        raise ValueError("the .gguf file opened earlier is no longer held by the app; open it again")
    return GGUF_FILES[key]


@functools.lru_cache(maxsize=64)
def gguf_resolved(key: str, mmproj_key: str = "") -> hub.ResolvedModel:
    """The model of an opened .gguf file (and its projector), as the CLI's `--gguf PATH [--mmproj PATH]` reads it."""
    file = gguf_file(key)
    projector = gguf_file(mmproj_key) if mmproj_key else None
    return hub.gguf_model(file.header, file.name, projector.header if projector else None,
                          projector.name if projector else "")


def model_of(state: Mapping) -> object:
    """The scenario's model: a catalog or Hub model's Architecture, a parsed config's Architecture, an opened .gguf
    file's Architecture, or a ParamCount."""
    if state["src"] == "catalog":
        return resolved_model(state["model"]).architecture
    if state["src"] == "config":
        return config_architecture(state["cfg"])
    if state["src"] == GGUF:
        return gguf_resolved(state[GGUF], state[MMPROJ]).architecture
    active = state["active"] if state["moe"] else None
    return ParamCount.from_billions(state["params"], active)


def waiting_for_model(state: Mapping) -> str:
    """What the page asks for when its source has no model yet (an empty config box, no .gguf file opened); ""
    otherwise."""
    if state["src"] == "config" and not state["cfg"].strip():
        return "Upload or paste a config.json to estimate from its architecture."
    if state["src"] == GGUF and not state[GGUF]:
        return "Open a .gguf file to estimate from its header (only the header's bytes are read)."
    return ""


def model_name(state: Mapping) -> str:
    """How the page names the model: the catalog name, the config's name, or '7B' / '47B MoE (13B active)'."""
    if state["src"] == "catalog":
        return resolved_model(state["model"]).architecture.name
    if state["src"] == "config":
        return config_architecture(state["cfg"]).name
    if state["src"] == GGUF:
        return gguf_resolved(state[GGUF], state[MMPROJ]).architecture.name
    if state["moe"] and state["active"] is not None:
        return f"{state['params']:g}B MoE ({state['active']:g}B active)"
    return f"{state['params']:g}B"


def scenario_of(page: str, state: Mapping) -> InferenceScenario | FinetuneScenario:
    """The estimator scenario a page state describes; ValueError naming the field when it is not valid."""
    given = {name: state[name] for name in inputs(SCENARIOS[page])}
    # a parameter count is quick; a known architecture is detailed unless quick is asked for
    given["method"] = "quick" if state["src"] == "params" or state["method"] == "quick" else "detailed"
    if page == "inference":
        given["weights"] = state["weights"] or "bf16"  # the extra row's format, else the scenario's default
    return SCENARIOS[page](model=model_of(state), **given)


def serve_scenario_of(state: Mapping, gpu: str) -> ServeScenario:
    """The serving-engine scenario of an Inference page state on `gpu`; ValueError naming the field when it is not
    valid (a parameter count: the engines need the architecture)."""
    options = {name[len(ENGINE_PREFIX):]: state[name] for name in FIELDS["inference"] if name.startswith(ENGINE_PREFIX)}
    model_id = resolved_model(state["model"]).ref.repo_id if state["src"] == "catalog" else \
        gguf_file(state[GGUF]).name if state["src"] == GGUF else ""  # llama-server -m NAME.gguf
    return ServeScenario(model_of(state), engine=state[ENGINE], gpu=gpu, model_id=model_id, **options)


def _check_state(page: str, state: Mapping) -> None:
    """ValueError unless the state makes a valid scenario (and, with an engine and a known architecture, a valid
    engine scenario)."""
    scenario = scenario_of(page, state)
    if page == "inference" and state[ENGINE] is not None and isinstance(scenario.model, Architecture):
        serve_scenario_of(state, ServeScenario.__dataclass_fields__["gpu"].default)


@dataclass
class Item:
    """A scenario on the Compare page: an estimate page's state and the row it compares."""

    page: str  # "inference" or "finetune"
    state: dict  # that page's state; state[ROW[page]] is the compared row
    name: str = ""  # the user's name for it ("" = described automatically)
    uid: int = 0  # stable id for the page's widgets (not part of links)


@dataclass
class Link:
    """What a query string says. `state` is the estimate page's inputs (None on other pages)."""

    page: str
    state: dict | None
    view: dict
    compare: list[Item] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def preset_defaults(page: str, state: Mapping) -> dict:
    """The inputs the page state's framework preset sets for its selected row (Fine-tuning; estimator/frameworks.py),
    as the page state spells them: a link does not repeat them, and an input it names wins, as on the CLI."""
    if page != "finetune":
        return {}
    fields = preset_fields(state["framework"], state[ROW[page]])
    return {name: FIELDS[page][name].parse(value) if isinstance(value, str) else value
            for name, value in fields.items()}


def _state_with(page: str, given: Mapping, fresh: bool = False) -> dict:
    state = {**(defaults(page) if fresh else link_defaults(page)), **given}
    state = {**state, **preset_defaults(page, state), **given}
    state["src"] = "config" if "cfg" in given else "catalog" if "model" in given else "params"
    return state


def _decode_state(page: str, query: dict, prefix: str, warnings: list[str], fresh: bool = False) -> dict:
    """Read `page`'s inputs (keys `prefix` + link key) out of `query`, consuming them; the inputs it does not
    name at their link defaults, or at a fresh page's defaults when `fresh` (an address without `v`)."""
    given = {}
    for name, spec in FIELDS[page].items():
        raw = query.pop(prefix + spec.link, None)
        if raw is None:
            continue
        try:
            given[name] = spec.parse(raw)
        except ValueError as err:
            warnings.append(_ignored(prefix + spec.link, raw, err, fallback_text(name, spec)))
    try:
        _check_state(page, _state_with(page, given, fresh))
    except ValueError as err:
        for name in reversed(list(given)):  # the inputs that come later depend on the earlier ones
            fewer = {k: v for k, v in given.items() if k != name}
            try:
                _check_state(page, _state_with(page, fewer, fresh))
            except ValueError:
                continue
            spec = FIELDS[page][name]
            shown = "(the config)" if name == "cfg" else spec.format(given[name])
            warnings.append(_ignored(prefix + spec.link, shown, err, fallback_text(name, spec)))
            given = fewer
            break
        else:
            warnings.append(f"Link inputs{' of comparison ' + prefix[1:-1] if prefix else ''} ignored: {err}. "
                            "Using the defaults.")
            given = {}
    return _state_with(page, given, fresh)


def _ignored(key: str, raw: str, err: Exception, instead: str) -> str:
    shown = raw if len(raw) <= 40 else raw[:40] + "..."
    return f"Link parameter {key}={shown!r} ignored: {err}. Using {instead} instead."


def _text(query: Mapping, key: str) -> str | None:
    value = query.get(key)
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else None
    return None if value is None else str(value)


def decode(query: Mapping[str, str | list[str]], landing_page: str) -> Link:
    """Read a query string (as st.query_params gives it). `landing_page` is used when the link names none."""
    query = {str(k): _text(query, k) for k in query}
    warnings: list[str] = []
    fresh = "v" not in query  # not a link the app made (a bare address): a fresh page's defaults
    version = query.pop("v", VERSION)
    if version != VERSION:
        warnings.append(f"Link version v={version[:10]!r} is not supported; read as version {VERSION}.")
    page = query.pop("p", landing_page)
    if page not in PAGES:
        warnings.append(_ignored("p", page, ValueError(f"the page must be one of {', '.join(PAGES)}"), landing_page))
        page = landing_page
    view = view_defaults()
    for name, spec in VIEW_FIELDS.items():
        raw = query.pop(spec.link, None)
        if raw is not None:
            try:
                view[name] = spec.parse(raw)
            except ValueError as err:
                warnings.append(_ignored(spec.link, raw, err, fallback_text(name, spec)))
    state = _decode_state(page, query, "", warnings, fresh) if page in ESTIMATE_PAGES else None
    compare = []
    for i in range(1, MAX_COMPARE + 1):
        prefix = f"c{i}."
        if not any(key.startswith(prefix) for key in query):
            continue
        item_page = query.pop(prefix + "p", None)
        name = clean_scenario_name(query.pop(prefix + "name", None) or "")
        if item_page not in ESTIMATE_PAGES:
            warnings.append(f"Comparison {i} ignored: {prefix}p must be inference or finetune.")
            for key in [k for k in query if k.startswith(prefix)]:
                del query[key]
            continue
        compare.append(Item(item_page, _decode_state(item_page, query, prefix, warnings, fresh), name, uid=i))
    if query:
        unknown = sorted(query)
        shown = ", ".join(k if len(k) <= 20 else k[:20] + "..." for k in unknown[:8])
        warnings.append(f"Unknown link parameter{'s' if len(unknown) > 1 else ''} ignored: {shown}"
                        + (f" and {len(unknown) - 8} more." if len(unknown) > 8 else "."))
    return Link(page, state, view, compare, warnings)


def clean_scenario_name(text: str) -> str:
    """A scenario name on the Compare page: printable characters only, at most MAX_SCENARIO_NAME_CHARS."""
    return printable_text(text, MAX_SCENARIO_NAME_CHARS)


def gguf_link_state(state: Mapping) -> dict:
    """What a link carries of a page state whose model is an opened .gguf file (a link cannot carry the file): the
    architecture its header describes as a config.json (named as the page names it), and the recipe of its
    general.file_type (Q4_K_M ...) wherever the page uses the file's own weights: the extra row's format with that
    row selected, and an engine's weight format. Without a file: the parameter count."""
    try:
        resolved = gguf_resolved(state[GGUF], state[MMPROJ])
    except ValueError:
        return {**state, "src": "params"}
    header = gguf_file(state[GGUF]).header
    config = {**config_of(header), "_name_or_path": resolved.architecture.name}
    file_type = header.get("general.file_type")
    recipe = FILE_TYPES.get(file_type) if isinstance(file_type, int) and not isinstance(file_type, bool) else None
    out = {**state, "src": "config", "cfg": json.dumps(config)}
    if state.get("row") == "checkpoint":
        out["row"] = "custom" if recipe else FIELDS["inference"]["row"].default
        out["weights"] = recipe or state["weights"]
    if state.get(ENGINE_PREFIX + "weights") == CHECKPOINT and recipe:
        out[ENGINE_PREFIX + "weights"] = recipe
    return out


def _encode_state(page: str, state: Mapping, prefix: str = "") -> dict[str, str]:
    """Non-default inputs of a page state; the model by its source (catalog id, config, or counts; an opened
    .gguf file as `gguf_link_state`)."""
    if state["src"] == GGUF:
        state = gguf_link_state(state)
    skip = {"params": {"model", "cfg", "method"}, "catalog": {"moe", "params", "active", "cfg"},
            "config": {"moe", "params", "active", "model"}}[state["src"]]
    out = {}
    preset = preset_defaults(page, state)
    for name, spec in FIELDS[page].items():
        value = state[name]
        always = (name == "model" and state["src"] == "catalog") or (name == "cfg" and state["src"] == "config")
        usual = preset[name] if name in preset else page_default(spec)  # what the link means without the key
        if name in skip or (name == "active" and not state["moe"]) or (value == usual and not always):
            continue
        out[prefix + spec.link] = pack_config(value) if name == "cfg" else spec.format(value)
    return out


def encode(page: str, state: Mapping | None, view: Mapping, compare: list[Item] = ()) -> dict[str, str]:
    """The query parameters of a link to `page` with these inputs, view settings and comparison set."""
    out = {"v": VERSION, "p": page}
    if page in ESTIMATE_PAGES:
        out.update(_encode_state(page, state, ""))
    for name, spec in VIEW_FIELDS.items():
        if view[name] != spec.default:
            out[spec.link] = spec.format(view[name])
    for i, item in enumerate(compare[:MAX_COMPARE], start=1):
        out[f"c{i}.p"] = item.page
        if item.name:
            out[f"c{i}.name"] = item.name
        out.update(_encode_state(item.page, item.state, f"c{i}."))
    return out
