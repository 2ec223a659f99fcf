"""llama.cpp (`llama-server`): how a start-up divides the GPUs and host RAM, from llama.cpp's source.

Read in ggml-org/llama.cpp (stored versions: `src/llama-model.cpp` at 00342301d01add50835550e8a916f12097d94517,
`common/common.h` at 001d906a6d86e2490e394361e7cc6f478b100088; `src/llama-context.cpp`,
`src/llama-kv-cache-iswa.cpp` and `tools/server/server.cpp` as quoted in the same index):

Layers (llama_model::load_tensors): with L repeating layers and -ngl N,
    i_gpu_start = max(L - N, 0), act_gpu_layers = min(N, L + 1)
    layer il is on a GPU when i_gpu_start <= il and il - i_gpu_start < act_gpu_layers; the output layer is index L,
    so it is offloaded only when N > L ("offloaded N/L+1 layers to GPU"). -ngl 99 offloads everything.
    The token embedding (the input layer) always stays on the CPU ("there is very little benefit to offloading the
    input layer"); a tied lm_head is duplicated onto the output layer's device.
    Devices: layer il goes to the first device whose cumulative --tensor-split share (normalised to 1) exceeds
    (il - i_gpu_start) / act_gpu_layers (std::upper_bound over the partial sums); without -ts the shares are each
    device's free memory, equal shares here (all devices are the same GPU).
    --n-cpu-moe N: common/arg.cpp adds a CPU buffer override for `blk.<i>.ffn_(up|down|gate)_exps` of layers i < N.
Context (llama_context): n_ctx = -c, 0 = the model's training context; n_ctx = GGML_PAD(n_ctx, 256); without a
    unified cache every slot gets n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256) and n_ctx = n_ctx_seq x n_seq_max.
    llama-server with -np unset: "n_parallel is set to auto, using n_parallel = 4 and kv_unified = true".
    Defaults (common.h): n_batch 2048, n_ubatch 512, cache f16, flash attention auto, n_gpu_layers -1 = auto with
    `--fit on`: unset options are shrunk until every device keeps 1024 MiB free (context first, down to 4096, only
    when -c was not given; then layers).
KV cache (llama_kv_cache): per layer K [n_embd_k_gqa, cells] and V [n_embd_v_gqa, cells] in -ctk / -ctv
    (ggml_row_size: block types cost block_bytes per block), on the device of the layer (offload_kqv), the CPU
    layers' cache in host RAM ("CUDA_Host KV buffer"). MLA caches the latent as K and no V. Sliding-window layers
    (llama_kv_cache_iswa): GGML_PAD(min(cells, n_swa x (unified ? n_seq : 1) + n_ubatch), 256) cells per stream.
    Recurrent layers (llama_memory_recurrent): one f32 conv + SSM state per sequence (n_seq_max cells).
Compute buffers (ggml-alloc's reservation of the worst-case graph: n_ubatch tokens, all of them outputs, attending
    to every cell), per device, the largest of (each term's mechanism in `_compute_peaks`):
    attention without flash attention: KQ = n_head x n_kv x n_ubatch f32 (the soft_max runs in place) plus the mask
    copied from the host and the hidden-width tensors alive with it; with flash attention no KQ, the f16 mask;
    FFN: the gate and up outputs; output layer: logits n_vocab x n_ubatch f32.
    Op offload (ggml-cuda.cu ggml_backend_cuda_device_offload_op, batch >= 32): a mat-mul of a host weight (CPU
    layers, a CPU output layer, --n-cpu-moe experts) runs on the first GPU, its weight copied into that GPU's compute
    buffer: the largest copy with its f32 input and output is a floor of CUDA0's buffer, -ngl 0 included (every
    GPU is a device of the model whatever -ngl says: llama_prepare_model_devices, src/llama.cpp).
    The host keeps the graph inputs (the token embeddings, n_embd x n_ubatch f32, and the KQ mask) and the output
    buffer (n_vocab x n_seq_max f32 logits).
A device allocates its model buffer, then its KV buffer, then its compute buffer; the first that does not fit fails
with "cudaMalloc failed: out of memory".
"""

from __future__ import annotations

import functools
import math
import shlex
from dataclasses import dataclass

from .. import catalog
from ..architecture import Architecture, Tensor, tensors
from ..formats import CHECKPOINT, tensor_bytes, weight_format
from ..gguf import ROLE_OF
from ..kv_cache import KV_DTYPE_BYTES, layer_elements
from .base import (CPU_MOE_ALL, REFUSAL, ServeReport, ServeScenario, canonical_overrides, canonical_split,
                   make_report, override_rules, split_shares)

