"""Tiny GGUF files written by llama.cpp's own `gguf` package (gguf.GGUFWriter): a 2-layer Llama whose tensors mix
quant types as an imatrix or unsloth dynamic quant does, to check estimator/gguf.py against an independent writer."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
T = gguf.GGMLQuantizationType

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS, VOCAB, CONTEXT = 256, 512, 2, 4, 2, 1000, 4096
KV_WIDTH = KV_HEADS * HIDDEN // HEADS  # 128
# (name, (ne0 = row length, rows), type): every layer mixes five quant types, as dynamic quants do
TENSORS = [("token_embd.weight", (HIDDEN, VOCAB), T.Q8_0), ("output_norm.weight", (HIDDEN,), T.F32),
           ("output.weight", (HIDDEN, VOCAB), T.Q6_K)]
for _i in range(LAYERS):
    TENSORS += [(f"blk.{_i}.attn_norm.weight", (HIDDEN,), T.F32), (f"blk.{_i}.ffn_norm.weight", (HIDDEN,), T.F32),
                (f"blk.{_i}.attn_q.weight", (HIDDEN, HIDDEN), T.Q4_K),
                (f"blk.{_i}.attn_k.weight", (HIDDEN, KV_WIDTH), T.Q6_K if _i == 0 else T.Q4_K),
                (f"blk.{_i}.attn_v.weight", (HIDDEN, KV_WIDTH), T.Q8_0),
                (f"blk.{_i}.attn_output.weight", (HIDDEN, HIDDEN), T.IQ4_XS),
                (f"blk.{_i}.ffn_gate.weight", (HIDDEN, FFN), T.Q4_K),
                (f"blk.{_i}.ffn_up.weight", (HIDDEN, FFN), T.Q5_K),
                (f"blk.{_i}.ffn_down.weight", (FFN, HIDDEN), T.Q6_K)]


def write_tiny_llama(path: Path, file_type: int = 15, description: str = "") -> Path:
    """A GGUF file of the tiny Llama above (general.file_type 15 = MOSTLY_Q4_K_M), tensor data zeros; a long
    `description` (general.description) makes its header as large as wanted."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("Tiny Llama")
    if description:
        writer.add_description(description)
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_context_length(CONTEXT)
    writer.add_file_type(file_type)
    writer.add_token_list([f"tok{i}" for i in range(VOCAB)])  # an array of strings, as every real file has
    writer.add_token_scores([0.0] * VOCAB)
    for name, (ne0, *rest), kind in TENSORS:
        block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        rows = rest[0] if rest else 1
        data = np.zeros((rows, ne0 // block * block_bytes), dtype=np.uint8) if kind != T.F32 else \
            np.zeros(ne0, dtype=np.float32)
        writer.add_tensor(name, data, raw_dtype=kind if kind != T.F32 else None)  # the shape: from the bytes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_huge_header(path: Path) -> Path:
    """A GGUF file whose header holds two strings of 40 MB and 30 MB (general.description, general.license): a
    reader's window takes the first, doubles (capped at 64 MiB), and the second would end at 70 MB."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_description("x" * 40_000_000)
    writer.add_license("y" * 30_000_000)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    return path


# A vision projector (llama.cpp's mmproj files: general.architecture "clip"), F16 as they are published
PROJECTOR = [("v.patch_embd.weight", (588, 64)), ("v.blk.0.attn_q.weight", (64, 64)), ("v.post_ln.weight", (64,)),
             ("mm.0.weight", (64, HIDDEN))]


def write_projector(path: Path) -> Path:
    writer = gguf.GGUFWriter(str(path), "clip")
    for name, shape in PROJECTOR:
        writer.add_tensor(name, np.zeros(tuple(reversed(shape)), dtype=np.float16))  # numpy order: ne0 last
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_tiny_qwen3_moe(path: Path) -> Path:
    """A 2-layer Qwen3-MoE GGUF (8 experts, 2 per token) whose experts are Q4_K and attention Q8_0, as unsloth's
    dynamic quants mix them; expert tensors are 3-D (ne0, ne1, experts) as llama.cpp stores them."""
    hidden, heads, kv_heads, head_dim, experts, expert_ffn, vocab = 256, 4, 2, 64, 8, 256, 512
    writer = gguf.GGUFWriter(str(path), "qwen3moe")
    writer.add_block_count(2)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(1024)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_context_length(32768)
    writer.add_expert_count(experts)
    writer.add_expert_used_count(2)
    writer.add_expert_feed_forward_length(expert_ffn)
    tensors = [("token_embd.weight", (hidden, vocab), T.Q8_0), ("output.weight", (hidden, vocab), T.Q6_K),
               ("output_norm.weight", (hidden,), T.F32)]
    for i in range(2):
        tensors += [(f"blk.{i}.attn_q.weight", (hidden, heads * head_dim), T.Q8_0),
                    (f"blk.{i}.attn_k.weight", (hidden, kv_heads * head_dim), T.Q8_0),
                    (f"blk.{i}.attn_v.weight", (hidden, kv_heads * head_dim), T.Q8_0),
                    (f"blk.{i}.attn_output.weight", (heads * head_dim, hidden), T.Q8_0),
                    (f"blk.{i}.attn_q_norm.weight", (head_dim,), T.F32),
                    (f"blk.{i}.attn_k_norm.weight", (head_dim,), T.F32),
                    (f"blk.{i}.attn_norm.weight", (hidden,), T.F32), (f"blk.{i}.ffn_norm.weight", (hidden,), T.F32),
                    (f"blk.{i}.ffn_gate_inp.weight", (hidden, experts), T.F32),
                    (f"blk.{i}.ffn_gate_exps.weight", (hidden, expert_ffn, experts), T.Q4_K),
                    (f"blk.{i}.ffn_up_exps.weight", (hidden, expert_ffn, experts), T.Q4_K),
                    (f"blk.{i}.ffn_down_exps.weight", (expert_ffn, hidden, experts), T.Q6_K)]
    for name, shape, kind in tensors:
        block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        outer = tuple(reversed(shape[1:]))  # numpy order: the row length last
        data = np.zeros((*outer, shape[0] // block * block_bytes), dtype=np.uint8) if kind != T.F32 else \
            np.zeros(tuple(reversed(shape)), dtype=np.float32)
        writer.add_tensor(name, data, raw_dtype=kind if kind != T.F32 else None)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _more_bits(layer: int, layers: int) -> bool:
    """llama.cpp's `use_more_bits(i_layer, n_layers)` (src/llama-quant.cpp): the first and last eighth of the
    layers and every third one between them, where Q4_K_M puts attn_v and ffn_down in Q6_K."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


# Qwen3-8B's config.json (Qwen/Qwen3-8B): hidden 4096, 36 layers, 32 heads (8 KV) of 128, FFN 12288, 151,936 tokens
QWEN3_8B = dict(hidden=4096, layers=36, heads=32, kv_heads=8, head_dim=128, ffn=12288, vocab=151_936, context=40_960)


def write_header_only(path: Path) -> Path:
    """A Qwen3-8B-shaped Q4_K_M GGUF as llama.cpp lays one out (tensor infos with the model's shapes, the recipe's
    Q4_K / Q6_K split, a 151,936-token vocabulary: a 3.4 MB header), whose tensor data is not written: the file is
    extended with zeros to the size it would have with its data (5.0 GB; a sparse file, no disk used). Readers of
    the header never get there."""
    m = QWEN3_8B
    writer = gguf.GGUFWriter(str(path), "qwen3")
    writer.add_name("Qwen3 8B")
    writer.add_block_count(m["layers"])
    writer.add_embedding_length(m["hidden"])
    writer.add_feed_forward_length(m["ffn"])
    writer.add_head_count(m["heads"])
    writer.add_head_count_kv(m["kv_heads"])
    writer.add_key_length(m["head_dim"])
    writer.add_value_length(m["head_dim"])
    writer.add_context_length(m["context"])
    writer.add_file_type(15)  # MOSTLY_Q4_K_M
    writer.add_token_list([f"token{i}" for i in range(m["vocab"])])
    writer.add_token_types([1] * m["vocab"])
    data = 0
    hidden, q, kv = m["hidden"], m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"]
    tensors = [("token_embd.weight", (hidden, m["vocab"]), T.Q4_K), ("output_norm.weight", (hidden,), T.F32),
               ("output.weight", (hidden, m["vocab"]), T.Q6_K)]
    for i in range(m["layers"]):
        more = T.Q6_K if _more_bits(i, m["layers"]) else T.Q4_K
        tensors += [(f"blk.{i}.attn_norm.weight", (hidden,), T.F32), (f"blk.{i}.ffn_norm.weight", (hidden,), T.F32),
                    (f"blk.{i}.attn_q_norm.weight", (m["head_dim"],), T.F32),
                    (f"blk.{i}.attn_k_norm.weight", (m["head_dim"],), T.F32),
                    (f"blk.{i}.attn_q.weight", (hidden, q), T.Q4_K), (f"blk.{i}.attn_k.weight", (hidden, kv), T.Q4_K),
                    (f"blk.{i}.attn_v.weight", (hidden, kv), more),
                    (f"blk.{i}.attn_output.weight", (q, hidden), T.Q4_K),
                    (f"blk.{i}.ffn_gate.weight", (hidden, m["ffn"]), T.Q4_K),
                    (f"blk.{i}.ffn_up.weight", (hidden, m["ffn"]), T.Q4_K),
                    (f"blk.{i}.ffn_down.weight", (m["ffn"], hidden), more)]
    for name, shape, kind in tensors:
        block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        elements = int(np.prod(shape))
        nbytes = elements // block * block_bytes
        writer.add_tensor_info(name, tuple(reversed(shape)), np.dtype(np.float32), nbytes,
                               raw_dtype=kind if kind != T.F32 else None)
        data += gguf.GGUFWriter.ggml_pad(nbytes, writer.data_alignment)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    os.truncate(path, path.stat().st_size + data)  # the header ends aligned: the data would start here
    return path
