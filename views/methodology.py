"""Methodology: every formula the app uses, its symbols, assumptions and sources, so an engineer can check
any number. Tables of formats, optimizers, regimes, KV dtypes and GPUs, and the worked example, are built
from the estimator's own constants, so this page cannot drift from the numbers the other pages show."""

import importlib

import pandas as pd
import streamlit as st

import estimator as est
from estimator import speed as speed_model
from estimator.formats import WEIGHT_FORMATS
from estimator.frameworks import FRAMEWORK_PRESETS
from estimator.kv_cache import KV_DTYPE_LABELS
from estimator.quick import REFERENCE_SHARE, REFERENCE_TOKENS
from estimator.training import OPTIMIZERS, QUICK_LORA_TRAINABLE_FRACTION, REGIMES, TECHNIQUE_LABELS
from ui import charts, chrome, links, tables
from validation import engines as engine_validation
from validation import load_engine_results, load_results, recipes, summary
from validation import speed as speed_validation

PAGE = "methodology"
MODULES = ("quick", "inference", "finetune", "formats", "kv_cache", "activations", "training", "sharding",
           "frameworks", "architecture", "hardware", "speed", "hf_config", "units")
load_results = st.cache_data(show_spinner=False)(load_results)  # the committed validation/results.csv
load_engine_results = st.cache_data(show_spinner=False)(load_engine_results)  # validation/engine_results.csv
load_speed_results = st.cache_data(show_spinner=False)(speed_validation.load_results)  # speed_results.csv


@st.cache_data(show_spinner=False)
def recipe_rows() -> list[dict]:
    """The published recipe peaks against the estimate under each framework's preset (validation/recipes.py)."""
    return recipes.run(write=False)


def preset_table() -> pd.DataFrame:
    """Every framework preset's settings, with the technique rows they apply to and their source."""
    return pd.DataFrame([{"Framework": f.label, "Input": s.field,
                          "Value": ("on" if s.value else "off") if isinstance(s.value, bool) else str(s.value),
                          "Rows": "all" if len(s.techniques) == 4 else ", ".join(s.techniques), "Source": s.source}
                         for f in FRAMEWORK_PRESETS.values() for s in f.settings])


def worked_example() -> pd.DataFrame:
    """The reference document's example, computed by the estimator: 7 B, concurrency 1, batch 1, 2,048 tokens."""
    model = est.ParamCount.from_billions(7)
    rows = [(f"Inference ({b.row})", b) for b in est.inference_table(est.InferenceScenario(model))]
    rows += [(TECHNIQUE_LABELS[b.row], b) for b in est.finetune_table(est.FinetuneScenario(model))]
    return tables.scenario_frame(rows)


slot = chrome.header(PAGE, "Methodology", "How every number in this app is computed, with its sources. All "
                                          "sizes are bytes per GPU; GB = 10^9 bytes, GiB = 2^30 bytes.")

