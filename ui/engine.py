"""The Inference page's serving engine: the engine choice, its options, "Paste a command", and the engine's start-up
report (log lines, KV-cache tokens, concurrency, refusals, one GPU's memory bar and the launch command).

The engines are `estimator.engines.MODULES` (those modelled now); their options are the `ServeScenario` fields,
declared once there and carried in the page state as `e.<field>` (`ui.links.engine_inputs`). `OPTIONS` says which
of them each engine uses, so the form shows only those; the others keep their values in the page state.
"""

from __future__ import annotations

import streamlit as st

from estimator import catalog
from estimator.engines import REFUSAL, ServeReport, import_command, serve
from estimator.engines.command import MAX_COMMAND_CHARS, model_reference
from estimator.formats import CHECKPOINT, WEIGHT_FORMATS
from estimator.kv_cache import KV_DTYPE_LABELS
from estimator.speed import serve_speed
from estimator.units import in_unit
from ui import charts, form, links, state
from ui.text import escape

# engine -> the ServeScenario fields it reads, in the order the form shows them (fields an older or newer core
# does not declare are skipped)
OPTIONS = {
    "vllm": ("tensor_parallel", "pipeline_parallel", "data_parallel", "expert_parallel", "gpu_memory_utilization",
             "max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size", "cuda_graph_max_bs",
             "enforce_eager", "kv_cache_memory", "cpu_offload_gb", "speculative_tokens", "sampler", "model_runner",
             "kv_dtype", "weights", "rope_scaling", "context_override", "max_loras", "max_lora_rank", "enable_lora",
             "allow_long_context", "engine_version"),
    "sglang": ("tensor_parallel", "data_parallel", "expert_parallel", "mem_fraction_static", "max_model_len",
               "max_num_seqs", "max_num_batched_tokens", "block_size", "cuda_graph_max_bs", "enforce_eager",
               "kv_dtype", "weights", "cpu_offload_gb", "rope_scaling", "context_override", "allow_long_context",
               "max_loras", "max_lora_rank", "enable_lora", "engine_version"),
    "llama.cpp": ("n_gpu_layers", "n_cpu_moe", "max_model_len", "max_num_seqs", "max_num_batched_tokens",
                  "kv_dtype", "flash_attention", "weights", "tensor_parallel", "tensor_split", "override_tensor",
                  "context_override", "host_memory_gb_s", "engine_version"),
    "ollama": ("n_gpu_layers", "n_cpu_moe", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "kv_dtype",
               "flash_attention", "weights", "tensor_parallel", "host_memory_gb_s", "engine_version"),
    "transformers": ("max_model_len", "max_num_seqs", "tensor_parallel", "kv_dtype", "weights"),
}
# Options most start-ups leave at the engine's default: drawn in "More ... options"
ADVANCED = frozenset({"max_num_batched_tokens", "block_size", "cuda_graph_max_bs", "kv_cache_memory", "cpu_offload_gb",
                      "speculative_tokens", "sampler", "model_runner", "rope_scaling", "allow_long_context",
                      "enable_lora", "max_loras", "max_lora_rank", "tensor_split", "override_tensor",
                      "context_override", "host_memory_gb_s"})
STEPS = {"gpu_memory_utilization": 0.01, "mem_fraction_static": 0.01, "max_model_len": 1024,
         "max_num_batched_tokens": 1024, "kv_cache_memory": 2**30}  # number inputs' +/- steps (else 1)
LABELS = {"weights": {CHECKPOINT: "The checkpoint's own", **{k: f.label for k, f in WEIGHT_FORMATS.items()}},
          "kv_dtype": KV_DTYPE_LABELS,
          "sampler": {"auto": "The release's usual", "flashinfer": "FlashInfer", "pytorch": "PyTorch-native"},
          "model_runner": {"auto": "The release's usual", "v1": "V1", "v2": "V2"}}
PLACEHOLDERS = {"engine_version": "newest modelled", "tensor_split": "equal shares, e.g. 3,1",  # what "" means
                "rope_scaling": "the config's own", "override_tensor": "none, e.g. \\.ffn_.*_exps\\.=CPU"}
NO_ENGINE = "None (the memory estimate)"
EXAMPLES = {"vllm": "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --max-model-len 32768",
            "sglang": "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --context-length 32768",
            "llama.cpp": "llama-server -m Qwen3-8B-Q4_K_M.gguf -c 32768 -ngl 99 -fa on",
            "ollama": "ollama run qwen3:8b"}  # the text box's placeholder
COMMAND, NOTE = "command", "command_note"  # the pasted command (page state) and what reading it said


