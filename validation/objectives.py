"""DPO traced with fake tensors, and the published memory measurements of post-training objectives.

    trace_dpo(config, batch=1, seq=512, technique="full" | "lora", ...)   one DPO step, measured
    estimate_dpo(config, ...)                                              the estimator's numbers for it
    python -m validation objectives                                        published records vs the estimate

`trace_dpo` runs the step of TRL's DPOTrainer (huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8,
trl/trainer/dpo_trainer.py `_compute_loss`, trl/trainer/utils.py `selective_log_softmax`) on the real Hugging Face
model code: chosen and rejected concatenated into one forward of 2b sequences, per-row log-softmax of the 16-bit
logits, then the reference model's forward under no_grad (full fine-tuning: a second frozen copy; LoRA: the same
model with its adapter disabled), the sigmoid loss, backward and a fused AdamW step. TRL's entropy metric (computed
in no_grad chunks of 128 rows) is left out. Measured bytes are named like the estimator's components.
"""

from __future__ import annotations

import csv
import statistics
import time
from pathlib import Path

PUBLISHED_CSV = Path(__file__).with_name("published") / "objectives.csv"
DPO_BETA = 0.1  # DPOConfig.beta default (the value does not change memory)


def _selective_log_softmax(logits, index):
    """TRL's selective_log_softmax for 16-bit logits: a loop over the rows, log_softmax then gather."""
    import torch

    rows = [torch.log_softmax(row, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
            for row, labels in zip(logits, index)]
    return torch.stack(rows)


def trace_dpo(config, batch: int = 1, seq: int = 512, technique: str = "full", lora_rank: int = 16,
              lora_targets: str = "q,v", attn_impl: str = "sdpa", num_layers: int | None = None) -> dict:
    """One DPO step after an untracked warm-up step (AdamW creates its states). Measured bytes:

        weights            the policy's parameters;  reference_model: the reference copy's (0 with LoRA)
        activations        forward tensors live after the policy's forward, outside the loss head
        logits_saved       loss-head tensors live after the policy's log-probs (before the reference forward)
        phases             peak total of: forward, reference forward, backward, optimizer step
        peak, peak_phase
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from .build import build_model
    from .trace import _config_dict, _mark_logits, _optimizer, _remove
    from .tracker import (ACTIVATIONS, GRADIENTS, INPUTS, LOGITS, OPTIMIZER_STATES, OPTIMIZER_TEMPORARIES, TEMPORARIES,
                          WEIGHTS, MemoryTracker)

    cfg = _config_dict(config)
    fake = FakeTensorMode()
    t0 = time.perf_counter()
    lora = technique == "lora"
    model = build_model(cfg, fake_mode=fake, attn_impl=attn_impl, num_layers=num_layers,
                        lora_rank=lora_rank if lora else 0, lora_targets=lora_targets, train=True)
    reference = None if lora else build_model(cfg, fake_mode=fake, attn_impl=attn_impl, num_layers=num_layers)
    if reference is not None:
        reference.requires_grad_(False)
    vocab = model.config.get_text_config().vocab_size
    trainable = [p for p in model.parameters() if p.requires_grad]

    def step(ids, tracker=None):
        def phase(name, category):
            return tracker.phase(name, category) if tracker else _null()
        with phase("forward", ACTIVATIONS):
            outputs = model(input_ids=ids, attention_mask=mask, use_cache=False)
            logps = _selective_log_softmax(outputs.logits[..., :-1, :], ids[..., 1:]).sum(-1)
        chosen, rejected = logps.chunk(2, dim=0)
        saved = tracker.snapshot() if tracker else None
        with phase("reference forward", ACTIVATIONS), torch.no_grad():
            if reference is None:
                with model.disable_adapter():
                    ref_outputs = model(input_ids=ids, attention_mask=mask, use_cache=False)
            else:
                ref_outputs = reference(input_ids=ids, attention_mask=mask, use_cache=False)
            ref = _selective_log_softmax(ref_outputs.logits[..., :-1, :], ids[..., 1:]).sum(-1)
        ref_chosen, ref_rejected = ref.chunk(2, dim=0)
        loss = -torch.nn.functional.logsigmoid(DPO_BETA * ((chosen - ref_chosen) - (rejected - ref_rejected))).mean()
        del outputs, ref_outputs  # compute_loss returns the loss only: the model outputs go out of scope
        with phase("backward", TEMPORARIES):
            loss.backward()
        with phase("optimizer step", OPTIMIZER_TEMPORARIES):
            opt.step()
        opt.zero_grad(set_to_none=True)
        return saved

    with fake:
        ids = torch.randint(0, vocab, (2 * batch, seq))  # [chosen; rejected], as the collator concatenates them
        mask = torch.ones_like(ids)  # the collator's attention mask (no padding here)
        opt = _optimizer(trainable, "fused")
        step(ids)
    tracker = MemoryTracker()
    tracker.register(model=model, optimizer=opt, inputs=ids)
    reference_bytes = 0
    if reference is not None:
        reference_bytes = sum(p.untyped_storage().nbytes() for p in reference.parameters())
        for p in reference.parameters():
            tracker.add(p, WEIGHTS)
    handles = _mark_logits(model, tracker) + (_mark_logits(reference, tracker) if reference is not None else [])
    grads = [p.register_post_accumulate_grad_hook(lambda p: tracker.retag(p.grad, GRADIENTS)) for p in trainable]
    try:
        with fake, tracker:
            after_forward = step(ids, tracker)
    finally:
        _remove(handles + grads)
    phases = {name: p.total for name, p in tracker.peaks.items() if name != "setup"}
    peak_phase = max(phases, key=phases.get)
    return {"weights": tracker.live_bytes(WEIGHTS) - reference_bytes, "reference_model": reference_bytes,
            "optimizer_states": tracker.live_bytes(OPTIMIZER_STATES), "inputs": tracker.live_bytes(INPUTS),
            "activations": after_forward.get(ACTIVATIONS, 0), "logits_saved": after_forward.get(LOGITS, 0),
            "phases": phases, "peak": phases[peak_phase], "peak_phase": peak_phase,
            "wall_s": time.perf_counter() - t0}


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def estimate_dpo(config, batch: int = 1, seq: int = 512, technique: str = "full", lora_rank: int = 16,
                 lora_targets: str = "q,v", attn_impl: str = "sdpa", num_layers: int | None = None) -> dict:
    """The estimator's detailed DPO breakdown for a traced case (torch AdamW's bf16 states, no overhead): the
    components named as `trace_dpo` measures them and the total of every phase."""
    import estimator as est
    from estimator.finetune import detailed_finetune
    from estimator.objectives import objective_step

    from .compare import architecture

    s = est.FinetuneScenario(architecture(config, num_layers), technique=technique, objective="dpo",
                             optimizer_state_bits=16, batch_size=batch, seq_len=seq, lora_rank=lora_rank,
                             lora_targets=lora_targets, gradient_checkpointing=False,  # the trace checkpoints nothing
                             flash_attention=attn_impl != "eager", overhead_gb=0)
    b = detailed_finetune(s, technique)
    phases = dict(b.phases)
    shape = objective_step(s, technique, 0)
    persistent = sum(b.component(n) for n in ("weights", "reference_model", "master_weights", "optimizer_states"))
    return {"weights": b.component("weights"), "reference_model": b.component("reference_model"),
            "activations": phases["backward start"] - persistent - shape.loss_head,
            "logits_saved": shape.phases["reference forward"]["logits"],
            "reference_logits": shape.phases["reference forward"]["reference_logits"],
            "phase: reference forward": phases["reference forward"], "phase: backward": phases["backward start"],
            "phase: optimizer step": phases["optimizer step"], "peak": b.total}


# (row component, measured key): what the DPO cases compare
DPO_COMPONENTS = ("weights", "reference_model", "activations", "logits_saved", "reference_logits",
                  "phase: reference forward", "phase: backward", "phase: optimizer step", "peak")


def measured_dpo(m: dict) -> dict:
    """Flatten a trace_dpo result onto the row components (the reference forward's own bytes: its phase peak less
    what was alive before it)."""
    phases = m["phases"]
    before = m["weights"] + m["reference_model"] + m["optimizer_states"] + m["activations"] + m["logits_saved"]
    return {**m, "reference_logits": phases["reference forward"] - before - m["inputs"],
            **{f"phase: {name}": size for name, size in phases.items()}}


def dpo_rows(case, estimate: dict, measured: dict) -> list[dict]:
    """One results.csv row per DPO component (the columns of validation/matrix.py COLUMNS)."""
    from .compare import error_pct

    flat = measured_dpo(measured)
    return [{"case": case.name, "family": case.family, "scenario": case.scenario, "component": name,
             "estimate_bytes": int(estimate[name]), "measured_bytes": int(flat.get(name, 0)),
             "error_pct": round(error_pct(int(estimate[name]), int(flat.get(name, 0))), 3)} for name in DPO_COMPONENTS]


def load_published(path: Path = PUBLISHED_CSV) -> list[dict]:
    """The published records of validation/published/objectives.csv (one per compared number)."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def estimate_record(record: dict):
    """(scenario, the estimator's detailed breakdown) for a published record's settings (its own technique row)."""
    import estimator as est
    from estimator.finetune import detailed_finetune

    grpo = record["objective"] == "grpo"  # other objectives keep the input's default (unused)
    completion = int(record["max_completion_length"]) if grpo else est.objectives.GRPO_MAX_COMPLETION_LENGTH
    s = est.FinetuneScenario(
        est.catalog.model(record["model"]).architecture, objective=record["objective"],
        technique=record["technique"], regime=record["regime"], activation_bits=int(record["activation_bits"]),
        batch_size=int(record["batch"]), seq_len=int(record["seq_len"]),
        max_completion_length=completion,
        beta=float(record["beta"]), vllm_gpu_memory_utilization=float(record["vllm_share"]),
        gradient_checkpointing=record["gradient_checkpointing"] == "1", overhead_gb=float(record["overhead_gb"]))
    return s, detailed_finetune(s, s.technique)