st.markdown(r"""
The app has two methods. **Quick** is the reference document's rule of thumb (Alibaba Cloud PAI, *GPU memory
estimation for LLMs*): it needs only the parameter count. **Detailed** counts every tensor of the architecture,
read from a catalog model, any Hugging Face Hub id, a pasted `config.json` or a local `.gguf` file (GGUF: its
header only, read in the browser by `file.slice` in windows doubled from 256 KiB, as the CLI's `--gguf` reads it,
never the file; the architecture from llama.cpp's metadata keys and each tensor's stored bytes from its ggml type
and shape). A parameter count uses quick; the others use detailed (you can switch back to quick to compare). Every
estimate is a sum of named components, the same ones in the tables, the bars and the JSON export: weights, master
weights, KV cache, activations, logits, gradients, optimizer states and overhead.

**Reading a config.json.** Each supported `model_type` has a reader that follows its `transformers` config class
and modeling code (which tensors exist, their defaults, which layers are MoE or windowed). Any other decoder-only
config with the standard field names (`hidden_size`, `num_hidden_layers`, `num_attention_heads`,
`num_key_value_heads`, `head_dim`, `intermediate_size`, `vocab_size`, and `num_experts` / `num_experts_per_tok` /
`moe_intermediate_size` / `first_k_dense_replace` / `n_shared_experts` for MoE) is read by a **generic reader** as a
standard decoder (gated MLP, RMSNorm, grouped-query attention; DeepSeek's multi-head latent attention when it has
`kv_lora_rank`), from its nested `text_config` / `llm_config` / `language_config` when it is multimodal, and the
assumptions say so. It does not know a family's own tensors (Qwen3's q/k norms:
$2 d L$ parameters) or class defaults, and it refuses, by name, layers it would misread: Mamba layers
(`hybrid_override_pattern`) and linear attention outside the families below, and interleaved MoE layers with a
separate dense width (`interleave_moe_layer_step`) outside Llama 4.

**Linear attention (Qwen3-Next, Qwen3.5).** Gated DeltaNet layers replace attention on 3 of every 4 layers
(`layer_types`). They cache no tokens; each running sequence keeps a fixed **recurrent state** per layer: a conv
state of $(2 n_k d_k + n_v d_v) \times (\text{kernel} - 1)$ elements in the model dtype and a recurrent state of
$n_v \times d_v \times d_k$ elements (fp32 when the config's `mamba_ssm_dtype` says so), divided over tensor
parallelism (vLLM `mamba_utils.py`, `gated_delta_net_state_shape`). The state grows with concurrency, not with
context; only the full-attention layers add KV cache per token. Parameter counts equal transformers' model code.
Activations follow transformers' torch fallback (`torch_chunk_gated_delta_rule`, flash-linear-attention not
installed), traced to the byte: in training the fp32 chunk tensors it saves, in a prefill the ones alive when the
chunked output is reshaped after the chunk loop, about $4\,T n_v (5 d_k + 5 d_v + 3C)$ bytes with $C = 64$ and
$T = b \lceil s/C \rceil C$ padded tokens, plus the projections' 16-bit outputs. vLLM's and SGLang's pages keep
the flash-linear-attention kernels, which hold less.

**Mamba hybrids (Nemotron-H and Nemotron 3, Granite 4, Bamba, Falcon-H1, Jamba).** A Mamba-2 mixer has `in_proj`
($h \to 2 d_{in} + 2 G N + n_{ssm}$), a depthwise convolution over $x$, $B$, $C$, the per-head `dt_bias`, `A_log`
and `D`, a gated RMSNorm and `out_proj` ($d_{in} \to h$), where $d_{in}$ = Mamba heads $\times$ head dim, $G$ groups
and $N$ the state size. Each running sequence keeps, per Mamba layer, a conv state of
$(d_{in} + 2 G' N) / tp \times (\text{kernel} - 1)$ elements in the model dtype and an SSM state of
$n_{ssm} / tp \times \text{head dim} \times N$ (fp32 when `mamba_ssm_cache_dtype` says so), where $G' = G$, or $tp$
when $G$ does not divide by $tp$ (vLLM `mamba_utils.py`, `mamba2_state_shape`). Nemotron-H blocks hold one mixer
each (`hybrid_override_pattern`: M Mamba, * attention, E MoE, - MLP), so only the * blocks cache tokens; its
experts are squared-ReLU MLPs, run in a latent space in Nemotron 3 Super (`moe_latent_size`). Granite 4 alternates
Mamba and attention layers, each followed by a gated shared MLP (and routed experts); Bamba puts attention on
`attn_layer_indices`; Falcon-H1 runs attention and Mamba side by side in every layer. Jamba uses the original Mamba
mixer (`x_proj`, `dt_proj`, a state of $d_{in} / tp \times N$ per layer, vLLM `mamba1_state_shape`), attention every
`attn_layer_period`-th layer and experts every `expert_layer_period`-th. Activations count each layer's own
mixer and MLP; a Mamba-2 mixer saves for backward what mamba_ssm's fused kernel keeps (`zxbcdt`, the scan output
and the norm's statistics: $A\,t\,(3\,d_{in} + 2GN + n_{ssm}) + 4\,t\,G$) and, in inference, also holds the
scan's fp32 chunk states ($4\,b \lceil s/256 \rceil n_{ssm} P N$). These are read from the kernels' code, not traced.

**Llama 4.** MoE layers (every `interleave_moe_layer_step`-th) have one routed expert per token plus a shared
expert of the same width; the others a dense MLP of `intermediate_size_mlp`. Three of every four layers use
**chunked local attention** (`attention_chunk_size`, 8,192 tokens): a token attends only within its chunk, so those
layers cache at most one chunk per sequence (vLLM `ChunkedLocalAttentionSpec` frees finished chunks); every fourth
layer attends globally and keeps every token.

**Vision and audio towers.** A multimodal config's `vision_config` (and `audio_config`) is counted tensor by
tensor as transformers builds the encoder and its projector (Qwen2/2.5/3-VL, Qwen3.5, Llama 4, Gemma 3/4,
Mistral 3 / Pixtral, Kimi K2.5, Phi-4-multimodal, LLaVA with CLIP / SigLIP / Pixtral), and shown as its own
**vision tower** component: 16-bit (quantized checkpoints leave it out of their formats), split over tensor
parallelism as vLLM's default `--mm-encoder-tp-mode weights` does, and frozen when fine-tuning. The parameter
counts stay those of the language model; the assumptions add the towers' and how many context tokens a
1024 x 1024 image becomes in the family's processor (Qwen: smart resize to multiples of 28 or 32 px, one token
per 2 x 2 patches; Gemma 3: 256; Llama 4: 336 px tiles of 144 tokens plus a global view). **Images per
sequence** (Inference, with their width and height) add those tokens to every sequence: the KV cache and the
prefill see them as any other token; the encoder's own forward over the patches is not counted.

**Gemma 4.** Five sliding-window layers to one full-attention layer (`layer_types`); the full layers have their
own head size (`global_head_dim`, 512) and, with `attention_k_eq_v`, their own KV heads
(`num_global_key_value_heads`) and no `v_proj` (V is taken from `k_proj`'s output and normed apart, so K and V are
both cached). The last `num_kv_shared_layers` layers reuse an earlier layer's K and V: no projections, no cache.
Per-layer embeddings (`hidden_size_per_layer_input`) add a table of $V_{ple} \times L\,p$ and two projections per
layer; `enable_moe_block` adds routed experts next to every layer's dense MLP. **Gemma 3n** shares K and V the same
way (its last 15 of 35 layers by default), has per-layer MLP widths, per-layer embeddings, and in every layer an
AltUp block (`altup_num_inputs` copies of the hidden state) and a LAuReL low-rank residual (`laurel_rank`).

Symbols: $P$ total parameters, $P_a$ active parameters per token (MoE), $b$ batch size, $s$ sequence length,
$C$ concurrent requests, $h$ hidden size, $L$ layers, $V$ vocabulary, $n_h$ query heads, $n_{kv}$ KV heads,
$d$ head dimension, $I$ MLP width, $A$ bytes of an activation (2 for 16-bit), $t = b \cdot s$ tokens in a step,
$tp$ tensor-parallel GPUs, $N$ data-parallel GPUs.
""")

st.header("Quick method (the reference document)")
st.markdown(f"""
The reference document measured activations and KV cache at about 10% of the 16-bit weights for a 7 B model at
batch 1 and {REFERENCE_TOKENS:,} tokens; the app scales that reference $R$ linearly with the tokens.
""")
with st.container(key=f"{chrome.NARROW_ONLY}-formulas"):
    st.caption("Formulas wider than the screen scroll sideways: swipe them; a shadow marks the side with more.")
