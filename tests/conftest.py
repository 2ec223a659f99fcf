"""Shared fixtures: architectures built from published config.json values (no downloads)."""

import os

import pytest

import estimator as est

# No test reaches the real Hugging Face Hub: a Hub id is answered from the cache or refused at once (estimator/hub.py);
# the Hub tests run a local stand-in and clear this for themselves (tests/hub_standin.py)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The small Llama measured with fake tensors (docs/measurements.md)
SMALL_LLAMA = dict(model_type="llama", hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                   num_attention_heads=8, num_key_value_heads=2, vocab_size=32000, max_position_embeddings=4096)
# meta-llama/Llama-2-7b-hf config.json
LLAMA2_7B = dict(model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096)
# meta-llama/Meta-Llama-3-8B config.json
LLAMA3_8B = dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192,
                 tie_word_embeddings=False)


@pytest.fixture
def small_llama():
    return est.architecture_from_config(SMALL_LLAMA, "small llama")


@pytest.fixture
def llama2_7b():
    return est.architecture_from_config(LLAMA2_7B, "Llama 2 7B")


@pytest.fixture
def llama3_8b():
    return est.architecture_from_config(LLAMA3_8B, "Llama 3 8B")