def options(engine: str) -> list[str]:
    """The page-state names of the options `engine` uses (unknown engines: every option)."""
    declared = [name for name in links.fields("inference") if name.startswith(links.ENGINE_PREFIX)]
    wanted = OPTIONS.get(engine)
    if wanted is None:
        return declared
    return [links.ENGINE_PREFIX + name for name in wanted if links.ENGINE_PREFIX + name in declared]


def choice(page: str) -> str | None:
    """The serving-engine select box: None keeps the page as it was."""
    return form.choice(page, links.ENGINE, {None: NO_ENGINE, **links.ENGINE_LABELS})


def engine_name(engine: str) -> str:
    return links.ENGINE_LABELS.get(engine, engine)


def inputs(page: str) -> None:
    """With an engine chosen: "Paste a command", the target GPU and the engine's options, two to a row; the ones
    most start-ups leave at their defaults (ADVANCED) in an expander, open when any of them is set."""
    engine = state.page_state(page)[links.ENGINE]
    command_box(page)
    form.target_gpu(page)
    names = options(engine)
    more = [name for name in names if name[len(links.ENGINE_PREFIX):] in ADVANCED]
    _grid(page, [name for name in names if name not in more])
    if more:
        values, specs = state.page_state(page), links.fields(page)
        changed = sum(values.get(name, links.page_default(specs[name])) != links.page_default(specs[name])
                      for name in more)
        label = f"More {engine_name(engine)} options" + (f" · {changed} set" if changed else "")
        with st.expander(label, expanded=bool(changed), icon=":material/tune:"):
            _grid(page, more)


def _grid(page: str, names: list[str]) -> None:
    """Options two to a row, the switches last."""
    flags = [name for name in names if links.fields(page)[name].kind is bool]
    others = [name for name in names if name not in flags]
    for group in (others, flags):
        for i in range(0, len(group), 2):
            for column, name in zip(st.columns(2), group[i:i + 2]):
                with column:
                    _widget(page, name)


def _widget(page: str, name: str) -> None:
    spec = links.fields(page)[name]
    field = name[len(links.ENGINE_PREFIX):]
    if spec.kind is bool:
        form.flag(page, name)
    elif spec.choices:
        form.choice(page, name, LABELS.get(field))
    elif spec.text is not None:
        widget_key, now = state.bind(page, name)
        state.page_state(page)[name] = st.text_input(spec.label, value=now, help=spec.help, key=widget_key,
                                                     placeholder=PLACEHOLDERS.get(field, ""))
    else:
        step = STEPS.get(field, 1)
        form.number(page, name, step=step, fmt="%.2f" if spec.kind is float else None)


def command_box(page: str) -> None:
    """"Paste a command": reads an engine command line into the engine, its options and the model."""
    state.page_state(page).setdefault(COMMAND, "")  # not a link input: kept for the session only
    widget_key, now = state.bind(page, COMMAND)
    state.page_state(page)[COMMAND] = st.text_area(
        "Paste a command", value=now, key=widget_key, height=90, max_chars=MAX_COMMAND_CHARS,
        placeholder=EXAMPLES.get(state.page_state(page)[links.ENGINE], EXAMPLES["vllm"]),
        help="An engine's own command line (vllm serve, python -m sglang.launch_server, llama-server, ollama run): "
             "sets the engine, its options and, for a catalog model, the model. Options the estimator does not "
             "model are listed and left out.")
    st.button("Read the command", icon=":material/input:", key=f"{page}.read_command", on_click=_read_command,
              args=(page,))
    for kind, text in st.session_state.get(f"{page}.{NOTE}", ()):
        (st.error if kind == "error" else st.info)(text, icon=":material/terminal:")


