"""The Speed tab of the estimate pages (AppTest): tokens/s and TTFT per catalog GPU, and decode speed against
concurrency on the target GPU, the same numbers as the CLI's."""

from app_helpers import assert_clean, start

from estimator import catalog, speed
from estimator.scenarios import FinetuneScenario, InferenceScenario

LLAMA_31_8B = "meta-llama/Llama-3.1-8B"


def _open_speed(at, page: str):
    at.session_state[f"{page}.tab"] = "Speed"
    at.run()
    assert_clean(at)
    return at


def test_inference_speed_tab_lists_every_gpu_and_draws_decode_speed_vs_concurrency():
    at = _open_speed(start({"model": LLAMA_31_8B, "gpu": "rtx-4090"}), "inference")
    assert [c.key for c in at.get("plotly_chart")] == ["inference.bars", "inference.speed.curve"]
    frame = at.dataframe[0].value
    assert len(frame) == len(catalog.gpus())
    line = frame[frame["GPU"] == "RTX 4090 24 GB"].iloc[0]
    a = catalog.model(LLAMA_31_8B).architecture
    expected = speed.row_speed(InferenceScenario(a), "16-bit", catalog.gpu("rtx-4090"))
    assert line["GPUs"] == "1"
    assert line["Decode (tokens/s)"] == expected.decode_tokens_per_s
    assert line["TTFT (s)"] == expected.ttft_s
    # every GPU has its own line: Apple's M1 8 GB with 7 and 8 GPU cores are told apart
    assert frame["GPU"].is_unique
    assert {"Apple M1 8 GB (7-core GPU)", "Apple M1 8 GB (8-core GPU)"} <= set(frame["GPU"])


def test_a_count_past_one_server_says_how_many_servers_and_that_its_speed_is_an_upper_bound():
    """Llama 3.3 70B at 16-bit (144 GB) on 8 GB cards takes 32 of them: 4 servers of 8, whose network the speed does
    not model; Macs never span servers (at most 4, one Thunderbolt 5 mesh), an H100 takes 2 in one server."""
    at = _open_speed(start({"model": "meta-llama/Llama-3.3-70B-Instruct", "gpu": "h100-sxm"}), "inference")
    frame = at.dataframe[0].value
    counts = dict(zip(frame["GPU"], frame["GPUs"]))
    assert counts["RTX 3050 8 GB"] == "32 (4 servers)" and counts["H100 SXM 80 GB"] == "2"
    assert counts["Apple M1 8 GB (8-core GPU)"] == "does not fit" and counts["Apple M4 Pro 64 GB"] == "4"
    assert any("its decode speed is an upper bound" in c.value for c in at.caption)


def test_finetune_speed_tab_gives_tokens_per_second_and_the_epoch_of_the_dataset():
    at = _open_speed(start({"model": LLAMA_31_8B, "gpu": "h100-sxm", "dtok": "100000000", "row": "lora"},
                           page="finetune"), "finetune")
    frame = at.dataframe[0].value
    line = frame[frame["GPU"] == "H100 SXM 80 GB"].iloc[0]
    a = catalog.model(LLAMA_31_8B).architecture
    expected = speed.row_speed(FinetuneScenario(a, dataset_tokens=10**8), "lora", catalog.gpu("h100-sxm"))
    assert line["Tokens/s per GPU"] == expected.tokens_per_s
    assert line["Epoch (h)"] == expected.epoch_time_s / 3600
    # without a dataset size there is no epoch to show
    plain = _open_speed(start({"model": LLAMA_31_8B, "gpu": "h100-sxm", "row": "lora"}, page="finetune"), "finetune")
    assert "Epoch (h)" not in plain.dataframe[0].value.columns
    # the GPUs that hold the row come first (without ZeRO every replica holds the whole run: one GPU or none, so
    # the small cards hold no 8B LoRA run)
    fits = list(frame["GPUs"] != "does not fit")
    assert fits == sorted(fits, reverse=True) and 0 < sum(fits) < len(fits)


def test_a_parameter_count_gets_the_quick_speed_and_fine_tuning_it_a_note():
    at = _open_speed(start({"gpu": "rtx-4090"}), "inference")
    frame = at.dataframe[0].value
    line = frame[frame["GPU"] == "RTX 4090 24 GB"].iloc[0]
    from estimator.scenarios import ParamCount

    expected = speed.row_speed(InferenceScenario(ParamCount.from_billions(7)), "16-bit", catalog.gpu("rtx-4090"))
    assert line["Decode (tokens/s)"] == expected.decode_tokens_per_s
    at = _open_speed(start(page="finetune"), "finetune")
    assert any("Speed needs the architecture" in i.value for i in at.info)


def test_the_engine_view_shows_llama_bench_speed_of_the_engine():
    from estimator.engines import ServeScenario, serve

    at = start({"model": LLAMA_31_8B, "engine": "llama.cpp", "gpu": "rtx-4090"})
    s = ServeScenario(catalog.model(LLAMA_31_8B).architecture, engine="llama.cpp", gpu="rtx-4090",
                      model_id=LLAMA_31_8B)
    rate = speed.serve_speed(s, serve(s))
    metric = lambda label: next(m.value for m in at.metric if m.label == label)  # noqa: E731
    assert metric("Decode (tg128)") == f"{rate.decode_tokens_per_s:,.1f} tok/s"
    assert metric("Prefill (pp512)") == f"{rate.prefill_tokens_per_s:,.0f} tok/s"