st.latex(rf"R = {float(REFERENCE_SHARE):g} \times 2\,\text{{B}} \times P_a \times \frac{{b\,s}}{{{REFERENCE_TOKENS}}}")
st.latex(r"\text{weights} = P \times \tfrac{\text{bits}}{8} \qquad \text{activations} = R \times "
         r"\tfrac{\text{activation bits}}{16} \qquad \text{KV cache} = R \times C \times "
         r"\tfrac{\text{KV bytes}}{2} \qquad \text{overhead} = 2\ \text{GB}")
st.markdown(f"""
Fine-tuning adds, per **trainable** parameter $P_t$ (all $P$ for full fine-tuning,
{float(QUICK_LORA_TRAINABLE_FRACTION):.0%} of $P$ for LoRA and QLoRA, as the reference document assumes):
gradients of 2 B (4 B when training in 32-bit), and optimizer states of 4 B each (SGD 0, SGD + momentum 1,
RMSProp 1, Adam/AdamW 2 states). QLoRA stores the frozen weights at 8 or 4 bits. With tensor parallelism the
weights, KV cache and activations are divided by $tp$; with ZeRO the states are sharded as in the detailed method
below. The reference document's example, computed by this app:
""")
st.dataframe(worked_example(), hide_index=True)

st.header("Detailed method: inference")
st.markdown("""
Per GPU of a tensor-parallel group of $tp$ GPUs, for $C$ requests of $b$ sequences of $s$ tokens:

- **Weights**: every tensor of the architecture in the chosen format. 2-D weights are split over $tp$; norms and
  biases are replicated. Formats count their scales and zero points (table below). bitsandbytes, GPTQ, AWQ and FP8
  quantize only the linear layers inside the decoder blocks, so embeddings, `lm_head` and norms stay 16-bit;
  MXFP4 (gpt-oss) covers only the MoE experts; GGUF follows llama.cpp's per-tensor recipes (`_K_M` mixes give
  `attn_v` and `ffn_down` more bits on some layers, the output matrix Q6_K).
- **KV cache** (the rows 16/8/4-bit keep the KV dtype you choose):
""")
st.latex(r"\text{KV} = b\,C \times \sum_{\text{layers}} 2 \cdot \max\!\left(1, \left\lfloor \tfrac{n_{kv}}{tp} "
         r"\right\rfloor\right) \cdot d \cdot \min(s, W_\ell) \cdot \text{bytes}_{kv}")
st.markdown("""
  $W_\\ell$ is the sliding window of windowed layers (Mistral v0.1, Gemma 2/3, gpt-oss), the chunk of Llama 4's
  chunked layers, and infinite otherwise; layers without attention (linear attention, Mamba) add none.
  MLA models (DeepSeek-V2/V3) cache one latent of $r_{kv} + d_{rope}$ elements per layer and token, replicated on
  every tensor-parallel GPU, as vLLM, SGLang, llama.cpp and Hugging Face transformers 5 do
  (`modeling_deepseek_v3.py` updates the cache with the latent before `kv_b_proj`); untick *Cache the MLA latent*
  for engines without MLA support (and transformers 4.x), which cache full K and V per head. DeepSeek-V3.2's
  lightning indexer caches one more key of `index_head_dim` per layer and token, as vLLM stores it: fp8 values and a
  4-byte scale per 128 (`DeepseekV32IndexerCache`), 132 B for the published config (transformers keeps it in
  bf16, 256 B).
- **Activations**: the largest working set of one decoder layer while prefilling $b \\times s$ tokens without
  autograd: the embedding output, layer input and residual ($3Ath$) plus the larger of the attention phase
  (normed input, q, k, v and output: $Ath + At(2\\,n_h d + 2\\,n_{kv} d + n_h d)/tp$; eager attention adds the
  fp32 scores and 16-bit probabilities, $(4 + A)\\,n_h\\,t\\,s/tp$) and the MLP phase (normed input and
  gate, up, product: $Ath + 3AtI/tp$; MoE uses $k \\cdot I_e$ plus the tokens gathered per expert).
  Gated DeltaNet layers add their fp32 chunk phase (linear attention above). Under eager attention DeepSeek-V3.2's
  indexer adds its own phase, as transformers runs it: fp32 scores of every key for each index head with the keys
  copied per query position, $4\\,t\\,T\\,(d_I + H_I)$ bytes, and its top-k as a dense mask during attention.
- **Logits**: fp32 logits of the last position of each running sequence, $4\\,b\\,C\\,V$ (sampling).
- **Overhead**: the CUDA context, allocator caching and kernel workspaces, 2 GB per GPU by default (the
  reference document's 1-2 GB; measured contexts are 0.3-0.8 GiB before any caching).
""")

st.header("Detailed method: fine-tuning")
st.markdown("""
One training step on a micro-batch of $b \\times s$ tokens. Memory peaks at one of these phases, and the app
reports the largest (its components sum to that peak; the table's *Peak phase* column names it):

- **backward start** = weights + master weights + optimizer states + activations + logits (gradients not yet
  allocated);
- **optimizer step** = weights + master weights + optimizer states + gradients + the step's temporaries (fused
  AdamW: none; foreach, the CUDA default: a copy of every trained parameter; single-tensor: two copies of the
  largest tensor);
- **backward end** (tied embeddings, full fine-tuning) = all gradients + two $V \\times h$ buffers while the
  embedding's gradient is summed into the `lm_head` gradient;
- **backward recompute** (gradient checkpointing) = all gradients + one layer's activations rebuilt;
  **backward recompute, last layer** = the first layer rebuilt, beside every layer's checkpointed input (with
  activation offloading, the one brought back) and the rotary tables, with only the head's gradients (all of them
  when gradients accumulate).

**Weights, gradients, master weights** per parameter, by training regime (*full* fine-tuning):
""")
st.table(pd.DataFrame([{"Regime": r.label, "Weights (B)": r.weight_bytes, "Gradients (B)": r.grad_bytes,
                        "fp32 master (B)": r.master_bytes} for r in REGIMES.values()]))