MiB = 2**20
CTX_PAD = 256  # src/llama-context.cpp: cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256) (ggml-org/llama.cpp#17046)
SWA_PAD = 256  # src/llama-kv-cache-iswa.cpp: "the SWA cache is always padded to 256" (ggml-org/llama.cpp#17037)
DEFAULT_UBATCH = 512  # common.h n_ubatch
DEFAULT_BATCH = 2048  # common.h n_batch
OFFLOAD_MIN_BATCH = 32  # ggml-cuda.cu ggml_backend_cuda_device_offload_op: min_batch_size
AUTO_SLOTS = 4  # tools/server: -np unset -> 4 slots over one unified KV cache
FIT_MARGIN = 1024 * MiB  # common.h fit_params_target: 1024 MiB left free on every device
FIT_MIN_CTX = 4096  # common.h fit_params_min_ctx
F32 = 4
F16 = 2
# -ctk / -ctv names of the estimator's KV dtypes (bf16 = the model's 16-bit cache: llama.cpp's default f16)
CACHE_TYPE_NAMES = {"bf16": "f16", "fp32": "f32", "q8_0": "q8_0", "q5_0": "q5_0", "q4_0": "q4_0", "fp8": "f8"}


@dataclass(frozen=True)
class Layout:
    """Where each part of the model sits: device per repeating layer (-1 = CPU), the output layer's device."""

    layer_device: tuple[int, ...]
    output_device: int
    offloaded: int  # layers counted in "offloaded N/L+1 layers to GPU"


@dataclass(frozen=True)
class Context:
    n_ctx: int  # KV cells of a full-attention layer, all streams together
    n_ctx_seq: int  # context of one slot
    slots: int
    unified: bool
    swa_cells: int  # cells of a sliding-window layer, all streams together
    ubatch: int


@dataclass(frozen=True)
class Startup:
    """One llama.cpp start-up: bytes per device (index -1 = host) by buffer."""

    layout: Layout
    ctx: Context
    model: dict  # device -> bytes (-1: CPU / CPU_Mapped)
    kv: dict
    compute: dict
    output_buffer: int


def gguf_type(s: ServeScenario) -> str:
    """The weight format llama.cpp loads: a GGUF recipe or another format; 'checkpoint' = the checkpoint's own
    (its quantization_config, else 16-bit: an F16 / BF16 GGUF)."""
    if s.weights != CHECKPOINT:
        return s.weights
    c = s.model.checkpoint
    return c.format_id if c is not None and c.format_id is not None else "bf16"


def layout(a: Architecture, ngl: int, shares: tuple[float, ...]) -> Layout:
    """llama_model::load_tensors' placement of the repeating layers and the output layer over devices with these
    --tensor-split shares."""
    n, devices = a.num_layers, len(shares)
    ngl = n + 1 if ngl < 0 else ngl
    start = max(n - ngl, 0)
    active = min(ngl, n + 1) if devices else 0
    total = sum(shares)
    splits = [sum(shares[:d + 1]) / total for d in range(devices)]  # normalised cumulative sums

    def device(il: int) -> int:
        if il < start or il - start >= active:
            return -1
        x = (il - start) / active
        return min(next((d for d, edge in enumerate(splits) if edge > x), devices - 1), devices - 1)

    return Layout(tuple(device(il) for il in range(n)), device(n), active)


