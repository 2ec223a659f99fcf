"""Every engine, on any catalog model and GPU with any options the inputs accept, gives a finite report or a
ValueError naming the field: never another exception, never a negative byte count."""

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimator as est
from estimator.engines import MODULES, ServeScenario, import_command, launch_command, serve
from estimator.inputs import inputs

MODELS = [m.architecture for m in est.models()]
GPUS = [g.id for g in est.gpus()]
SPECS = inputs(ServeScenario)


def _value(name: str):
    spec = SPECS[name]
    if spec.choices:
        return st.sampled_from(spec.choices)
    if spec.kind is bool:
        return st.booleans()
    if spec.kind is int:
        return st.integers(int(spec.low), int(min(spec.high, 2**20)))
    return st.floats(spec.low, spec.high, allow_nan=False)


OPTIONS = st.fixed_dictionaries({}, optional={name: _value(name) for name in (
    "weights", "kv_dtype", "tensor_parallel", "pipeline_parallel", "data_parallel", "expert_parallel",
    "gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "enforce_eager",
    "mem_fraction_static", "n_gpu_layers", "n_cpu_moe", "flash_attention")})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), engine=st.sampled_from(sorted(MODULES)), gpu=st.sampled_from(GPUS),
       options=OPTIONS, tp=st.sampled_from([1, 2, 4, 8]))
def test_any_valid_scenario_gives_a_finite_report(model, engine, gpu, options, tp):
    options.setdefault("tensor_parallel", tp)
    try:
        s = ServeScenario(model, engine=engine, gpu=gpu, **options)
    except ValueError:
        return
    r = serve(s)
    assert all(isinstance(size, int) and size >= 0 for _, size in r.per_gpu)
    assert r.kv_cache_tokens >= 0 and r.max_model_len_that_fits >= 0 and r.host_bytes >= 0
    assert math.isfinite(r.max_concurrency) and r.max_concurrency >= 0
    assert r.command == launch_command(s)
    if r.starts and engine != "transformers":  # the launch command of a start-up imports back as that engine
        assert import_command(r.command).engine == engine