st.markdown("""
**Optimizer states** per trainable parameter (fp32 states unless *Optimizer state precision* says 16-bit, as torch
AdamW keeps them for bf16 weights; 8-bit optimizers pack uint8 states with one fp32 absmax per 256 values;
Adafactor keeps rows + columns per matrix):
""")
st.table(pd.DataFrame([{"Optimizer": o.label, "States": "factored" if o.factored else str(o.states),
                        "Bytes per state": f"{float(o.state_bytes):.4g}" if o.state_bytes is not None else "4 (fp32)",
                        "Source": o.source} for o in OPTIMIZERS.values()]))
st.markdown("""
**LoRA / QLoRA.** Each adapted linear of shape $d_{out} \\times d_{in}$ gets $r\\,(d_{in} + d_{out})$ trainable
parameters (PEFT `lora_A`, `lora_B`), kept in fp32 (PEFT's default), with fp32 gradients and optimizer states.
The frozen base is 16-bit for LoRA; for QLoRA its linears are INT8 (8-bit) or NF4 with double quantization
(4.127 bits, 4-bit), and `prepare_model_for_kbit_training` casts the remaining parameters (embeddings, `lm_head`,
norms) to fp32. Routed MoE experts are adapted only by *all-linear*: on transformers 5, peft 0.21 maps it onto the
fused 3-D expert weights (`lora.ParamWrapper`, which keeps a merged copy of every expert for backward) and the router
of Mixtral, Qwen3-MoE and DeepSeek; gpt-oss' expert modules are not reached.

**Activations saved for backward**, per layer (flash/sdpa attention, no dropout; measured tensor by tensor):
""")
st.latex(r"\underbrace{n_{norm}\,(4th + 4t + 2Ath)}_{\text{RMSNorms}} + "
         r"\underbrace{At\,(2\,n_h d + 2\,n_{kv} d) + 4\,n_h t}_{\text{attention}} + "
         r"\underbrace{4\,A\,t\,I}_{\text{gated MLP}}")
st.markdown("""
A frozen base (LoRA) saves less (no normalized copies, 3 MLP tensors, nothing for the frozen embedding) but
peft's fp32 adapters keep an fp32 copy of every adapted layer's input (16-bit adapters share the inputs).
Eager attention adds the $(4 + A)\\,n_h\\,b\\,s^2$ softmax; sliding-window layers under sdpa get an explicit
mask ($A\\,b\\,s^2$) and repeated K and V. Gradient checkpointing keeps $A\\,t\\,h$ per layer at backward start
and rebuilds one layer at a time later. MoE layers save, per routed token, the gathered input, four expert-width
tensors and the expert output, plus the router's probabilities and indices. Family details measured by the
traces are modelled too: Qwen3 / Gemma 3 q-k norms, Gemma's fp32 norm products and soft-capping, gpt-oss'
attention sinks and clamped experts, DeepSeek's MLA norms and fp32 router. A Gemma 3n layer also keeps its
$n$ AltUp copies twice ($2\\,n\\,A\\,t\\,h$: the repeated innovation and the corrected output), eight RMSNorms of
width $h$ in fp32 ($8\\,t\\,h$ each with a trained weight: the input copy and the normalized tensor), the q/k/v norms,
LAuReL's rank-$r$ output and the per-layer input gate ($3\\,A\\,t\\,p$); with checkpointing each layer's input is
its $n$ copies, and a prefill holds the $n$-copy input, the $n$ predictions and up to ten hidden-size tensors per
layer.
**Logits**: Hugging Face upcasts logits to fp32 for the loss: $12\\,t\\,V$ bytes at the start of backward
($14\\,t\\,V$ with Gemma 2's final soft-capping).

**ZeRO / FSDP** over $N$ data-parallel GPUs: stage 1 shards optimizer states and master weights, stage 2 also
gradients (FSDP SHARD_GRAD_OP), stage 3 also weights (FSDP FULL_SHARD) plus a buffer for the gathered current and
prefetched layer ($2 \\times 2\\,\\text{B} \\times$ largest layer). Optimizer offload moves optimizer states, master
weights and (from stage 2) gradient shards to CPU memory, shown as *CPU memory per GPU*.
""")