def context(a: Architecture, n_ctx: int, slots: int, unified: bool, ubatch: int) -> Context:
    """n_ctx as llama_context pads it and the sliding-window cache as llama_kv_cache_iswa sizes it."""
    n_ctx = -(-n_ctx // CTX_PAD) * CTX_PAD
    if unified:
        n_ctx_seq, streams, per_stream = n_ctx, 1, n_ctx
    else:
        n_ctx_seq = -(-(n_ctx // slots) // CTX_PAD) * CTX_PAD
        n_ctx, streams, per_stream = n_ctx_seq * slots, slots, n_ctx_seq
    swa = 0
    if a.sliding_window and a.sliding_layers:
        window = a.sliding_window * (slots if unified else 1) + ubatch
        swa = -(-min(per_stream, window) // SWA_PAD) * SWA_PAD * streams
    return Context(n_ctx, n_ctx_seq, slots, unified, swa, ubatch)


def _row(elements: int, dtype: str) -> int:
    """ggml_row_size: whole blocks of the cache type."""
    return math.ceil(elements * KV_DTYPE_BYTES[dtype])


def _recurrent_state(a: Architecture, layer: int) -> int:
    """llama_memory_recurrent: one cell per sequence holds the f32 conv state (n_embd_r) and SSM state (n_embd_s)."""
    if layer in a.linear_layers:  # Gated DeltaNet: conv over q, k, v; state n_v x d_v x d_k
        conv_dim = 2 * a.linear_key_heads * a.linear_key_head_dim + a.linear_value_heads * a.linear_value_head_dim
        return F32 * ((a.linear_conv_kernel - 1) * conv_dim
                      + a.linear_value_heads * a.linear_value_head_dim * a.linear_key_head_dim)
    if a.mamba_version == 1:
        return F32 * (a.mamba_conv_kernel - 1 + a.mamba_state_size) * a.mamba_inner
    conv = (a.mamba_conv_kernel - 1) * (a.mamba_inner + 2 * a.mamba_groups * a.mamba_state_size)
    return F32 * (conv + a.mamba_state_size * a.mamba_inner)


def layer_kv_bytes(a: Architecture, layer: int, ctx: Context, dtype: str) -> int:
    """The cache of one layer: K and V rows for each of its cells, or its recurrent state."""
    if layer in a.linear_layers or layer in a.mamba_layers:
        return _recurrent_state(a, layer) * ctx.slots
    if layer not in a.cached_layers:
        return 0
    cells = ctx.swa_cells if layer in a.sliding_layers and ctx.swa_cells else ctx.n_ctx
    if a.is_mla:  # the latent is K; has_v = !is_mla
        return _row(layer_elements(a, layer, 1, True), dtype) * cells
    kv_heads, head_dim = a.attention_shape(layer)
    return 2 * _row(kv_heads * head_dim, dtype) * cells


def _compute_peaks(a: Architecture, s: ServeScenario, ctx: Context, layers: list[int], output: bool) -> int:
    """The compute buffer of one device holding `layers` (and the output layer when `output`): the largest
    working set of its graph, the ggml-alloc reservation with n_ubatch tokens that are all outputs."""
    ub = ctx.ubatch
    hidden = F32 * a.hidden_size * ub  # one f32 activation of the residual width
    peak = 0
    if layers:
        attn = [il for il in layers if il in a.cached_layers]
        if attn:
            n_kv = max(ctx.swa_cells if il in a.sliding_layers and ctx.swa_cells else ctx.n_ctx for il in attn)
            q = F32 * a.q_width * ub
            if s.flash_attention:  # the f16 mask copied from the host; Q, the attention output, the residual
                peak = F16 * n_kv * ub + 2 * q + 2 * hidden
            else:  # KQ (soft_max in place), the f32 mask copied from the host, Q, KQV, the residual, the split input
                peak = F32 * a.num_heads * n_kv * ub + F32 * n_kv * ub + q + 3 * hidden
        widths = [a.intermediate_size] if a.intermediate_size else []
        if a.is_moe:  # each token's k expert outputs (gate, up) and the router's probabilities
            widths.append(a.moe_intermediate_size * a.experts_per_token)
        ffn = max((2 * F32 * w * ub for w in widths), default=0) + 2 * hidden
        if a.is_moe:
            ffn += F32 * a.num_experts * ub
        peak = max(peak, ffn)
    if output:  # logits of every ubatch token and the final norm
        peak = max(peak, F32 * a.vocab_size * ub + hidden)
    return peak


GGUF_BASE = {role: base for base, role in ROLE_OF.items()}  # the estimator's roles -> GGUF tensor base names


def gguf_name(t: Tensor, output_norm: bool = False) -> str:
    """The GGUF name of a tensor group as -ot patterns see it (llama-arch.cpp LLM_TENSOR_NAMES): 'blk.3.attn_q.weight',
    'blk.3.ffn_up_exps.weight', 'token_embd.weight', 'output.weight', 'output_norm.weight'. A layer's norms and
    biases are named by their role ('blk.3.norm.weight'): only the 'blk.N.' prefix of them matters to a pattern."""
    if t.layer < 0:
        return "output_norm.weight" if output_norm else "output.bias" if t.role == "bias" else f"{t.role}.weight"
    return f"blk.{t.layer}.{GGUF_BASE.get(t.role, t.role)}.{'bias' if t.role == 'bias' else 'weight'}"


def _output_norm(every: list[Tensor]) -> int:
    """The index of output_norm among a model's tensor groups (the last norm outside the blocks; -1 if none)."""
    return max((i for i, t in enumerate(every) if t.layer < 0 and t.role == "norm"), default=-1)


@functools.lru_cache(maxsize=256)
def _overridden(a: Architecture, text: str) -> tuple[int | None, ...]:
    """Per tensor group of `a` (tensors' order), the device the first matching -ot pattern gives it (-1: host
    memory; None: no pattern matches). llama_model::load_tensors' create_tensor searches each override's pattern in
    the tensor's name (std::regex_search) and takes the first that matches."""
    rules, every = override_rules(text), tensors(a)
    output_norm = _output_norm(every)
    return tuple(next((device for pattern, device in rules if pattern.search(gguf_name(t, i == output_norm))), None)
                 for i, t in enumerate(every))


def _placed(a: Architecture, s: ServeScenario, lay: Layout):
    r"""(tensor, bytes, device or -1 for host memory) for every weight tensor, as load_tensors places them: by layer
    (-ngl, --tensor-split), then the -ot overrides, then --n-cpu-moe's (common/arg.cpp appends its per-layer
    `blk\.N\.ffn_(up|down|gate|gate_up)_(ch|)exps` = CPU overrides; an -ot pattern given first matches first)."""
    checkpoint = a.checkpoint if s.weights == CHECKPOINT and a.checkpoint is not None \
        and a.checkpoint.format_id is not None else None
    fmt = weight_format(gguf_type(s))
    every = tensors(a)
    overridden = _overridden(a, s.override_tensor) if s.override_tensor else (None,) * len(every)
    output_norm = _output_norm(every)
    for i, t in enumerate(every):
        size = checkpoint.tensor_bytes(a, t) if checkpoint else tensor_bytes(fmt, t, a)
        if overridden[i] is not None:
            place = overridden[i]
        elif t.layer >= 0:
            place = lay.layer_device[t.layer]
            if t.is_expert and t.layer < s.n_cpu_moe:
                place = -1
        elif t.role in ("output", "bias") or i == output_norm:
            place = lay.output_device  # the output layer: output_norm, lm_head and its bias
        else:
            place = -1  # the input layer: token / position / per-layer embeddings
        yield t, size, place


def _offload_copy(a: Architecture, s: ServeScenario, lay: Layout, ub: int) -> int:
    """ggml_backend_sched's op offload (ggml/src/ggml-cuda/ggml-cuda.cu, ggml_backend_cuda_device_offload_op:
    get_op_batch_size(op) >= 32, GET_ROWS excluded): a mat-mul whose weight sits in host memory runs on the first
    GPU when the ubatch has at least 32 tokens, and the weight is copied into that GPU's compute buffer as an input
    of the split. The largest copy with the op's f32 input and output is a floor of CUDA0's compute buffer. The token
    embedding's GET_ROWS stays on the CPU, but a tied embedding is also the lm_head: llama_model::load_tensors creates
    `output` from token_embd with TENSOR_DUPLICATED (src/llama-model.cpp; in the output layer's buffer type, and the
    same tensor when that is token_embd's), so with the output layer on the host its mat-mul is offloaded and copied
    like an untied output matrix. This holds with no layer offloaded too (-ngl 0): llama_prepare_model_devices
    (src/llama.cpp) gives the model every GPU whatever -ngl says, so the scheduler has CUDA0 to offload to
    (llama_cpp-ik357-3: 'offloaded 0/95 layers', 'CUDA0 compute buffer size = 742.00 MiB')."""
    if ub < OFFLOAD_MIN_BATCH:
        return 0
    peak = 0
    for t, size, place in _placed(a, s, lay):
        tied_head = t.role == "token_embd" and a.tie_word_embeddings and lay.output_device < 0
        if place < 0 and t.is_matrix and (t.role != "token_embd" or tied_head):
            per_token = a.experts_per_token if t.is_expert and a.experts_per_token else 1
            peak = max(peak, size + F32 * ub * (t.rows * per_token + t.cols))
    return peak


def host_matrices(s: ServeScenario) -> tuple[int, int]:
    """(dense, expert) bytes of the weight matrices that `s` leaves in host memory, as `plan` places them (-ngl, its
    --fit, --n-cpu-moe, -ot): what the CPU reads for a token, or what op offload copies to the GPU for a ubatch. The
    token embedding is left out (a token reads one row of it, GET_ROWS on the CPU) unless it is also the lm_head of
    an output layer in host memory (tied embeddings)."""
    a, lay = s.model, plan(s)[0].layout
    dense = expert = 0
    for t, size, place in _placed(a, s, lay):
        if place >= 0 or not t.is_matrix:
            continue
        if t.role == "token_embd" and not (a.tie_word_embeddings and lay.output_device < 0):
            continue
        if t.is_expert:
            expert += size
        else:
            dense += size
    return dense, expert


def _weights_by_place(a: Architecture, s: ServeScenario, lay: Layout) -> dict:
    out: dict[int, int] = {}
    embedding = 0
    for t, size, place in _placed(a, s, lay):
        if t.layer < 0 and t.role == "token_embd":
            embedding = size
        out[place] = out.get(place, 0) + size
    if a.tie_word_embeddings and lay.output_device >= 0:
        out[lay.output_device] = out.get(lay.output_device, 0) + embedding  # TENSOR_DUPLICATED output copy
    return out


def startup(a: Architecture, s: ServeScenario, ngl: int, n_ctx: int, slots: int, unified: bool) -> Startup:
    devices = s.tensor_parallel
    ub = min(s.max_num_batched_tokens or DEFAULT_UBATCH, DEFAULT_BATCH)
    lay = layout(a, ngl, split_shares(s))
    ctx = context(a, n_ctx, slots, unified, ub)
    ub = min(ub, ctx.n_ctx)
    ctx = Context(ctx.n_ctx, ctx.n_ctx_seq, ctx.slots, ctx.unified, ctx.swa_cells, ub)
    model = _weights_by_place(a, s, lay)
    kv: dict[int, int] = {}
    for il in range(a.num_layers):
        place = lay.layer_device[il]
        kv[place] = kv.get(place, 0) + layer_kv_bytes(a, il, ctx, s.kv_dtype)
    compute: dict[int, int] = {}
    for d in range(devices):
        layers = [il for il in range(a.num_layers) if lay.layer_device[il] == d]
        if layers or lay.output_device == d:
            compute[d] = _compute_peaks(a, s, ctx, layers, lay.output_device == d)
    copy = _offload_copy(a, s, lay, ub) if devices else 0
    if copy:
        compute[0] = max(compute.get(0, 0), copy)
    cpu_layers = [il for il in range(a.num_layers) if lay.layer_device[il] < 0]
    mask = (F16 if s.flash_attention else F32) * ctx.n_ctx * ub
    compute[-1] = F32 * a.hidden_size * ub + mask + _compute_peaks(a, s, ctx, cpu_layers, lay.output_device < 0)
    return Startup(lay, ctx, model, kv, compute, F32 * a.vocab_size * slots)


def _gpu_total(st: Startup, d: int) -> int:
    return st.model.get(d, 0) + st.kv.get(d, 0) + st.compute.get(d, 0)


def fits(st: Startup, gpu_bytes: int, devices: int, margin: int = 0) -> bool:
    return all(_gpu_total(st, d) + margin <= gpu_bytes for d in range(devices))


def resolve(s: ServeScenario, *, n_ctx: int, slots: int, unified: bool, ctx_set: bool,
            gpu_bytes: int) -> tuple[Startup, list[str]]:
    """The start-up, after `--fit on` when -ngl is auto (-1): the context is lowered first (down to 4096, only when
    -c was not given), then layers leave the GPU, until every device keeps 1024 MiB free."""
    a: Architecture = s.model
    full = a.num_layers + 1
    ngl = full if s.n_gpu_layers < 0 else s.n_gpu_layers
    st = startup(a, s, ngl, n_ctx, slots, unified)
    notes: list[str] = []
    devices = s.tensor_parallel
    if s.n_gpu_layers >= 0 or fits(st, gpu_bytes, devices, FIT_MARGIN):
        return st, notes
    if not ctx_set and n_ctx > FIT_MIN_CTX:
        low, high = FIT_MIN_CTX // CTX_PAD, n_ctx // CTX_PAD
        if fits(startup(a, s, ngl, low * CTX_PAD, slots, unified), gpu_bytes, devices, FIT_MARGIN):
            while low < high:
                mid = (low + high + 1) // 2
                if fits(startup(a, s, ngl, mid * CTX_PAD, slots, unified), gpu_bytes, devices, FIT_MARGIN):
                    low = mid
                else:
                    high = mid - 1
            st = startup(a, s, ngl, low * CTX_PAD, slots, unified)
            notes.append(f"--fit: context reduced from {n_ctx:,} to {low * CTX_PAD:,} tokens to leave 1024 MiB free")
            return st, notes
        n_ctx = FIT_MIN_CTX
        notes.append(f"--fit: context reduced to {FIT_MIN_CTX:,} tokens (fit_params_min_ctx)")
    low, high = 0, full
    while low < high:
        mid = (low + high + 1) // 2
        if fits(startup(a, s, mid, n_ctx, slots, unified), gpu_bytes, devices, FIT_MARGIN):
            low = mid
        else:
            high = mid - 1
    notes.append(f"--fit: {low}/{full} layers on the GPU to leave 1024 MiB free on every device")
    return startup(a, s, low, n_ctx, slots, unified), notes


def _mib(num_bytes: int) -> str:
    return f"{num_bytes / MiB:.2f}"


def startup_log(st: Startup, a: Architecture, s: ServeScenario, gpu_bytes: int) -> tuple[list[str], list[str]]:
    """(log lines, refusal) in llama.cpp's words; allocations run model -> KV -> compute on each device."""
    n, devices = a.num_layers, s.tensor_parallel
    repeating = sum(1 for d in st.layout.layer_device if d >= 0)
    log = [f"load_tensors: offloading {repeating} repeating layers to GPU"]
    if st.layout.output_device >= 0:
        log.append("load_tensors: offloading output layer to GPU")
    log.append(f"load_tensors: offloaded {repeating + (st.layout.output_device >= 0)}/{n + 1} layers to GPU")
    log += [f"load_tensors:        CUDA{d} model buffer size = {_mib(st.model.get(d, 0))} MiB"
            for d in range(devices) if st.model.get(d, 0)]
    log.append(f"load_tensors:   CPU_Mapped model buffer size = {_mib(st.model.get(-1, 0))} MiB")
    c = st.ctx
    log += [f"llama_context: n_seq_max     = {c.slots}", f"llama_context: n_ctx         = {c.n_ctx}",
            f"llama_context: n_ctx_seq     = {c.n_ctx_seq}", f"llama_context: n_batch       = {DEFAULT_BATCH}",
            f"llama_context: n_ubatch      = {c.ubatch}",
            f"llama_context: flash_attn    = {'enabled' if s.flash_attention else 'disabled'}",
            f"llama_context:  CUDA_Host  output buffer size = {_mib(st.output_buffer)} MiB"]
    if st.kv.get(-1, 0):
        log.append(f"llama_kv_cache:  CUDA_Host KV buffer size = {_mib(st.kv[-1])} MiB")
    log += [f"llama_kv_cache:      CUDA{d} KV buffer size = {_mib(st.kv[d])} MiB" for d in range(devices)
            if st.kv.get(d, 0)]
    log += [f"llama_context:      CUDA{d} compute buffer size = {_mib(st.compute[d])} MiB" for d in range(devices)
            if d in st.compute]
    log.append(f"llama_context:  CUDA_Host compute buffer size = {_mib(st.compute[-1])} MiB")
    for d in range(devices):
        used = 0
        for size in (st.model.get(d, 0), st.kv.get(d, 0), st.compute.get(d, 0)):
            if used + size > gpu_bytes:
                return log, [f"{REFUSAL}ggml_backend_cuda_buffer_type_alloc_buffer: allocating {_mib(size)} MiB on "
                             f"device {d}: cudaMalloc failed: out of memory"]
            used += size
    return log, []


def report(engine: str, s: ServeScenario, st: Startup, gpu_bytes: int, notes: list[str], settings: tuple,
           command_line: str, extra_log: tuple[str, ...] = ()) -> ServeReport:
    a: Architecture = s.model
    log, refusal = startup_log(st, a, s, gpu_bytes)
    devices = s.tensor_parallel
    busiest = max(range(devices), key=lambda d: _gpu_total(st, d))
    host = st.model.get(-1, 0) + st.kv.get(-1, 0) + st.compute.get(-1, 0) + st.output_buffer
    slot = st.ctx.n_ctx_seq
    warnings = list(refusal)
    if st.ctx.n_ctx_seq == 0:  # fewer cells than slots: each slot would get none
        warnings.insert(0, f"{REFUSAL}-c {st.ctx.n_ctx} over {st.ctx.slots} slots leaves no context per slot "
                           "(n_ctx / n_parallel = 0): raise -c or lower -np")
    if slot > s.context_length:
        warnings.append(f"the slot context ({slot}) exceeds the training context of the model "
                        f"({s.context_length}) - capping")
        slot = s.context_length
    if s.kv_dtype == "fp8":
        warnings.insert(0, f"{REFUSAL}Unsupported cache type: f8 (common/arg.cpp kv_cache_type_from_str; llama.cpp's "
                           "cache types are f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)")
    if s.kv_dtype not in ("bf16", "fp32") and not s.flash_attention:
        warnings.append("a quantized V cache needs flash attention (-fa on): llama.cpp refuses -ctv "
                        f"{CACHE_TYPE_NAMES.get(s.kv_dtype, s.kv_dtype)} without it")
    components = {"weights": st.model.get(busiest, 0), "activations": st.compute.get(busiest, 0),
                  "kv_cache": st.kv.get(busiest, 0)}
    notes = notes + [
        f"{engine} on {devices} x {catalog.gpu(s.gpu).name}: the most loaded device is CUDA{busiest}; host RAM "
        f"holds the CPU model buffer ({_mib(st.model.get(-1, 0))} MiB, mmapped), the CPU layers' KV, the host compute "
        "buffer and the output buffer",
        f"Weights: GGUF {gguf_type(s).upper()} tensor by tensor (llama-quantize's recipe, estimator/formats.py); the "
        "token embedding stays on the CPU",
        (f"--tensor-split {s.tensor_split}: the layers split in these shares over {devices} devices" if s.tensor_split
         else "tensor_parallel = the devices of --tensor-split, layers split in equal shares (llama.cpp's default "
              "split follows each device's free memory; all devices here are the same GPU)"),
        "The CUDA context, cuBLAS workspaces and the flash-attention kernels' f16 copies of a quantized cache come "
        "from outside these buffers (a few hundred MiB per device)",
    ]
    return make_report(
        engine, components, gpus=devices, gpu_bytes=gpu_bytes, budget_bytes=gpu_bytes, kv_cache_tokens=st.ctx.n_ctx,
        # requests of a slot's full length the cache holds at once: every slot with split caches, one with the
        # unified cache the 4 automatic slots share
        max_concurrency=st.ctx.n_ctx / st.ctx.n_ctx_seq if st.ctx.n_ctx_seq else 0.0, max_model_len=slot,
        max_model_len_that_fits=slot if not refusal else 0, host_bytes=host, settings=settings,
        log=tuple(extra_log) + tuple(log), warnings=tuple(warnings), assumptions=tuple(notes + list(a.notes)),
        command=command_line)


def plan(s: ServeScenario) -> tuple[Startup, list[str]]:
    """llama-server's start-up for `s`: the bytes per device by buffer (validation compares them with the logs)."""
    auto = s.max_num_seqs == 0
    slots = AUTO_SLOTS if auto else s.max_num_seqs
    n_ctx = s.max_model_len or s.context_length
    return resolve(s, n_ctx=n_ctx, slots=slots, unified=auto, ctx_set=s.max_model_len > 0,
                   gpu_bytes=catalog.gpu(s.gpu).memory_bytes)


def estimate(s: ServeScenario) -> ServeReport:
    g = catalog.gpu(s.gpu)
    auto = s.max_num_seqs == 0
    slots = AUTO_SLOTS if auto else s.max_num_seqs
    st, notes = plan(s)
    if auto:
        notes.insert(0, "n_parallel is set to auto, using n_parallel = 4 and kv_unified = true")
    settings = (("n_ctx", st.ctx.n_ctx), ("n_parallel", slots), ("kv_unified", st.ctx.unified),
                ("n_ubatch", st.ctx.ubatch), ("n_gpu_layers", st.layout.offloaded),
                ("cache_type", CACHE_TYPE_NAMES.get(s.kv_dtype, s.kv_dtype)))
    return report("llama.cpp", s, st, g.memory_bytes, notes, settings, command(s))


def command(s: ServeScenario) -> str:
    """The `llama-server` command line of the scenario (options left at llama-server's defaults are omitted)."""
    name = s.model_id or s.model.name or "MODEL"
    if not name.endswith(".gguf"):
        name = f"{name.rsplit('/', 1)[-1].replace(' ', '-')}-{gguf_type(s).upper()}.gguf"
    parts = ["llama-server -m", shlex.quote(name)]
    if s.n_gpu_layers >= 0:  # unset: "auto", llama-server's --fit chooses
        parts.append(f"-ngl {s.n_gpu_layers}")
    if s.max_model_len:
        parts.append(f"-c {s.max_model_len}")
    if s.max_num_seqs:
        parts.append(f"-np {s.max_num_seqs}")
    if s.max_num_batched_tokens:
        parts.append(f"-ub {s.max_num_batched_tokens}")
    if s.kv_dtype != "bf16":
        name = CACHE_TYPE_NAMES.get(s.kv_dtype, s.kv_dtype)
        parts.append(f"-ctk {name} -ctv {name}")
    parts.append(f"-fa {'on' if s.flash_attention else 'off'}")
    if s.context_override:
        parts.append(f"--override-kv {gguf_arch(s.model)}.context_length=int:{s.context_override}")
    if s.override_tensor:
        parts.append(f"-ot {shlex.quote(s.override_tensor)}")
    if s.n_cpu_moe:
        parts.append("--cpu-moe" if s.n_cpu_moe == CPU_MOE_ALL else f"--n-cpu-moe {s.n_cpu_moe}")
    if s.tensor_parallel > 1 or s.tensor_split:
        parts.append("--tensor-split " + (s.tensor_split or ",".join("1" for _ in range(s.tensor_parallel))))
    return " ".join(parts)


# Command-line import (estimator/engines/command.py)
PROGRAMS = ("llama-server", "llama-cli", "llama.cpp")  # the binaries, and the ghcr.io/ggml-org/llama.cpp image
MODEL_FLAGS = ("-m", "--model", "-hf", "--hf-repo")
CACHE_TYPES_READ = {"f16": "bf16", "bf16": "bf16", "f32": "fp32", "q8_0": "q8_0", "q5_0": "q5_0", "q5_1": "q5_0",
                    "q4_0": "q4_0", "q4_1": "q4_0", "iq4_nl": "q4_0"}


def _cache_type(text: str) -> str:
    if text.lower() not in CACHE_TYPES_READ:
        raise ValueError(f"cache type {text!r} is not one of {', '.join(CACHE_TYPES_READ)}")
    return CACHE_TYPES_READ[text.lower()]


def _ngl(text: str) -> int:
    if text.lower() in ("auto", "all"):
        return -1
    value = int(text)
    return -1 if value < 0 else value


def _flash(text: str) -> bool:
    if text.lower() not in ("on", "off", "auto", "1", "0", "true", "false"):
        raise ValueError(f"-fa takes on, off or auto, got {text!r}")
    return text.lower() not in ("off", "0", "false")


def _split(text: str) -> dict:
    """-ts 3,1: the shares, and the devices they name (Tensor parallel)."""
    split = canonical_split(text)
    return {"tensor_split": split, "tensor_parallel": len(split.split(","))}


# GGUF architecture names (llama.cpp gguf-py/gguf/constants.py MODEL_ARCH_NAMES) of the config model_types that are
# not the same word: the key --override-kv writes the trained context to (<arch>.context_length)
GGUF_ARCHES = {"qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe", "gemma3_text": "gemma3", "mistral": "llama",
               "deepseek_v2": "deepseek2", "deepseek_v3": "deepseek2", "gpt_oss": "gpt-oss"}


def gguf_arch(a: Architecture) -> str:
    """The GGUF general.architecture of a model, from its config's model_type."""
    return GGUF_ARCHES.get(a.model_type, a.model_type.replace("_", ""))


def _override_kv(text: str) -> dict:
    """--override-kv KEY=TYPE:VALUE (common/arg.cpp string_parse_kv_override): the trained context when the key is
    <arch>.context_length, read by llama_model_loader as n_ctx_train; other keys are not modelled ({})."""
    key, eq, typed = text.partition("=")
    kind, colon, value = typed.partition(":")
    if not (eq and colon):
        raise ValueError(f"--override-kv takes KEY=TYPE:VALUE, got {text[:60]!r}")
    if not key.endswith(".context_length") or kind != "int":
        return {}
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"{key} must be a whole number of tokens, got {value[:20]!r}")
    return {"context_override": int(value)}


FLAGS = {
    "-ngl": ("n_gpu_layers", _ngl), "--n-gpu-layers": ("n_gpu_layers", _ngl), "--gpu-layers": ("n_gpu_layers", _ngl),
    "--n-cpu-moe": ("n_cpu_moe", int), "-ncmoe": ("n_cpu_moe", int),
    "-c": ("max_model_len", int), "--ctx-size": ("max_model_len", int),
    "-np": ("max_num_seqs", int), "--parallel": ("max_num_seqs", int),
    "-ub": ("max_num_batched_tokens", int), "--ubatch-size": ("max_num_batched_tokens", int),
    "-ctk": ("kv_dtype", _cache_type), "--cache-type-k": ("kv_dtype", _cache_type),
    "-fa": ("flash_attention", _flash), "--flash-attn": ("flash_attention", _flash),
    "-ts": ("tensor_split", _split), "--tensor-split": ("tensor_split", _split),
    "-ot": ("override_tensor", canonical_overrides), "--override-tensor": ("override_tensor", canonical_overrides),
    "--override-kv": ("context_override", _override_kv),
}
SWITCHES = {"--cpu-moe": ("n_cpu_moe", CPU_MOE_ALL), "-cmoe": ("n_cpu_moe", CPU_MOE_ALL)}
BARE_VALUES = {"-fa": ("flash_attention", True), "--flash-attn": ("flash_attention", True)}  # a switch until 2025
REPEATABLE = ("override_tensor",)  # each -ot appends its overrides to the ones before (parse_tensor_buffer_overrides)