def _read_command(page: str) -> None:
    """Button callback (before the page runs): the pasted command's engine, options and model into the page state
    and its widgets; the options it does not set go back to their defaults, so the launch command is the pasted
    one. What was ignored or not applied is kept for `command_box` to say."""
    inputs = state.page_state(page)
    text = st.session_state.get(f"{page}.{COMMAND}", "")
    inputs[COMMAND] = text
    note_key = f"{page}.{NOTE}"
    try:
        imported = import_command(text)
    except ValueError as err:
        st.session_state[note_key] = [("error", f"Not read: {escape(str(err))}.")]
        return
    specs = links.fields(page)
    values = {name: links.page_default(spec) for name, spec in specs.items() if name.startswith(links.ENGINE_PREFIX)}
    values[links.ENGINE] = imported.engine
    notes, problems = [], []
    for field, value in imported.fields:
        name = links.ENGINE_PREFIX + field
        if name not in specs:
            problems.append(f"{field} is not an option of this page")
            continue
        try:
            specs[name].check(field, value)
        except ValueError as err:
            problems.append(f"{specs[name].label}: {err}")
            continue
        values[name] = value
    if imported.model:
        found, kind = model_reference(imported.model, imported.engine)
        if not found:
            notes.append(f"The model {imported.model!r} is not in the catalog: the page keeps "
                         f"{links.model_name(inputs)}.")
        else:
            values.update({"src": "catalog", "model": found})
        if kind and links.ENGINE_PREFIX + "weights" in specs and "weights" not in dict(imported.fields):
            values[links.ENGINE_PREFIX + "weights"] = kind  # the type a GGUF file name or an Ollama tag carries
    for name, value in values.items():
        inputs[name] = value
        st.session_state[f"{page}.{name}"] = value
    st.session_state.pop(f"{page}.method", None)  # drawn only for an architecture: seeded again from the state
    if "model" in values:
        form._row_follows_checkpoint(page)
    shown = {field: specs[links.ENGINE_PREFIX + field].format(value) for field, value in imported.fields
             if links.ENGINE_PREFIX + field in values and values[links.ENGINE_PREFIX + field] == value}
    lines = [f"Read a {engine_name(imported.engine)} command"
             + (f" for {imported.model}" if imported.model else "")
             + (": " + ", ".join(f"{specs[links.ENGINE_PREFIX + f].label} {v}" for f, v in shown.items())
                if shown else "; every option at the engine's default") + "."]
    if imported.ignored:
        lines.append("Ignored (not modelled): " + ", ".join(imported.ignored) + ".")
    lines += notes
    st.session_state[note_key] = [("info", "\n\n".join(escape(line) for line in lines))] + [
        ("error", escape(f"Not applied: {problem}.")) for problem in problems]


@st.cache_data(max_entries=128, show_spinner=False)
def report(inputs: dict, gpu_id: str) -> ServeReport:
    """The engine's start-up report for the page state on `gpu_id`; ValueError for invalid inputs."""
    return serve(links.serve_scenario_of(inputs, gpu_id))


@st.cache_data(max_entries=128, show_spinner=False)
def speed(inputs: dict, gpu_id: str):
    """The engine's speed by llama-bench's conventions (`estimator.speed.serve_speed`) for the page state."""
    return serve_speed(links.serve_scenario_of(inputs, gpu_id), report(inputs, gpu_id))


def _speed(inputs: dict, gpu_id: str) -> None:
    """Prefill, TTFT, decode at batch 1 and the throughput over the engine's running requests, in one row."""
    rate = speed(inputs, gpu_id)
    cells = [("Prefill (pp512)", f"{rate.prefill_tokens_per_s:,.0f} tok/s",
              "Prompt tokens per second while prefilling a 512-token prompt"),
             ("TTFT (512 tokens)", f"{rate.ttft_s * 1000:,.0f} ms",
              "Time to the first token of a 512-token request: the prompt's forward, plus the server's fixed cost per "
              "request where one is derived for the engine (see the assumptions)"),
             ("Decode (tg128)", f"{rate.decode_tokens_per_s:,.1f} tok/s",
              "Tokens per second of one sequence generating 128 tokens from an empty context (batch 1)"),
             ("All requests", f"{rate.throughput_tokens_per_s:,.0f} tok/s",
              "Generated tokens per second over as many 640-token requests as the engine runs at once")]
    for column, (label, value, help_text) in zip(st.columns(len(cells)), cells):
        column.metric(label, value, help=help_text)
    if rate.host_bytes_left_out:
        s = links.serve_scenario_of(inputs, gpu_id)
        hint = (" Give the host's memory bandwidth (More options) to include the CPU's part."
                if s.engine in ("llama.cpp", "ollama") and not s.host_memory_gb_s else "")
        st.caption(f":material/warning: These speeds leave out some of the time the "
                   f"{rate.host_bytes_left_out / 2**30:,.1f} GiB of weights in host memory take: every step also reads "
                   "them there (the CPU's memory or the host link), so decode is slower than shown (see how the speed "
                   f"is estimated).{hint}")
    if rate.host_prefill_s or rate.host_decode_s:
        parts = [f"{seconds * 1000:,.0f} ms {where}" for seconds, where in
                 ((rate.host_prefill_s, "in the prompt's forward"), (rate.host_decode_s, "a decoded token")) if seconds]
        st.caption(f":material/info: These speeds include the time of the weights kept in host memory: "
                   f"{' and '.join(parts)} (see how the speed is estimated).")
    with st.expander("How the speed is estimated", icon=":material/speed:"):
        st.markdown("\n".join(f"- {escape(note)}" for note in rate.assumptions))


def _field_error(page: str, message: str) -> str:
    """A scenario's error with the field named as the form labels it ("Pipeline parallel: pipeline_parallel ...")."""
    for name, spec in links.fields(page).items():
        field = name[len(links.ENGINE_PREFIX):]
        if name.startswith(links.ENGINE_PREFIX) and message.startswith(field + " "):
            return f"{spec.label}: {message}"
    return message