st.header("Memory savers and framework presets")
st.markdown(r"""
Training stacks switch on savers the transformers + peft baseline does not have; each is an input (the
Fine-tuning page's *Memory savers*), and a **framework preset** sets the ones that framework really uses. A preset
is data (`estimator/frameworks.py`): the inputs it sets and where the framework sets them; the formulas are the
same for a value typed by hand. `hf` (transformers + peft) sets nothing: it is the baseline pinned to the traces.

- **Loss** (`--loss`). *standard*: Hugging Face's fp32 logits, $12\,t\,V$ at backward start. *chunked*: torchtune's
  `CEWithChunkedOutputLoss` (8 chunks; TRL's `chunked_nll` is counted the same, an upper bound since it also drops
  ignored tokens): every chunk's `log_softmax` saves its fp32 output ($4\,t\,V$), and the largest moment is the last
  chunk's cross-entropy at the end of the forward, with every chunk's 16-bit logits and that chunk's fp32 copy:
  $4tV + \max(A\,tV + 4tV/8,\; 8tV/8)$ = 6.5 B per logit (traced, `validation/FINDINGS.md` 48). *fused*: fused
  linear cross-entropy (Liger-Kernel `fused_linear_cross_entropy.py`; Unsloth; Apple's Cut Cross-Entropy holds
  less): no full logits, the hidden states' gradient $A\,t\,h$, one chunk of logits of
  $\text{next\_pow2}(t / \lceil V/h \rceil)$ tokens, the fp32 per-token loss, and lm_head's gradient computed in
  the forward when lm_head trains. *chunked-compiled*: torchtune's chunked loss with `compile: True`, whose compiled
  cross-entropy saves each chunk's 16-bit logits and two fp32 row statistics (checked with saved-tensor hooks):
  $A\,tV + 8t$, + one chunk's 16-bit gradient and lm_head's gradient at backward start. *shifted*: the standard loss
  of transformers 4.46-4.47, which also copied the shifted fp32 logits: $(A + 4)\,tV + 8\,b(s-1)V$ = 14 B per logit
  in the forward (traced); for records that ran it.
- **Optimizer step in backward** (torchtune `optimizer_in_bwd`): each parameter steps in a post-accumulate-grad
  hook and frees its gradient, so the step phase holds one gradient, the largest tensor's (traced to the byte).
  It cannot accumulate gradients (torchtune refuses; so does the estimator).
- **Activation offloading** (torchtune `OffloadActivations`, TRL `activation_offloading`, Unsloth's offloaded
  checkpoints): the decoder layers' saved activations (with checkpointing: the layer inputs) go to pinned CPU
  memory, reported as CPU memory; the GPU keeps the layer in flight (the largest one) and the loss head.
- **Parameter offload** (ZeRO-3 `offload_param`, FSDP `CPUOffload(offload_params=True)`, needs ZeRO stage 3):
  weights, gradients and optimizer states in CPU memory; the GPU holds the gathered layers.
- **Gradient accumulation** (`--grad-accum N`): the effective batch is $b \times N \times$ GPUs; from the second
  micro-batch on the gradients accumulated so far stay alive beside the activations, a phase of its own.
- **QLoRA: fp32 non-quantized weights**: peft's `prepare_model_for_kbit_training` casts embeddings, lm_head and
  norms to fp32; torchtune's QLoRA, Unsloth and LLaMA-Factory keep them 16-bit. With the cast the embedding output
  is fp32, so the residual stream is too (type promotion): the checkpointed layer inputs are 4 B per element.
- **Not modelled**: `torch.compile` beyond the chunked loss (compiled layers fuse ops and save less),
  sequence packing (with FlashAttention's variable-length kernel a packed row of $s$ tokens costs what one sequence
  of $s$ tokens does, so enter the packed length; without it the mask is $s^2$), frameworks' own LoRA kernels
  (Unsloth's fused LoRA MLP saves two I-wide tensors instead of four) and their backward temporaries.
""")
st.dataframe(preset_table(), hide_index=True)
st.markdown("""
**Against published measurements**: `python -m validation recipes` runs the estimate under each record's framework
preset for the recipes in `validation/published/training_recipes.json` (Unsloth's context-length tables, torchtune's
README, LLaMA-Factory's wiki; each with its source and a quote) and writes `validation/recipes_results.csv`.
*capacity* records are the longest run that fits a card, so their peak is the card's memory. A record that ran older
code than its preset follows, or an option the preset leaves at its default, sets that input itself (column
*record_settings*, with the reason and source in the JSON): the Hugging Face + FA2 rows ran transformers 4.46-4.47's
shifted loss, torchtune's README rows its compiled loss. Unsloth's rows stay under the measured peaks at long context
(to -13% in its docs, -40% in LLaMA-Factory's wiki at 100,000 tokens): its docs' table is one straight line
extrapolated per card, steeper than the bytes per token its code holds, and the wiki's two columns miss the same
170-180 KB per token through different code; `validation/FINDINGS.md` (recipes) gives the numbers per record.
""")
recipe_frame = pd.DataFrame(recipe_rows())
st.dataframe(recipe_frame[["record", "framework", "seq_len", "measured_gib", "estimate_gib", "error_pct",
                           "measured_by", "record_settings", "source"]], hide_index=True,
             column_config={"source": st.column_config.LinkColumn("source")})
st.caption(f"{len(recipe_frame)} records; median |error| {recipe_frame['error_pct'].abs().median():.1f}%. By "
           "framework: " + ", ".join(f"{name} {group['error_pct'].abs().median():.1f}% ({len(group)})"
                                     for name, group in recipe_frame.groupby("framework")) + ".")

st.header("Validated against real model code")
st.markdown("""
`python -m validation` runs the Hugging Face model code of every scenario below with fake tensors on
the CPU (no weights, no GPU), measures every live tensor by category and compares it with the detailed
estimate; large models are traced at full width with 2-3 layers and extrapolated per layer. What does not match
yet is listed in `validation/FINDINGS.md`. Trace your own config with `python -m validation trace`.
""")
validation_rows = load_results()
st.dataframe(pd.DataFrame([{"Component": name, "Cases": v["cases"],
                            "Median |error| (%)": round(v["median_abs_error_pct"], 2),
                            "Worst error (%)": round(v["worst_error_pct"], 2), "Worst case": v["worst_case"]}
                           for name, v in summary(validation_rows).items()]), hide_index=True)
st.plotly_chart(charts.validation_scatter(validation_rows), config={"displaylogo": False})