def compare_published(records: list[dict] | None = None) -> list[dict]:
    """Each record with the estimate: error_pct for a number, `consistent` for an OOM / fit record."""
    from estimator.objectives import objective_step

    out = []
    for record in records if records is not None else load_published():
        s, b = estimate_record(record)
        if record["component"] in ("total", "oom", "fits"):
            gb = b.total / 1e9
        elif record["component"] == "rollout_cache":  # a phase of its own (generation), not in the peak's components
            gb = objective_step(s, s.technique, 0).phases["generation"]["rollout_cache"] / 1e9
        else:
            gb = b.component(record["component"]) / 1e9
        published = float(record["published_gb"])
        row = {"id": record["id"], "kind": record["kind"], "component": record["component"], "published_gb": published,
               "estimate_gb": round(gb, 2)}
        if record["kind"] == "oom":
            row["consistent"] = gb > published
        elif record["kind"] == "fits":
            row["consistent"] = gb <= published
        else:
            row["error_pct"] = round(100 * (gb - published) / published, 1)
        out.append(row)
    return out


def published_summary(rows: list[dict]) -> str:
    """One line per record and the median absolute error of the numeric records."""
    lines = [f"{'record':<34}{'kind':<8}{'component':<15}{'published GB':>13}{'estimate GB':>13}  error"]
    for r in rows:
        verdict = f"{r['error_pct']:+.1f}%" if "error_pct" in r else \
            ("consistent" if r["consistent"] else "INCONSISTENT") + f" ({r['kind']})"
        lines.append(f"{r['id']:<34}{r['kind']:<8}{r['component']:<15}{r['published_gb']:>13.1f}"
                     f"{r['estimate_gb']:>13.2f}  {verdict}")
    errors = [abs(r["error_pct"]) for r in rows if "error_pct" in r]
    checks = [r["consistent"] for r in rows if "consistent" in r]
    if errors:
        lines.append(f"\nmedian |error| over {len(errors)} numbers: {statistics.median(errors):.1f}%; "
                     f"OOM / fit records consistent: {sum(checks)} of {len(checks)}")
    return "\n".join(lines)