def render(page: str) -> None:
    """The engine's start-up report: refusal, numbers, one GPU's memory, warnings, launch command and log."""
    inputs, view = state.page_state(page), state.view()
    engine = engine_name(inputs[links.ENGINE])
    if inputs["src"] == "params":
        st.info(f"{engine} needs the model's architecture: choose a catalog model, paste a config.json, open a "
                ".gguf file, or paste a command that names a catalog model.", icon=":material/account_tree:")
        return
    if links.waiting_for_model(inputs):
        st.info(links.waiting_for_model(inputs), icon=":material/upload_file:")
        return
    try:
        r = report(inputs, view["gpu"])
    except ValueError as err:
        st.error(escape(_field_error(page, str(err))), icon=":material/error:")
        return
    gpu = catalog.gpu(view["gpu"])
    top_left, top_right = st.columns([4, 1], vertical_alignment="bottom")
    with top_right:
        unit = form.unit(page)
    top_left.caption(f"**{engine}** starting {escape(links.model_name(inputs))} on {r.gpus} x {escape(gpu.name)}, "
                     "as the engine accounts for it; sizes are of one GPU.")
    refusals = [w[len(REFUSAL):] for w in r.warnings if w.startswith(REFUSAL)]
    if refusals:
        _refusal(engine, refusals, r, unit)
    _numbers(r, unit)
    if r.starts:
        _speed(inputs, view["gpu"])
    st.plotly_chart(charts.engine_bar(r, unit), config={"displaylogo": False}, key=f"{page}.engine_bar")
    for warning in (w for w in r.warnings if not w.startswith(REFUSAL)):
        st.warning(escape(warning), icon=":material/warning:")
    st.markdown("**Launch command**")
    st.code(r.command, language="bash", wrap_lines=True)
    st.markdown(f"**{escape(engine)}'s start-up log** (the lines it would print)")
    st.code("\n".join(r.log) or "(nothing)", language=None, wrap_lines=True)
    with st.expander("Assumptions", icon=":material/info:"):
        settings = ", ".join(f"{name} {value}" for name, value in r.settings)
        notes = [*r.assumptions, *([f"Settings the engine resolved: {settings}"] if settings else []),
                 "The bar is the most loaded GPU; GPU memory is what CUDA reports as total (the catalog's usable "
                 "bytes)"]
        st.markdown("\n".join(f"- {escape(note)}" for note in notes))


def _refusal(engine: str, refusals: list[str], r: ServeReport, unit: str) -> None:
    """The engine's own error text, prominent, with the numbers behind it."""
    with st.container(border=True):
        st.markdown(f":red[:material/block: **{escape(engine)} refuses to start**]")
        st.code("\n".join(refusals), language=None, wrap_lines=True)
        budget = f"{in_unit(r.budget_bytes, unit):,.2f} {unit}"
        st.caption(f"The engine would hold {in_unit(r.total, unit):,.2f} {unit} on its most loaded GPU against a "
                   f"budget of {budget} ({in_unit(r.gpu_bytes, unit):,.2f} {unit} on the GPU); the longest "
                   f"max_model_len that fits is {r.max_model_len_that_fits:,} tokens.")


def _numbers(r: ServeReport, unit: str) -> None:
    """KV-cache tokens, concurrency, the longest request that fits, GPUs and host RAM."""
    cells = [("KV-cache tokens", f"{r.kv_cache_tokens:,}",
              "Tokens the KV pool holds across all requests (vLLM's 'GPU KV cache size')"),
             ("Max concurrency", f"{r.max_concurrency:,.2f}x",
              f"Requests of max_model_len = {r.max_model_len:,} tokens the pool holds at once"),
             ("Max model len that fits", f"{r.max_model_len_that_fits:,}",
              "The longest max_model_len (tokens of one request) the KV pool holds, up to the model's context length"),
             ("GPUs", f"{r.gpus:,}", "GPUs the deployment uses (tensor x pipeline x data parallel)")]
    if r.host_bytes:
        cells.append(("Host RAM", f"{in_unit(r.host_bytes, unit):,.1f} {unit}",
                      "Host memory for the weights and KV cache kept off the GPU"))
    per_row = len(cells) if len(cells) <= 4 else 3  # five metrics would cut their labels short
    for row in range(0, len(cells), per_row):
        for column, (label, value, help_text) in zip(st.columns(per_row), cells[row:row + per_row]):
            column.metric(label, value, help=help_text)
    st.caption(f"Per GPU: {in_unit(r.total, unit):,.2f} {unit} held, budget {in_unit(r.budget_bytes, unit):,.2f} "
               f"{unit}, GPU {in_unit(r.gpu_bytes, unit):,.2f} {unit}; max_model_len {r.max_model_len:,} tokens.")