st.header("Serving engines")
st.markdown("""
With an engine chosen (or `python -m estimator serve`), the answer follows that engine's own accounting, read from its
source (`estimator/engines/`). **vLLM (V1)**: each GPU's budget is `gpu_memory_utilization x total` (the total CUDA
reports); from it vLLM subtracts the weights ("Model loading took"), the peak of its profiling run (a forward of
`max_num_batched_tokens` tokens, then the sampler over `min(max_num_seqs, max_num_batched_tokens)` requests: 38 bytes
per logit while it sorts them for top-k / top-p (v0.11-0.16), 14 where it filters them without a sort (v0.17's Triton
filter over 8 requests or more, FlashInfer's, the default before v0.11 and from v0.21); 6 on Model Runner V2, the
default for dense models since v0.25, whose dummy requests filter nothing), the memory outside PyTorch that grew
during start-up (loaded kernels; NCCL buffers with tensor parallelism) and, since v0.21 on the V1 runner, its estimate
of the CUDA graphs (`profile_cudagraph_memory` captures the two largest sizes of each mode: the first reading, the
pool of a decode step at the largest capture size
with its warm-up, is kept once, the second is charged to every other graph of the mode, over the capture sizes and
modes the release captures: PIECEWISE for every size, FULL decode graphs up to `max_num_seqs` since v0.11, up to 992 /
1,024 tokens for gpt-oss; what a graph keeps per layer is the median over the published logs, ~15% off on 50 captures,
~16% held out, and the estimate's one reading per graph about half that, ~3% off on the 4 logs that print it, one of
them -66%, so this term is the least certain; Model Runner V2 estimates 0, so its graphs come on top of the budget, as
before v0.21); the rest is the KV cache, cut into pages of `block_size` tokens
shared by groups of layers (full attention, sliding window with the prefill chunk, chunked local, MLA, one page per
request for Mamba / linear-attention state). Defaults follow the GPU (>= 70 GiB and not an A100: 1,024 sequences and
8,192 batched tokens, else 256 and 2,048). **SGLang**: the static pool is `mem_fraction_static` of the memory free
before loading, KV tokens = (free after weights - the reserve) / bytes per token. **llama.cpp**: `-ngl N` puts the last
N layers on the GPU (the output layer only when N exceeds the layers), KV per offloaded layer, compute buffers sized by
`-ub`, the rest in host RAM; **Ollama** launches llama-server with its own `num_ctx` by VRAM tier. **transformers**: the
detailed estimate above.

Options that move memory, each from the engine's source: `--cpu-offload-gb` (vLLM, SGLang) moves the first layers'
parameters to host memory one at a time until the budget is reached; `--enable-lora` (vLLM) gives every decoder linear
`--max-loras` slots of rank `--max-lora-rank` (an A of rank x input and a B of output x rank of its shard, per expert
in MoE layers from v0.12) inside "Model loading took", and captures every CUDA graph twice; `--max-model-len auto`
(vLLM v0.14+) lowers the length to the longest request the KV cache holds; a RoPE-scaling override raises the longest
length each engine accepts, by its own rule (vLLM: YaRN's `original_max_position_embeddings x factor`; SGLang keeps the
config's when the override names the original), and an override of the trained context (`max_position_embeddings`,
llama.cpp's `--override-kv <arch>.context_length`) is where both start; llama.cpp's `-ot pattern=CPU|CUDAn` places
every tensor whose GGUF name
the first pattern matches; SGLang on AMD Instinct GPUs takes aiter's custom all-reduce and quick reduce buffers at
distributed init, before it measures the memory its pool shares.

Each engine is compared with start-up logs users published (`validation/engine_logs/`, with source and version);
`python -m validation engines` writes `validation/engine_results.csv`. `v0` rows are vLLM's older engine, whose
profiling differed; they are shown, not modelled. Misses are explained in `validation/FINDINGS.md` and
`validation/engine_logs/FINDINGS_engines.md`.
""")
engine_groups = engine_validation.groups(load_engine_results())  # + "<quantity>, every input stated" groups
refusals = [r for group in engine_groups.values() for r in group if r["quantity"] == "refusal"]
if engine_groups:
    st.caption(f"Whether the engine starts or refuses: the estimate agrees with "
               f"{sum(r['logged'] == r['estimate'] for r in refusals)} of {len(refusals)} logged start-ups. "
               f"\"{engine_validation.STATED}\": the same quantity over the records whose source gives every input "
               "(the others take an engine default or a stand-in for what their log leaves out; each record's "
               "`unstated` list says what).")
    st.dataframe(pd.DataFrame([
        {"engine": engine, "era": era, "quantity": quantity, "Records": len(group),
         "Median |error| (%)": round(pd.Series([abs(r["error_pct"]) for r in group]).median(), 1),
         "Worst |error| (%)": round(pd.Series([abs(r["error_pct"]) for r in group]).max(), 1)}
        for (engine, era, quantity), group in sorted(engine_groups.items()) if quantity != "refusal"]),
        hide_index=True)

