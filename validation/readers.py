"""Every causal-LM model_type transformers knows, built small and compared with the estimator's reader of its config.

    python -m validation.readers            # one line per model_type; exit 1 if a family with a reader differs

For each `model_type` in transformers' `MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`, the config class's defaults are shrunk to
a small model (hidden 256, 4 layers, 4 heads, 2 KV heads, MLP 512, vocabulary 1,000, 4 experts; only the fields the
class has), built on the meta device, and its `sum(p.numel())` compared with `parameter_counts(...).total` of the
estimator reading the same config (`config.to_dict()`). A family with a reader of its own must be equal; the generic
reader's misses are listed so that the next reader to write is the one users would hit. Multimodal classes include
their towers in transformers' count: they are compared with the language model plus the towers
(estimator/vision.py), and a tower that module does not know is listed as "tower not counted".
This is how the StarCoder2, Command R, Nemotron-4 and Pythia readers were found missing (issue 12).
"""

from __future__ import annotations

import signal
import sys
import warnings

SMALL = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=512, vocab_size=1000, num_experts=4, num_local_experts=4, n_routed_experts=4,
             num_experts_per_tok=2, moe_intermediate_size=64, head_dim=64, max_position_embeddings=4096)
BUILD_SECONDS = 20


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout


def compare(model_type: str) -> tuple[str, int | None, int | None]:
    """(status, transformers' count, the estimator's count) for one model_type."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    import estimator as est

    signal.signal(signal.SIGALRM, _alarm)
    try:
        signal.alarm(BUILD_SECONDS)
        defaults = AutoConfig.for_model(model_type).to_dict()
        config = AutoConfig.for_model(model_type, **{k: v for k, v in SMALL.items() if k in defaults})
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        built = sum(p.numel() for p in model.parameters())
    except BaseException:  # noqa: BLE001 - a class that cannot be built small is skipped, whatever it raises
        return "not built", None, None
    finally:
        signal.alarm(0)
    fields = {**config.to_dict(), "model_type": model_type}
    try:
        a = est.architecture_from_config(fields)
    except ValueError:
        return "refused", built, None
    counts = est.parameter_counts(a)
    ours = counts.with_towers if counts.with_towers == built else counts.total  # multimodal: with the towers
    generic = any(note.startswith("Generic reader") for note in a.notes)
    if ours != built and any(key in fields for key in ("vision_config", "audio_config")) and not counts.towers:
        return "tower not counted", built, ours  # a multimodal family estimator/vision.py does not know
    return ("generic " if generic else "reader ") + ("equal" if ours == built else "differs"), built, ours


def main() -> int:
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    failed = 0
    for model_type in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        status, built, ours = compare(model_type)
        if status == "not built":
            continue
        difference = f"{ours - built:+,}" if built is not None and ours is not None else ""
        print(f"{model_type:28s} {status:16s} {built or '':>14} {ours or '':>14} {difference}")
        failed += status == "reader differs"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
