"""Post-training objectives (SFT, DPO, ORPO, KTO, GRPO): what each adds to one training step's memory.

Follows TRL's trainers (huggingface/trl at commit f2cd57710ae345ea6428ae95363267fcf38a3dc8, version 1.10.0.dev0):
trl/trainer/dpo_trainer.py, trl/experimental/orpo/orpo_trainer.py, trl/trainer/kto_trainer.py,
trl/trainer/grpo_trainer.py and their configs (dpo_config.py, kto_config.py, grpo_config.py).

    sft   the trained forward on b sequences of s tokens, HF's fp32 loss head (finetune.py, unchanged)
    dpo   chosen and rejected concatenated into ONE forward of 2b sequences (`_compute_loss`: the collator
          `torch.cat`s them); log-probs by `selective_log_softmax` on the 16-bit logits; then the reference
          forward under no_grad, WHILE the policy's activations and logits are alive
    orpo  the same 2b forward, no reference model; plus an nn.CrossEntropyLoss (NLL) on the chosen half
    kto   b completions (each desirable or not) and b mismatched "KL" completions; the KL forward of the policy
          runs under no_grad before the trained one; the reference model scores both after it
    grpo  per_device_train_batch_size counts completions; generation first (transformers generate in the
          trainer, or a colocated vLLM engine holding its gpu_memory_utilization share of the GPU), then the
          trained forward on b prompt + completion sequences whose logits cover the completion only
          (`logits_to_keep`); a reference model only when beta > 0 (default 0.0 since TRL PR #3516, May 2025),
          scored under no_grad before the trained forward

Reference model (DPO, KTO; GRPO with beta > 0): full fine-tuning loads a second copy of the model
(`create_model_from_path`) in the policy's 16-bit dtype, frozen; ZeRO-3 / FSDP shard it like the policy
(`prepare_deepspeed`, `prepare_fsdp`). With peft (LoRA, QLoRA) there is no second copy: the reference is the
base model with the adapter disabled (`use_adapter(model, adapter_name=None)`). `precompute_ref_log_probs`
(DPO, KTO) scores the data set once before training: no reference copy and no reference forward in the step.

Loss head of TRL's log-probs (`selective_log_softmax`, trl/trainer/utils.py): on 16-bit logits it loops over the
rows, `log_softmax` of each row saved for backward. At the start of backward that is 2 x 16-bit per logit: the saved
log-softmax and the logits' gradient; the logits themselves are gone, as `compute_loss` returns the loss only.
While the reference model scores the batch (DPO, KTO), the policy's logits (held by the model output) and the saved
log-softmax are alive: 2 x 16-bit per logit too. Measured (validation/objectives.py `trace_dpo`, validation/results.csv
cases `llama-dpo-*`): both within 0.2%.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .architecture import Architecture, parameter_counts
from .kv_cache import kv_cache_bytes
from .units import BF16_BYTES, FP32_BYTES, bytes_from_gb

OBJECTIVES = ("sft", "dpo", "orpo", "kto", "grpo")
OBJECTIVE_LABELS = {"sft": "SFT (supervised)", "dpo": "DPO", "orpo": "ORPO", "kto": "KTO", "grpo": "GRPO"}
TRL_COMMIT = "huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8"

# Defaults of TRL's configs at TRL_COMMIT (the scenario's defaults follow them)
GRPO_NUM_GENERATIONS = 8  # grpo_config.py num_generations
GRPO_MAX_COMPLETION_LENGTH = 512  # grpo_config.py max_completion_length
GRPO_BETA = 0.0  # grpo_config.py beta: "If 0.0 (default), the reference model is not loaded"
VLLM_GPU_MEMORY_UTILIZATION = 0.3  # grpo_config.py vllm_gpu_memory_utilization (use_vllm, vllm_mode="colocate")

# Sequences in the trained forward per sequence of the micro-batch (b): DPO and ORPO concatenate chosen and rejected
PAIRED = {"dpo": 2, "orpo": 2}
# Objectives with a reference model (GRPO only when beta > 0)
WITH_REFERENCE = ("dpo", "kto")
# selective_log_softmax on 16-bit logits, at the start of backward: the saved row log-softmax and the logits'
# gradient; during a reference forward: the policy's logits and the saved log-softmax (module docstring)
TRL_LOGPS_LOGIT_COPIES = 2
# nn.CrossEntropyLoss on the chosen half's logits (ORPO's NLL term, orpo_trainer.py `cross_entropy_loss`): its saved
# log-softmax and that log-softmax's gradient, in the logits' dtype
CROSS_ENTROPY_LOGIT_COPIES = 2


@dataclass(frozen=True)
class ObjectiveStep:
    """What the objective changes in one training step of `finetune.detailed_finetune`."""

    sequences: int  # sequences in the trained forward (b, or 2b for chosen + rejected)
    seq_len: int  # tokens per trained sequence
    loss_head: int  # bytes of the loss head at the start of backward
    persistent: dict[str, int] = field(default_factory=dict)  # held all step: reference_model, generation_engine
    phases: dict[str, dict[str, int]] = field(default_factory=dict)  # extra phases: name -> transient components
    with_activations: tuple[str, ...] = ()  # extra phases during which the policy's saved activations are alive
    notes: tuple[str, ...] = ()
    loss_note: str = ""  # how the loss head is counted ("": HF's fp32 loss head, finetune.py's own note)


OBJECTIVE_PHASE_NOTES = {
    "generation": "GRPO generates the completions (transformers generate): the rollouts' KV cache is alive",
    "reference forward": "the reference model scores the batch under no_grad: its logits are alive",
}


def has_reference(s) -> bool:
    """Whether the step scores with a reference model (precomputed log-probs take it out of the step)."""
    if s.objective == "grpo":
        return s.beta > 0
    return s.objective in WITH_REFERENCE and not s.precompute_ref_log_probs


def _reference_copy_bytes(s, technique: str) -> int:
    """A second copy of the weights in 16-bit for full fine-tuning (fp32 in the fp32 regime); none with peft."""
    if technique != "full" or not has_reference(s):
        return 0
    per_param = FP32_BYTES if s.regime == "fp32" else BF16_BYTES
    shards = s.num_gpus if s.zero_stage == 3 else 1
    return -(-parameter_counts(s.model).total * per_param // shards)


def _logits_forward_bytes(a: Architecture, sequences: int, tokens: int, act_bytes: int) -> int:
    """A no-grad scoring forward's loss head: its logits and one row's log-softmax (selective_log_softmax loops)."""
    return act_bytes * a.vocab_size * tokens * (sequences + 1)


def objective_step(s, technique: str, sft_loss_head: int) -> ObjectiveStep:
    """The trained forward's shape, the loss head and the extra components of `s.objective` (SFT: unchanged)."""
    a: Architecture = s.model
    A = s.activation_bits // 8
    b, seq = s.batch_size, s.seq_len
    if s.objective == "sft":
        return ObjectiveStep(b, seq, sft_loss_head)
    V = a.vocab_size
    sequences = b * PAIRED.get(s.objective, 1)
    scored = s.max_completion_length if s.objective == "grpo" else seq  # tokens whose logits exist
    loss_head = TRL_LOGPS_LOGIT_COPIES * A * sequences * scored * V
    notes = []
    if objective_checkpointing(s):
        notes.append(f"Gradient checkpointing on (auto): TRL's {s.objective.upper()}Config defaults it to True")
    if s.objective in PAIRED:
        notes.append(f"{s.objective.upper()}: chosen and rejected concatenated into one forward of 2b = {sequences} "
                     f"sequences of {seq:,} tokens")
    if s.objective == "orpo":
        loss_head += CROSS_ENTROPY_LOGIT_COPIES * A * b * seq * V
        notes.append("ORPO: no reference model; the NLL term adds a cross-entropy over the chosen half's logits")
    reference = _reference_copy_bytes(s, technique)
    persistent = {"reference_model": reference} if reference else {}
    phases, alive = {}, ()
    if has_reference(s):
        how = "a second frozen copy of the weights" if reference else "the base model with the adapter disabled"
        if s.objective == "grpo":  # scored in _generate_and_score_completions, before the trained forward
            phases["reference forward"] = {"reference_logits": _logits_forward_bytes(a, b, scored, A)}
        else:  # scored after the policy's forward (DPO _compute_loss, KTO _compute_loss), activations alive
            phases["reference forward"] = {"reference_logits": _logits_forward_bytes(a, sequences, seq, A),
                                           "logits": TRL_LOGPS_LOGIT_COPIES * A * sequences * seq * V}
            alive = ("reference forward",)
        notes.append(f"Reference model: {how}, scored under no_grad")
    elif s.objective in WITH_REFERENCE:
        notes.append("Reference log-probs precomputed before training: no reference model in the step")
    if s.objective == "grpo":
        notes.append(f"GRPO: b = {b} completions of {s.max_completion_length:,} tokens after a "
                     f"{seq - s.max_completion_length:,}-token prompt ({s.num_generations} per prompt); logits "
                     f"of the completion tokens only; beta = {s.beta:g}"
                     + (" (no reference model, TRL's default)" if s.beta == 0 else ""))
        if s.vllm_gpu_memory_utilization > 0:
            persistent["generation_engine"] = bytes_from_gb(s.vllm_gpu_memory_utilization * s.vllm_gpu_gb)
            notes.append(f"Generation: colocated vLLM reserves {s.vllm_gpu_memory_utilization:g} x "
                         f"{s.vllm_gpu_gb:g} GB for its weights copy and KV cache")
        else:
            phases["generation"] = {"rollout_cache": kv_cache_bytes(a, seq, b)}
            notes.append(f"Generation: transformers generate in the trainer, KV cache of {b} x {seq:,} tokens (one "
                         "generation batch per step: steps_per_generation = gradient_accumulation_steps = 1)")
    loss_note = (f"Loss head: TRL's selective_log_softmax on {8 * A}-bit logits, {TRL_LOGPS_LOGIT_COPIES} x {A} B x "
                 f"{sequences} x {scored:,} x vocab ({V:,})" + (" + the chosen half's cross-entropy"
                                                                if s.objective == "orpo" else ""))
    return ObjectiveStep(sequences, seq, loss_head, persistent, phases, alive, tuple(notes), loss_note)


def objective_checkpointing(s) -> bool:
    """Gradient checkpointing left on auto is on for DPO, ORPO, KTO and GRPO: TRL's DPOConfig, ORPOConfig, KTOConfig
    and GRPOConfig default `gradient_checkpointing` to True. (SFT keeps the estimator's own auto: on for QLoRA.)"""
    from .scenarios import AUTO  # scenarios imports this module for its inputs' defaults

    return s.gradient_checkpointing == AUTO and s.objective != "sft"


def check_objective(s) -> None:
    """ValueError for objective inputs that contradict each other (called by FinetuneScenario)."""
    if s.objective == "grpo" and s.max_completion_length >= s.seq_len:
        raise ValueError(f"max_completion_length must be below seq_len ({s.seq_len:,}, prompt + completion) for "
                         f"GRPO, got {s.max_completion_length:,}")