st.header("Speed")
st.markdown("""
With a target GPU (the *Speed* tab, `--gpu` on the command line), each row also gets a speed from a roofline per
phase (`estimator/speed.py`, its notes are below under *Module notes*): a **decode** step reads the weights it
touches (MoE: the experts its tokens route to, $1-(1-k/E)^B$ of them for $B$ sequences) and each sequence's KV cache,
and does $2N_{active}$ FLOPs per token plus attention; a **prefill** does $2N_{active}$ FLOPs per prompt token plus
causal attention; each takes
$\\max(\\text{bytes}/(\\text{bandwidth}\\cdot e_{bw}),\\ \\text{FLOPs}/(\\text{peak}\\cdot e_{flops}))$
(attention's FLOPs at the 16-bit peak even under FP8 weights: it multiplies by the 16-bit KV cache; the rest at the
peak of the kernels that run it: FP8 W8A8 GEMMs at the FP8 rate, llama.cpp's GGUF prompt GEMMs, its int8 tensor-core
MMQ kernels, at the INT8 rate, 4x the 16-bit FP32-accumulate figure on GeForce cards; Apple GPUs at cores x 128 ALUs x
2 x clock, an M5 at Apple's "over 4x" that for its Neural Accelerators; a llama.cpp prompt runs in ubatches of `-ub`
tokens, each reading the weights again),
plus two all-reduces per layer with tensor parallelism (each the link's latency for a small message, from published
measurements: the custom all-reduce over NVLink 8.8 µs, NCCL over PCIe 15.9 µs, Infinity Fabric 6.3 µs; plus its
bytes over the link), and a decode step also the engine's cost beyond its bytes
$t_{step}$ (kernel launches and each short kernel's floor, scheduling, sampling: most of a small model's step at
batch 1): for an engine's own key $L \\cdot t_{layer}$, a cost per decoder layer, since each of the $L$ layers runs
a dozen or more kernels one after another, each taking microseconds however few bytes it reads; for a key shared by
every engine (whose layers run different kernels) a fixed cost per step. The
bytes are the memory estimate's own (weights in the chosen format, the KV cache in its dtype). The efficiencies
$e_{bw}$, $e_{flops}$ are not one factor: each is the median achieved fraction of published measurements of an
engine on a GPU class and kernel kind (16-bit; FP8 on a GPU with FP8 tensor cores, multiplied without
dequantisation; other quantized formats, dequantised in the GEMM; for a prompt's forward, a MoE's grouped expert
GEMMs apart, and a dense weight-only format with 16-bit, its dequantisation amortised over the prompt's rows)
(`validation/published/speed.csv`, every record
with its URL, quote and settings; `python -m validation speed --derive`); $e_{bw}$ and $t_{step}$ are fitted
together (measured step time = $t_{step}$ + roofline step time / $e_{bw}$, Theil-Sen; an engine's key fits the same
line with both times divided by the layers) where a key has three records or more. A prompt's attention runs in
another kernel than its GEMMs and can reach another fraction: where records time one model's prompts on one GPU at
three or more lengths (over which attention's time at the peak grows by at least half the GEMMs'), measured
time / GEMM time at the peak =
$1/e_{flops}$ + (attention time / GEMM time at the peak) / $e_{attention}$ is a line whose slope gives the attention
kernel's fraction (Theil-Sen; phase "attention" in the table below): vLLM's Triton attention, which it forces for
Gemma 4's 512-wide heads on GPUs without FlashAttention 4, reaches far less of the peak than FlashAttention, and so
does the Triton prefix kernel vLLM's V0 engine ran on ROCm for every chunk of a long-context prompt (chunked by
default, 512 tokens a step, above 32K tokens before v0.6.5). A sweep may run at any tensor parallelism (both parts
divide by the GPUs). Without such a sweep the attention runs at $e_{flops}$. Records of a superseded
engine generation (vLLM before v0.8.0, the V0 engine) set only that generation's keys, so the estimate describes the
engines run today. A key whose records all ran on one GPU is that GPU's (SGLang's on the H20, vLLM V0's on the
A100 80GB), not its class's, and a class key shared by every engine needs records of two engines. A TTFT timed by a
serving client for a prompt under 2,000 tokens is compared apart ("prefill, short TTFT"): the request's fixed cost
(HTTP, chat template, tokenisation, scheduling) is most of it, and no efficiency is fitted to it; such TTFTs of one
request at a time on one GPU set the engine's fixed cost per request instead (the median of measured TTFT - the
estimated forward, three records or more: `request_costs` in speed.json; an engine with fewer, SGLang, takes the
median pooled with vLLM's, whose servers do the same work per request), which `serve`'s TTFT adds to the forward.
Every TTFT a serving client timed holds that cost, a long prompt's too, so those set the prefill efficiency with it
taken out (an 8,192-token prompt's TTFT on a B200 is ~100 ms, ~28 of them the request's).
Fine-tuning: $6N$
FLOPs per token ($4N$ for LoRA's frozen base, $+2N$ with gradient checkpointing) at the median achieved fraction of
the peak of published training runs of the framework on the GPU class (torchtitan, torchtune, llm.q; by the same
rule, falling back to the GPU class, then to every run; Llama 3's 38-43% MFU, arXiv:2407.21783, only if no run set
one). `serve` follows llama-bench: pp512 and tg128 at batch 1. Each speed's assumptions end with how far
the estimates of its engine on its GPU class came from these records (the table below, per phase: median
error, each record left out, and the median signed error of the speed).
""")
speed_rows = load_speed_results()
compared = [r for r in speed_rows if not r["skip"]]
if compared:
    frame = pd.DataFrame(compared)
    for column in ("error_pct", "loo_error_pct"):
        frame[column] = frame[column].astype(float).abs()
    st.dataframe(frame.groupby(["engine", "gpu_class", "phase"]).agg(
        Records=("id", "count"), **{"Median |error| (%)": ("error_pct", "median"),
                                    "Each left out (%)": ("loo_error_pct", "median")}).round(1).reset_index(),
                 hide_index=True)
    st.plotly_chart(charts.speed_scatter(speed_rows), config={"displaylogo": False}, key="methodology.speed")
    st.caption("One colour per engine; circles decode, squares prefill, diamonds serving throughput, triangles "
               "training tokens/s (TTFT, TPOT and MFU are in the table only). Hollow points are held out of every "
               "efficiency; 'each left out' re-derives the efficiencies without the record. Outliers are explained "
               "in `validation/FINDINGS.md`.")
st.dataframe(pd.DataFrame([{"Engine": e[0] or "any", "GPU class (or GPU)": e[1] or "any", "Phase": e[2],
                            "Kernel": e[3] or "any", "Efficiency": value.value,
                            "Step cost (ms)": round(value.step_s * 1e3, 2),
                            "Layer cost (us)": round(value.layer_s * 1e6, 1), "Records": len(value.records)}
                           for e, value in speed_model._efficiency_table().items()]), hide_index=True)
for engine, host in speed_model._host_offload().items():
    st.markdown(f"Weights `--cpu-offload-gb` keeps in host memory ({engine}): every forward, prompt and decode step, "
                f"reads them over the GPU's host link (PCIe, `host_link_gb_s` in the GPU catalog) in place, at "
                f"**{host.value:.3f}** of its peak: the median over {len(host.records)} published measurements "
                f"({host.spread[0]:.2f}-{host.spread[1]:.2f}; `validation/published/offload.csv`, "
                "`python -m validation speed`; the outliers in `validation/FINDINGS.md`).")
for (engine, phase), host in speed_model._host_compute().items():
    st.markdown(f"Weights {engine} leaves in host RAM (-ngl below the layers, --n-cpu-moe, -ot ...=CPU), "
                f"{speed_model.HOST_PHASES[phase]}: **{host.value:.3f}**, the median over {len(host.records)} "
                f"published runs ({host.spread[0]:.2f}-{host.spread[1]:.2f}; `validation/published/host_speed.csv`); "
                "the RAM's bandwidth is the scenario's input; a prompt's copy to the GPU is priced at the host link's "
                "peak (no fraction derived: `validation/FINDINGS.md`).")

