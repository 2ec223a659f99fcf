"""LLM GPU memory estimator: how much GPU memory a model needs to serve or fine-tune, and on which GPUs.

    >>> import estimator as est
    >>> rows = est.inference_table(est.InferenceScenario(est.ParamCount.from_billions(7)))
    >>> [round(r.total / 1e9, 1) for r in rows]
    [18.8, 11.8, 8.3]

Two methods: `quick` (the reference document's rule of thumb, from a parameter count) and `detailed` (from
the architecture: a catalog model or a Hugging Face config.json). All sizes are integer bytes.
"""

from .architecture import Architecture, ParameterCounts, parameter_counts
from .breakdown import COMPONENTS, Breakdown
from .catalog import CatalogModel, Gpu, gpu, gpus, model, models
from .finetune import estimate_finetune, finetune_table
from .formats import WEIGHT_FORMATS, weight_bytes
from .frameworks import FRAMEWORKS, with_framework
from .hardware import GpuFit, fit, fit_table, max_concurrency, max_seq_len, sweep
from .hf_config import architecture_from_config, parse_config_text
from .inference import estimate_inference, inference_table
from .kv_cache import KV_DTYPE_BYTES, kv_bytes_per_token, kv_cache_bytes
from .scenarios import FinetuneScenario, InferenceScenario, ParamCount
from .training import OPTIMIZERS, REGIMES, TECHNIQUES
from .units import GB, GiB, format_bytes

__all__ = [
    "Architecture", "Breakdown", "CatalogModel", "COMPONENTS", "FRAMEWORKS", "FinetuneScenario", "GB", "GiB", "Gpu",
    "GpuFit",
    "InferenceScenario", "KV_DTYPE_BYTES", "OPTIMIZERS", "ParamCount", "ParameterCounts", "REGIMES", "TECHNIQUES",
    "WEIGHT_FORMATS", "architecture_from_config", "estimate_finetune", "estimate_inference", "finetune_table",
    "fit", "fit_table", "format_bytes", "gpu", "gpus", "inference_table", "kv_bytes_per_token", "kv_cache_bytes",
    "max_concurrency", "max_seq_len", "model", "models", "parameter_counts", "parse_config_text", "sweep",
    "weight_bytes", "with_framework",
]