st.header("Formats and KV dtypes")
st.dataframe(pd.DataFrame([{"Id (link)": f.id, "Format": f.label, "Bits per weight": round(float(f.bits), 4),
                            "Quantizes": {"all": "every tensor", "linear": "decoder-block linears",
                                          "experts": "MoE experts", "gguf": "llama.cpp recipe"}[f.scope],
                            "Source": f.source} for f in WEIGHT_FORMATS.values()]), hide_index=True)
st.dataframe(pd.DataFrame([{"Id (link)": k, "KV-cache dtype": label,
                            "Bytes per element": round(float(est.KV_DTYPE_BYTES[k]), 4)}
                           for k, label in KV_DTYPE_LABELS.items()]), hide_index=True)

st.header("GPU fit")
st.markdown("""
A GPU's capacity is what a framework can allocate (`nvidia-smi` total or CUDA's reported total), not the marketed
number: an "RTX 4090 24 GB" has 24 GiB = 25.8 GB. *GPUs needed* re-runs the estimate at 1, 2, 4, ... GPUs with the
same sharding as the estimate itself: tensor parallelism for inference (counts that divide the attention heads, as
vLLM requires), ZeRO-3 for training when the scenario does not shard by itself. It is never total / capacity: a
70 B model at 16-bit does not fit 2 x 80 GB just because 140 < 160. *Longest sequence* and *most concurrent
requests* are the largest values whose estimate still fits the target GPU at that count (binary search; memory
never decreases as they grow).

On Apple silicon the GPU shares the Mac's memory and may wire only macOS's default share of it: about 2/3 of RAM
up to 36 GB and 3/4 above (96 GB of a 128 GB Mac), which is the usable memory here. `sudo sysctl
iogpu.wired_limit_mb=<MB>` raises it until the next restart; leave several GB to macOS. Macs combine only over
RDMA over Thunderbolt 5 (macOS 26.2+, [TN3205](https://developer.apple.com/documentation/technotes/tn3205-low-latency-communication-with-rdma-over-thunderbolt)),
which the M4 Pro / Max, M3 Ultra and M5 Pro / Max Macs have, and MLX's tensor parallelism needs them cabled in a full
mesh ([MLX docs](https://ml-explore.github.io/mlx/build/html/usage/distributed.html)): a mesh of 8 would take 7
ports on each Mac, so at most 4 Macs, 10 GB/s each way. Other Macs are one device (pipeline stages over TCP, as exo
or llama.cpp's RPC run them, are not modelled), and fine-tuning is one Mac: MLX trains across Macs by data
parallelism, each holding the whole model, and ZeRO / FSDP need collectives Apple GPUs lack.
""")
st.dataframe(pd.DataFrame([{"GPU": g.name, "Marketed (GB)": g.memory_gb,
                            "Usable (GB)": round(g.memory_bytes / est.GB, 2), "Bandwidth (GB/s)": g.bandwidth_gb_s,
                            "GPU-to-GPU link": g.interconnect, "Link (GB/s each way)": g.interconnect_gb_s,
                            "Most combined": g.max_devices, "Source": g.source} for g in est.gpus()]), hide_index=True)

st.header("When quick and detailed differ")
st.markdown("""
- **KV cache**: quick scales with the parameter count; detailed uses the real heads. Grouped-query attention
  (Llama 3, Qwen, Mistral) caches 4-8x less than the rule of thumb assumes, MLA far less again, and sliding-window
  layers stop growing at the window.
- **Training logits**: the fp32 loss head ($12\\,t\\,V$) is 3 GB for Llama 3 8B at 2,048 tokens; quick has no such term.
- **LoRA and QLoRA**: detailed counts the real adapter size and the fp32 upcasts, so QLoRA can need more than the
  4-bit weights suggest, and more than LoRA at long sequences.
- **Formats**: quick uses exact 16/8/4 bits for every parameter; detailed keeps embeddings and norms 16-bit and
  adds the formats' scales (NF4 with double quantization is 4.127 bits, AWQ 4.156).
- **MoE**: both keep every expert in memory; quick's activations use the active parameters, detailed routes each
  token through $k$ experts.
""")

st.header("Sources")
st.markdown("""
- Reference document: Alibaba Cloud PAI, *GPU memory estimation for LLMs* (the quick method and its example).
- Rajbhandari et al. 2020, *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models* (model states,
  stages 1-3); DeepSpeed `stage_1_and_2.py` and `stage3.py` estimators.
- Korthikanti et al. 2022, *Reducing Activation Recomputation in Large Transformer Models* (activation accounting),
  adjusted to Hugging Face Llama-family layers as measured with fake tensors.
- Dettmers et al. 2023, *QLoRA* (NF4, double quantization, paged optimizers); bitsandbytes `functional.py`,
  `optim/optimizer.py` (8-bit states, block size 256).
- Hugging Face `transformers` 5.x modeling files (parameter counts per family, `ForCausalLMLoss`), PEFT
  `lora.Linear` and `prepare_model_for_kbit_training`.
- vLLM 0.33 (`get_num_kv_heads`, MLA and sliding-window KV specs, FP8/GPTQ/AWQ layouts), llama.cpp
  (`ggml-common.h` block sizes, `llama-quant.cpp` recipes, `llama-kv-cache.cpp`).
- GPU specifications: vendor datasheets; each GPU's source is in the table above.
""")
with st.expander("The estimator's module notes (the formulas as the code states them)", icon=":material/code:"):
    for name in MODULES:
        module = importlib.import_module(f"estimator.{name}")
        st.markdown(f"**`estimator/{name}.py`**")
        st.code((module.__doc__ or "").strip(), language=None, wrap_lines=True)
st.caption(f"Share links are version {links.VERSION}: a link keeps working as long as that version is supported.")
chrome.footer(PAGE, slot)
