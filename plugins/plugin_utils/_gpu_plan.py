# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure GPU memory planner for several vLLM instances sharing GPUs, and their command lines.

Each instance runs on one GPU, or with tensor parallelism on several; its weights may be quantized.

This plugin util is PRIVATE to the collection: it may change without notice.

The memory model follows current vLLM (V1 engine, ~0.9 onward; see the project's llm-serving notes):

* ``--gpu-memory-utilization`` is a per-instance budget, a fraction of the device's TOTAL memory. The
  budget covers weights, activation peak, non-torch buffers, CUDA graphs and the KV cache; the KV
  cache is whatever the rest leaves (``Worker.determine_available_memory``).
* Each process's CUDA context is created before vLLM takes its memory snapshot, so it sits OUTSIDE
  the budget.
* At startup vLLM refuses to run unless ``free >= ceil(total * util)`` (``request_memory()`` in
  ``vllm/v1/worker/utils.py``, PR #18974). Instances start one after another, so instance k sees
  ``total - sum(budget_j + context_j for j < k) - context_k``. The last one is the tightest:
  ``sum(budget) + n * context + other <= total``; the planner keeps ``other`` within a margin.
* ``cuda_context_gib`` defaults to 0.7 GiB per process, from a measurement (``tests/gpu/gpu_check.py`` on an NVIDIA
  H200, driver 580.159.04, CUDA 13.0, PyTorch 2.11, lazy module loading, 2026-12-04). A process held 610 MiB
  outside PyTorch's allocator once CUDA was initialised (what vLLM's snapshot sees), 676 MiB once cuBLAS was
  loaded and 684 MiB after an attention kernel; with ``CUDA_MODULE_LOADING=EAGER``, 1250 to 1756 MiB. A context
  holds local memory for every thread its GPU can run at once, so GPUs with fewer SMs should pay less; none was
  measured here. The same host's CUDA total was 616 MiB less than nvidia-smi's (143155 against 143771 MiB), which
  the margin covers.

Tensor parallelism (model key ``tensor_parallel_size`` N, vLLM ``--tensor-parallel-size``):

* vLLM runs one worker process per rank, each on its own GPU (the instance's ``CUDA_VISIBLE_DEVICES``, in
  rank order). Only the workers create CUDA contexts; the API server and engine-core processes hold none
  (assumed, as for one GPU). Column- and row-parallel linear layers and the vocabulary-parallel embedding and LM head give
  each rank 1/N of the weights. The few replicated tensors (norms, and K/V projections when heads are
  replicated) are counted as split too.
* Each rank holds ``kv_heads / N`` KV heads. With fewer KV heads than ranks, vLLM replicates them: each rank
  holds one, and N must be a multiple of the head count. Otherwise N must divide the head count. vLLM's
  attention layers assert one or the other.
* Every rank runs vLLM's startup check on its own GPU with the same ``--gpu-memory-utilization``. So the
  instance's value is the largest that any of its GPUs needs, and its KV capacity is the smallest that any
  rank gets.
* The activation and sampler overhead and the CUDA graphs are counted in full on every rank. The residual
  stream, the gathered logits and the sampler's buffers are not split, so 1/N of them would be optimistic.
* Outside the budget, each rank pays a CUDA context and NCCL buffers. vLLM initialises the distributed
  environment before it takes its memory snapshot (``Worker.init_device`` in ``vllm/v1/worker/gpu_worker.py``:
  "This ensures NCCL buffers are allocated before we measure"). So the startup check sees them as memory
  already used, as it sees the context.
* ``nccl_gib`` defaults to 0.6 GiB per rank. This is an ESTIMATE. NVIDIA/nccl #964 measured 544 MB per GPU
  for one 2-GPU communicator after an all-reduce (A100s, NVLink), and 688 MB for 3 or 4 GPUs. NCCL's memory
  grows with its channel count (NVIDIA/nccl #986). vLLM's custom all-reduce adds IPC buffers of a few tens of
  MiB. Calibrate it on your machine: a rank's used memory (``nvidia-smi --query-compute-apps``) minus its
  budget and its CUDA context.
* Ranks of several instances may share GPUs, and a one-GPU instance may sit next to a rank.

Quantized weights (model key ``quantization``: awq, awq_marlin, gptq, gptq_marlin, fp8; vLLM ``--quantization``):

* vLLM quantizes only its linear layers. ``get_quant_method`` returns a method for ``LinearBase`` and, for
  GPTQ/AWQ, for the LM head only when the checkpoint sets ``lm_head``. The embedding and (by default) the LM
  head stay in ``dtype``. So does the planner: it counts ``vocab_size x hidden_size`` parameters, twice
  unless ``tie_word_embeddings``, at the dtype's bytes. It counts the rest of ``parameters`` (including the
  norms and biases, a rounding error) as quantized weights.
* awq, gptq (``bits`` 4, or 8 for GPTQ; ``group_size`` default 128): each weight takes ``bits/8`` bytes, packed
  into int32. Each group of ``group_size`` input channels adds one fp16 scale (2 bytes) and one packed zero
  point (``bits/8`` bytes) per output channel. GPTQ adds ``g_idx``, one int32 per input channel of each linear
  layer, counted as ``4 / hidden_size`` bytes per weight. The Marlin kernels (``awq_marlin``,
  ``gptq_marlin``) repack the same data in another layout, so they are sized the same. vLLM's AWQ reads only
  4-bit checkpoints ("Currently, only 4-bit weight quantization is supported for AWQ").
* fp8 (``bits`` 8): one byte per weight, plus one fp32 scale per output channel, counted as
  ``4 / hidden_size`` bytes per weight. That is the per-channel case, and an upper bound for the per-tensor
  scales vLLM's online ``--quantization fp8`` uses.
* Embedding sizes (``hidden_size``, ``vocab_size``, ``tie_word_embeddings``) come from the model's keys, its
  ``config``, or the built-in table. A missing ``tie_word_embeddings`` counts as untied, the larger figure.
* The default overhead still follows the 16-bit size class: activations are not quantized.
* ``weights_bytes`` or ``weights_gib`` (the checkpoint's size) take precedence over all of this, as they do
  without quantization.

Everything here is plain arithmetic on integers (bytes, and utilisation in units of 10**-decimals of
the total), so results are exact and reproducible.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

GIB = 1 << 30
MIB = 1 << 20

# vLLM parses --gpu-memory-utilization as a Python float (any precision is accepted; 0 < u <= 1).
# Three decimals make one step 0.1 % of the card (0.08 GiB on 80 GB, 0.14 GiB on 141 GB), where two
# would waste up to 1.4 GiB per instance on an H200 when rounding each minimum up to a step. The
# printed value is exactly the planned one (no float formatting surprises) because the planner works
# in integer steps and only formats at the end.
DEFAULT_UTILIZATION_DECIMALS = 3
DEFAULT_CUDA_CONTEXT_GIB = 0.7  # measured on an H200: see the module docstring; measure on the target driver.
DEFAULT_CUDA_GRAPH_GIB = 0.5  # CUDA graphs live inside the budget (vLLM v0.21+); none with --enforce-eager.
DEFAULT_MARGIN_FRACTION = 0.02  # driver/ECC reservations, nvidia-smi vs CUDA total, stray processes.
DEFAULT_BLOCK_SIZE = 16  # vLLM's default KV block size in tokens on CUDA.
DEFAULT_BASE_PORT = 8000

# Bytes per element. vLLM's dtype "auto" serves FP32 and FP16 checkpoints in FP16 and BF16 ones in BF16,
# so "auto" is 2 bytes.
DTYPE_BYTES = {"auto": 2, "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}
KV_CACHE_DTYPE_BYTES = {"auto": None, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

DEFAULT_NCCL_GIB = 0.6  # per rank of a tensor-parallel instance; an estimate, see the module docstring
DEFAULT_GROUP_SIZE = 128

# vLLM --quantization values the planner can size, and the bits each reads (the first is the default).
QUANTIZATION_BITS = {"awq": (4,), "awq_marlin": (4,), "gptq": (4, 8), "gptq_marlin": (4, 8), "fp8": (8,)}
GROUPED = frozenset({"awq", "awq_marlin", "gptq", "gptq_marlin"})
SIXTEEN_BIT = frozenset({"auto", "half", "float16", "bfloat16"})

# Well-known models: KV geometry from each model's config.json, published parameter counts (3
# significant figures) and a planning overhead for activations and non-torch buffers, in GiB; and the
# embedding shape (hidden_size, vocab_size, tie_word_embeddings) that sizes quantized weights.
# kv_heads is what vLLM allocates: DeciLM-7B has a per-layer num_key_value_heads_per_layer list and
# vLLM's old decilm.py "degrouped" it to max(list) (4), so the cache is sized as if every layer had 4.
# Current vLLM (PR #15008, ~v0.8.2) no longer loads DeciLM-7B at all; it needs an older pinned vLLM.
BUILTIN_MODELS = {
    "meta-llama-3-8b-instruct": {"num_layers": 32, "kv_heads": 8, "head_dim": 128, "max_position_embeddings": 8192,
                                 "parameters": 8.03e9, "overhead_gib": 1.5,
                                 "hidden_size": 4096, "vocab_size": 128256, "tie_word_embeddings": False},
    "meta-llama-3.1-8b-instruct": {"num_layers": 32, "kv_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
                                   "parameters": 8.03e9, "overhead_gib": 1.5,
                                   "hidden_size": 4096, "vocab_size": 128256, "tie_word_embeddings": False},
    # Gemma sets head_dim 256 explicitly (16 x 256 = 4096 != hidden 3072); its 256k vocabulary makes the
    # logits/sampler buffers large, hence the higher overhead. It ties its LM head to the embedding
    # (GemmaConfig's default); the others do not.
    "gemma-1.1-7b-it": {"num_layers": 28, "kv_heads": 16, "head_dim": 256, "max_position_embeddings": 8192,
                        "parameters": 8.54e9, "overhead_gib": 2.0,
                        "hidden_size": 3072, "vocab_size": 256000, "tie_word_embeddings": True},
    "decilm-7b-instruct": {"num_layers": 32, "kv_heads": 4, "head_dim": 128, "max_position_embeddings": 8192,
                           "parameters": 7.04e9, "overhead_gib": 1.5, "trust_remote_code": True,
                           "hidden_size": 4096, "vocab_size": 32000, "tie_word_embeddings": False},
    # No GQA: 32 KV heads of 3072 / 32 = 96; the 128k context is what makes it the KV hog.
    "phi-3-mini-128k-instruct": {"num_layers": 32, "kv_heads": 32, "head_dim": 96, "max_position_embeddings": 131072,
                                 "parameters": 3.82e9, "overhead_gib": 1.2,
                                 "hidden_size": 3072, "vocab_size": 32064, "tie_word_embeddings": False},
    "stablelm-2-1_6b-chat": {"num_layers": 24, "kv_heads": 32, "head_dim": 64, "max_position_embeddings": 4096,
                             "parameters": 1.64e9, "overhead_gib": 0.8,
                             "hidden_size": 2048, "vocab_size": 100352, "tie_word_embeddings": False},
    "mistral-7b-instruct-v0.2": {"num_layers": 32, "kv_heads": 8, "head_dim": 128, "max_position_embeddings": 32768,
                                 "parameters": 7.24e9, "overhead_gib": 1.5,
                                 "hidden_size": 4096, "vocab_size": 32000, "tie_word_embeddings": False},
    "qwen2.5-7b-instruct": {"num_layers": 28, "kv_heads": 4, "head_dim": 128, "max_position_embeddings": 32768,
                            "parameters": 7.62e9, "overhead_gib": 1.5,
                            "hidden_size": 3584, "vocab_size": 152064, "tie_word_embeddings": False},
}

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MEMORY_TEXT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")
_MEMORY_UNITS = {"": MIB, "b": 1, "kib": 1 << 10, "mib": MIB, "gib": GIB, "mb": MIB, "gb": GIB}


class GpuPlanError(ValueError):
    """Input the planner cannot use, or a plan that cannot fit; the message says which and why."""


def gib(num_bytes: int | float) -> float:
    """Bytes as GiB, rounded for people to read (2 decimals)."""
    return round(num_bytes / GIB, 2)


def _ceil_div(num: int, den: int) -> int:
    return -(-num // den)


# ---------------------------------------------------------------------------------------------------
# Input normalisation
# ---------------------------------------------------------------------------------------------------

def _positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise GpuPlanError(f"{what} must be a positive integer, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise GpuPlanError(f"{what} must be a positive integer, got {value!r}") from None
    if not math.isfinite(number) or number <= 0 or number != int(number):
        raise GpuPlanError(f"{what} must be a positive integer, got {value!r}")
    return int(number)


def _non_negative_number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise GpuPlanError(f"{what} must be a non-negative number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise GpuPlanError(f"{what} must be a non-negative number, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise GpuPlanError(f"{what} must be a non-negative number, got {value!r}")
    return number


def _memory_total_bytes(gpu: dict, where: str) -> int:
    """Total memory of one GPU in bytes.

    Accepts ``memory_total_bytes``, ``memory_total_gib``, ``memory_total_mib``, or ``memory_total`` /
    ``memory.total`` / ``memory.total [MiB]`` as nvidia-smi prints it: ``81559 MiB`` with
    ``--format=csv``, or a bare number of MiB with ``nounits``.
    """
    if "memory_total_bytes" in gpu:
        return _positive_int(gpu["memory_total_bytes"], f"{where} memory_total_bytes")
    if "memory_total_gib" in gpu:
        return int(_non_negative_number(gpu["memory_total_gib"], f"{where} memory_total_gib") * GIB)
    for key in ("memory_total_mib", "memory_total", "memory.total", "memory.total [MiB]"):
        if key in gpu:
            value = gpu[key]
            if isinstance(value, str):
                match = _MEMORY_TEXT.match(value)
                unit = match.group(2).lower() if match else None
                if not match or unit not in _MEMORY_UNITS:
                    raise GpuPlanError(f"{where} {key} must be like '81559 MiB' or a number of MiB, got {value!r}")
                return int(float(match.group(1)) * _MEMORY_UNITS[unit])
            return int(_non_negative_number(value, f"{where} {key}") * MIB)
    raise GpuPlanError(f"{where} has no memory total (memory_total, memory_total_mib, memory_total_gib or memory_total_bytes)")


def normalize_gpus(gpus) -> list[dict]:
    """[{index, total_bytes}] from nvidia-smi facts or inventory; indexes unique."""
    if not isinstance(gpus, list) or not gpus:
        raise GpuPlanError(f"gpus must be a non-empty list, got {gpus!r}")
    result = []
    for position, gpu in enumerate(gpus):
        if not isinstance(gpu, dict):
            raise GpuPlanError(f"gpus[{position}] must be a dict, got {gpu!r}")
        gpu = {str(key).strip(): value for key, value in gpu.items()}
        index = gpu.get("index", position)
        if isinstance(index, str) and index.strip().isdigit():
            index = int(index)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise GpuPlanError(f"gpus[{position}] index must be a non-negative integer, got {index!r}")
        total = _memory_total_bytes(gpu, f"GPU {index}")
        if total < GIB:
            raise GpuPlanError(f"GPU {index} memory total {total} bytes is implausibly small (MiB expected)")
        if any(g["index"] == index for g in result):
            raise GpuPlanError(f"GPU index {index} is listed twice")
        result.append({"index": index, "total_bytes": total})
    return result


def builtin_model(model_id: str) -> dict | None:
    """The built-in entry for a Hugging Face id or a local path, matched on its last path component."""
    key = model_id.rstrip("/").rsplit("/", 1)[-1].lower()
    entry = BUILTIN_MODELS.get(key)
    return dict(entry) if entry else None


def kv_geometry_from_config(config: dict, where: str) -> dict:
    """num_layers, kv_heads, head_dim (and max_position_embeddings) from a config.json dict."""
    if not isinstance(config, dict):
        raise GpuPlanError(f"{where} config must be the dict read from config.json, got {config!r}")
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    heads = config.get("num_attention_heads", config.get("n_head"))
    if layers is None or heads is None:
        raise GpuPlanError(f"{where} config has no num_hidden_layers/num_attention_heads")
    layers = _positive_int(layers, f"{where} config num_hidden_layers")
    heads = _positive_int(heads, f"{where} config num_attention_heads")
    per_layer = config.get("num_key_value_heads_per_layer")
    if per_layer is not None:
        # DeciLM variable GQA: vLLM sizes every layer's cache for the largest group count.
        if not isinstance(per_layer, list) or len(per_layer) != layers:
            raise GpuPlanError(f"{where} config num_key_value_heads_per_layer must list {layers} layers, got {per_layer!r}")
        kv_heads = max(_positive_int(v, f"{where} config num_key_value_heads_per_layer") for v in per_layer)
    elif config.get("num_key_value_heads") is not None:
        kv_heads = _positive_int(config["num_key_value_heads"], f"{where} config num_key_value_heads")
    else:
        kv_heads = heads  # no GQA field: multi-head attention
    if config.get("head_dim") is not None:
        head_dim = _positive_int(config["head_dim"], f"{where} config head_dim")
    else:
        hidden = _positive_int(config.get("hidden_size"), f"{where} config hidden_size")
        head_dim = hidden // heads
    geometry = {"num_layers": layers, "kv_heads": kv_heads, "head_dim": head_dim}
    if config.get("max_position_embeddings") is not None:
        geometry["max_position_embeddings"] = _positive_int(config["max_position_embeddings"],
                                                            f"{where} config max_position_embeddings")
    return geometry


def kv_bytes_per_token(num_layers: int, kv_heads: int, head_dim: int, element_bytes: int) -> int:
    """K and V, for every layer and KV head: 2 * layers * kv_heads * head_dim * bytes."""
    return 2 * num_layers * kv_heads * head_dim * element_bytes


# ---------------------------------------------------------------------------------------------------
# Tensor parallelism
# ---------------------------------------------------------------------------------------------------

def kv_heads_per_rank(kv_heads: int, size: int) -> int | None:
    """KV heads each of `size` ranks holds, or None when vLLM cannot split `kv_heads` over them."""
    if kv_heads >= size:
        return kv_heads // size if kv_heads % size == 0 else None
    return 1 if size % kv_heads == 0 else None


def valid_sizes(kv_heads: int, limit: int) -> list[int]:
    """The tensor-parallel sizes 1..limit that vLLM accepts for `kv_heads` KV heads."""
    return [size for size in range(1, limit + 1) if kv_heads_per_rank(kv_heads, size) is not None]


def known_kv_heads(model) -> int | None:
    """The KV heads the planner would use for `model` (its kv_heads, config or built-in entry); None when unknown."""
    if not isinstance(model, dict):
        return None
    try:
        if "kv_heads" in model:
            return _positive_int(model["kv_heads"], "kv_heads")
        if "config" in model:
            return kv_geometry_from_config(model["config"], "model")["kv_heads"]
    except GpuPlanError:
        return None
    entry = builtin_model(model["model"]) if isinstance(model.get("model"), str) else None
    return entry["kv_heads"] if entry else None


def _split_problem(kv_heads: int, size: int) -> str:
    usable = ", ".join(str(n) for n in valid_sizes(kv_heads, max(kv_heads, size)))
    return (f"tensor_parallel_size {size} does not divide the model's {kv_heads} KV heads (num_key_value_heads): vLLM gives "
            f"every GPU the same number of KV heads (or, with fewer heads than GPUs, one copy each). Use one of {usable}")


def _pins(model: dict, size: int, where: str) -> list[int] | None:
    """The GPUs a model is pinned to (`gpu` or `gpus`), in rank order, or None."""
    if "gpus" in model and model["gpus"] is not None:
        if model.get("gpu") is not None:
            raise GpuPlanError(f"{where} gives both gpu and gpus: pin one GPU with gpu, or all of them with gpus")
        pins = model["gpus"]
        if not isinstance(pins, list) or not pins or any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in pins):
            raise GpuPlanError(f"{where} gpus must be a list of GPU indexes, got {pins!r}")
        if len(set(pins)) != len(pins):
            raise GpuPlanError(f"{where} gpus lists a GPU twice: {pins!r}")
        if len(pins) != size:
            raise GpuPlanError(f"{where} gpus lists {len(pins)} GPU(s) but tensor_parallel_size is {size}: give one GPU per rank")
        return list(pins)
    if model.get("gpu") is not None:
        if size != 1:
            raise GpuPlanError(f"{where} gpu pins one GPU but tensor_parallel_size is {size}: pin them all with gpus")
        return [model["gpu"]]
    return None


# ---------------------------------------------------------------------------------------------------
# Quantized weights
# ---------------------------------------------------------------------------------------------------

def _quantization(model: dict, dtype: str, where: str) -> dict | None:
    """{method, bits, group_size} from the model's keys, or None when its weights are not quantized."""
    method = model.get("quantization")
    if method is None:
        for key in ("bits", "group_size"):
            if key in model:
                raise GpuPlanError(f"{where} {key} describes quantized weights: set quantization, or remove {key}")
        return None
    if not isinstance(method, str) or method.lower() not in QUANTIZATION_BITS:
        raise GpuPlanError(f"{where} quantization {method!r} is not one of {', '.join(QUANTIZATION_BITS)}")
    method = method.lower()
    allowed = QUANTIZATION_BITS[method]
    bits = _positive_int(model.get("bits", allowed[0]), f"{where} bits")
    if bits not in allowed:
        reason = "vLLM's AWQ reads only 4-bit checkpoints; 8-bit ones are GPTQ" if method.startswith("awq") else \
            f"{method} has {' or '.join(str(b) for b in allowed)}-bit weights"
        raise GpuPlanError(f"{where} bits {bits} does not fit quantization {method}: {reason}")
    group_size = None
    if method in GROUPED:
        group_size = _positive_int(model.get("group_size", DEFAULT_GROUP_SIZE), f"{where} group_size")
    elif "group_size" in model:
        raise GpuPlanError(f"{where} group_size applies to AWQ and GPTQ, not {method}: remove it")
    if dtype not in SIXTEEN_BIT:
        raise GpuPlanError(f"{where} quantization {method} computes in 16 bits, but dtype is {dtype}: use auto, bfloat16 or float16")
    return {"method": method, "bits": bits, "group_size": group_size}


def _embedding_shape(model: dict, builtin: dict, where: str) -> tuple[int, int, bool] | None:
    """(hidden_size, vocab_size, tied) from the model's keys, its config or its built-in entry; None if unknown."""
    config = model.get("config") if isinstance(model.get("config"), dict) else {}
    hidden = model.get("hidden_size", config.get("hidden_size", builtin.get("hidden_size")))
    vocab = model.get("vocab_size", config.get("vocab_size", builtin.get("vocab_size")))
    tied = model.get("tie_word_embeddings", config.get("tie_word_embeddings", builtin.get("tie_word_embeddings", False)))
    if hidden is None or vocab is None:
        return None
    if not isinstance(tied, bool):
        raise GpuPlanError(f"{where} tie_word_embeddings must be true or false, got {tied!r}")
    return _positive_int(hidden, f"{where} hidden_size"), _positive_int(vocab, f"{where} vocab_size"), tied


def quantized_weights_bytes(parameters: int, hidden: int, vocab: int, tied: bool, dtype_bytes: int, quant: dict) -> int:
    """Bytes of a checkpoint whose linear layers are quantized and whose embedding and LM head are not."""
    embedding = vocab * hidden * (1 if tied else 2)
    linear = parameters - embedding
    if linear <= 0:
        raise GpuPlanError(f"parameters {parameters} are fewer than the embedding's {embedding} (vocab_size x hidden_size)")
    bits, method = quant["bits"], quant["method"]
    if method == "fp8":
        per_weight = Fraction(1) + Fraction(4, hidden)
    else:
        group = quant["group_size"]
        per_weight = Fraction(bits, 8) + Fraction(2, group) + Fraction(bits, 8 * group)
        if method.startswith("gptq"):
            per_weight += Fraction(4, hidden)
    return embedding * dtype_bytes + math.ceil(linear * per_weight)


# ---------------------------------------------------------------------------------------------------
# Model entries
# ---------------------------------------------------------------------------------------------------

def normalize_model(model, position: int) -> dict:
    """One model entry with every number resolved, whole and per rank, or GpuPlanError naming the model and the field."""
    if not isinstance(model, dict):
        raise GpuPlanError(f"models[{position}] must be a dict, got {model!r}")
    name = model.get("name")
    if not isinstance(name, str) or not name.strip():
        raise GpuPlanError(f"models[{position}] needs a served name (name), got {name!r}")
    where = f"model {name!r}"
    model_id = model.get("model")
    if not isinstance(model_id, str) or not model_id.strip():
        raise GpuPlanError(f"{where} needs a model id or local path (model), got {model_id!r}")
    builtin = builtin_model(model_id) or {}

    dtype = str(model.get("dtype", "auto")).lower()
    if dtype not in DTYPE_BYTES:
        raise GpuPlanError(f"{where} dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    kv_dtype = str(model.get("kv_cache_dtype", "auto")).lower()
    if kv_dtype not in KV_CACHE_DTYPE_BYTES:
        raise GpuPlanError(f"{where} kv_cache_dtype {kv_dtype!r} is not one of {', '.join(KV_CACHE_DTYPE_BYTES)}")
    kv_element_bytes = KV_CACHE_DTYPE_BYTES[kv_dtype] or DTYPE_BYTES[dtype]

    direct = [key for key in ("num_layers", "kv_heads", "head_dim") if key in model]
    if direct:
        if len(direct) != 3:
            raise GpuPlanError(f"{where} gives {', '.join(direct)}: give all of num_layers, kv_heads and head_dim")
        geometry = {key: _positive_int(model[key], f"{where} {key}") for key in direct}
        if "config" in model:
            geometry["max_position_embeddings"] = kv_geometry_from_config(model["config"], where).get("max_position_embeddings")
    elif "config" in model:
        geometry = kv_geometry_from_config(model["config"], where)
    elif builtin:
        geometry = {key: builtin[key] for key in ("num_layers", "kv_heads", "head_dim", "max_position_embeddings")}
    else:
        raise GpuPlanError(f"{where}: {model_id!r} is not a built-in model; give config (config.json as a dict) "
                           "or num_layers, kv_heads and head_dim")

    if "weights_bytes" in model:
        weights = _positive_int(model["weights_bytes"], f"{where} weights_bytes")
    elif "weights_gib" in model:
        weights = int(_non_negative_number(model["weights_gib"], f"{where} weights_gib") * GIB)
    elif "parameters" in model or "parameters" in builtin:
        params = _non_negative_number(model.get("parameters", builtin.get("parameters")), f"{where} parameters")
        weights = int(params * DTYPE_BYTES[dtype])
    else:
        raise GpuPlanError(f"{where} needs weights_bytes, weights_gib or parameters (not a built-in model)")
    if weights <= 0:
        raise GpuPlanError(f"{where} weights must be more than 0 bytes")

    max_len = _positive_int(model.get("max_model_len"), f"{where} max_model_len")
    max_pos = geometry.get("max_position_embeddings")
    if max_pos and max_len > max_pos:
        raise GpuPlanError(f"{where} max_model_len {max_len} exceeds the model's max_position_embeddings {max_pos}; "
                           "vLLM refuses it")
    min_sequences = _positive_int(model.get("min_sequences", 1), f"{where} min_sequences")

    if "overhead_bytes" in model:
        overhead = int(_non_negative_number(model["overhead_bytes"], f"{where} overhead_bytes"))
    elif "overhead_gib" in model or "overhead_gib" in builtin:
        overhead = int(_non_negative_number(model.get("overhead_gib", builtin.get("overhead_gib")), f"{where} overhead_gib") * GIB)
    else:
        # Size classes from calibrated vLLM "Memory profiling" lines: ~0.8 GiB for 1-3B, 1-2 GiB for 7-8B.
        overhead = int((0.8 if weights <= 6 * GIB else 1.5 if weights <= 20 * GIB else 2.5) * GIB)

    enforce_eager = model.get("enforce_eager", False)
    trust_remote_code = model.get("trust_remote_code", builtin.get("trust_remote_code", False))
    for key, value in (("enforce_eager", enforce_eager), ("trust_remote_code", trust_remote_code)):
        if not isinstance(value, bool):
            raise GpuPlanError(f"{where} {key} must be true or false, got {value!r}")

    pin = model.get("gpu")
    if pin is not None and (isinstance(pin, bool) or not isinstance(pin, int) or pin < 0):
        raise GpuPlanError(f"{where} gpu must be a GPU index, got {pin!r}")
    size = _positive_int(model.get("tensor_parallel_size", 1), f"{where} tensor_parallel_size")
    pins = _pins(model, size, where)
    kv_heads = geometry["kv_heads"]
    per_rank_heads = kv_heads_per_rank(kv_heads, size)
    if per_rank_heads is None:
        raise GpuPlanError(f"{where} {_split_problem(kv_heads, size)}")

    quant = _quantization(model, dtype, where)
    if quant and "weights_bytes" not in model and "weights_gib" not in model:
        # After the overhead on purpose: its size class stays the 16-bit one, as activations are not quantized.
        shape = _embedding_shape(model, builtin, where)
        if shape is None:
            raise GpuPlanError(f"{where} quantization {quant['method']} keeps the embedding in {dtype}: give config "
                               "(config.json as a dict) or hidden_size and vocab_size, or the checkpoint's weights_gib")
        params = int(round(_non_negative_number(model.get("parameters", builtin.get("parameters")), f"{where} parameters")))
        try:
            weights = quantized_weights_bytes(params, *shape, DTYPE_BYTES[dtype], quant)
        except GpuPlanError as exc:
            raise GpuPlanError(f"{where}: {exc}") from None

    per_token = kv_bytes_per_token(geometry["num_layers"], kv_heads, geometry["head_dim"], kv_element_bytes)
    return {
        "name": name,
        "model": model_id,
        "position": position,
        "dtype": dtype,
        "kv_cache_dtype": kv_dtype,
        "weights_bytes": weights,
        "overhead_bytes": overhead,
        "enforce_eager": enforce_eager,
        "trust_remote_code": trust_remote_code,
        "max_model_len": max_len,
        "min_sequences": min_sequences,
        "kv_bytes_per_token": per_token,
        "geometry": geometry,
        "tensor_parallel_size": size,
        "pins": pins,
        "quantization": quant["method"] if quant else None,
        "bits": quant["bits"] if quant else None,
        "group_size": quant["group_size"] if quant else None,
        "rank_weights_bytes": _ceil_div(weights, size),
        "rank_kv_bytes_per_token": per_token * per_rank_heads // kv_heads,
    }


def _resize(model: dict, size: int) -> dict:
    """The same model over `size` ranks (for the advice of a shortfall message)."""
    kv_heads = model["geometry"]["kv_heads"]
    return dict(model, tensor_parallel_size=size, rank_weights_bytes=_ceil_div(model["weights_bytes"], size),
                rank_kv_bytes_per_token=model["kv_bytes_per_token"] * kv_heads_per_rank(kv_heads, size) // kv_heads)


# ---------------------------------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------------------------------

class _Settings:
    def __init__(self, cuda_context_gib, cuda_graph_gib, margin_fraction, utilization_decimals, block_size, base_port,
                 nccl_gib):
        self.context = int(_non_negative_number(cuda_context_gib, "cuda_context_gib") * GIB)
        self.graph = int(_non_negative_number(cuda_graph_gib, "cuda_graph_gib") * GIB)
        margin = _non_negative_number(margin_fraction, "margin_fraction")
        if margin >= 0.5:
            raise GpuPlanError(f"margin_fraction is a fraction of the GPU (e.g. 0.02), got {margin_fraction!r}")
        self.margin_fraction = margin
        decimals = _positive_int(utilization_decimals, "utilization_decimals")
        if decimals > 6:
            raise GpuPlanError(f"utilization_decimals must be 1 to 6, got {utilization_decimals!r}")
        self.decimals = decimals
        self.scale = 10 ** decimals
        self.block = _positive_int(block_size, "block_size")
        self.base_port = _positive_int(base_port, "base_port")
        self.nccl = int(_non_negative_number(nccl_gib, "nccl_gib") * GIB)

    def outside(self, model: dict) -> int:
        """What one rank of `model` holds on its GPU outside its budget: a CUDA context, and NCCL buffers with TP."""
        return self.context + (self.nccl if model["tensor_parallel_size"] > 1 else 0)


def _fixed_rank(model: dict, settings: _Settings) -> int:
    """Everything inside one rank's budget except its KV cache."""
    return model["rank_weights_bytes"] + model["overhead_bytes"] + (0 if model["enforce_eager"] else settings.graph)


def _kv_rank(model: dict, tokens_per_sequence: int, sequences: int, block: int) -> int:
    # vLLM allocates whole blocks, so a sequence of L tokens takes ceil(L / block) blocks.
    return sequences * _ceil_div(tokens_per_sequence, block) * block * model["rank_kv_bytes_per_token"]


def _need_rank(model: dict, settings: _Settings) -> int:
    return _fixed_rank(model, settings) + _kv_rank(model, model["max_model_len"], model["min_sequences"], settings.block)


class _Gpu:
    """Running state of one GPU while models are placed on it. Utilisation is counted in steps of
    10**-decimals of this GPU's total; a rank of every instance on it also holds settings.outside() bytes."""

    def __init__(self, index: int, total: int, settings: _Settings):
        self.index = index
        self.total = total
        self.settings = settings
        self.margin = math.ceil(total * settings.margin_fraction)
        self.models: list[dict] = []
        self.used_units = 0
        self.outside = 0

    def units(self, num_bytes: int) -> int:
        """Steps needed to cover num_bytes, rounded up."""
        return _ceil_div(num_bytes * self.settings.scale, self.total)

    def unit_bytes(self, units: int) -> int:
        """What vLLM requests for `units` steps: math.ceil(total * util)."""
        return _ceil_div(units * self.total, self.settings.scale)

    def capacity_units(self, outside: int) -> int:
        """Steps available to the budgets once `outside` bytes (contexts, NCCL) and the margin are set aside."""
        return max(0, (self.total - self.margin - outside) * self.settings.scale // self.total)

    def free_units(self, model: dict) -> int:
        """Steps left for one rank of `model`."""
        return self.capacity_units(self.outside + self.settings.outside(model)) - self.used_units

    def room_bytes(self, model: dict) -> int:
        """Budget bytes one rank of `model` could still get here."""
        return max(0, self.free_units(model)) * self.total // self.settings.scale

    def add(self, model: dict, units: int) -> None:
        self.models.append(model)
        self.used_units += units
        self.outside += self.settings.outside(model)


def _instance_units(model: dict, gpus: list[_Gpu], settings: _Settings) -> int:
    """The --gpu-memory-utilization steps of an instance: what its tightest GPU needs (one value for all ranks)."""
    need = _need_rank(model, settings)
    return max(gpu.units(need) for gpu in gpus)


def _fits(model: dict, gpus: list[_Gpu], settings: _Settings) -> bool:
    units = _instance_units(model, gpus, settings)
    return all(units <= gpu.free_units(model) for gpu in gpus)


def _roomiest(model: dict, gpus: list[_Gpu], count: int) -> list[_Gpu]:
    """The `count` GPUs with the most room for a rank of `model` (ties: lower index first), by index."""
    chosen = sorted(gpus, key=lambda g: (-g.room_bytes(model), g.index))[:count]
    return sorted(chosen, key=lambda g: g.index)


def _tp_advice(model: dict, gpus: list[_Gpu], settings: _Settings) -> str | None:
    """'tensor_parallel_size N over GPUs ...' for the smallest N that fits, or why none does; None with one GPU."""
    if len(gpus) < 2:
        return None
    kv_heads = model["geometry"]["kv_heads"]
    for size in valid_sizes(kv_heads, len(gpus)):
        if size <= model["tensor_parallel_size"]:
            continue
        resized = _resize(model, size)
        chosen = _roomiest(resized, gpus, size)
        if _fits(resized, chosen, settings):
            over = ", ".join(str(g.index) for g in chosen)
            return f"tensor parallelism over {size} GPUs (tensor_parallel_size: {size}, on GPUs {over}: fits)"
    if model["tensor_parallel_size"] >= len(gpus):
        return None
    sizes = [n for n in valid_sizes(kv_heads, len(gpus)) if n > model["tensor_parallel_size"]]
    if not sizes:
        return f"no tensor parallelism over this host's {len(gpus)} GPUs: none of 2..{len(gpus)} splits its {kv_heads} KV heads"
    return f"tensor parallelism does not fit either (tensor_parallel_size {', '.join(map(str, sizes))} tried)"


def _shortfall_message(model: dict, targets: list[_Gpu], everywhere: list[_Gpu], settings: _Settings, pinned: bool) -> str:
    """Why `model` does not fit on `targets`, and what would make it fit (measured against `everywhere`)."""
    size = model["tensor_parallel_size"]
    need = _need_rank(model, settings)
    units = _instance_units(model, targets, settings)
    tight = min(targets, key=lambda g: (g.free_units(model) - units, g.index))
    free_units = tight.free_units(model)
    short = tight.unit_bytes(units - free_units)
    left = tight.room_bytes(model)
    unallocated = max(0, tight.total - tight.margin - tight.outside - tight.unit_bytes(tight.used_units))
    kv = _kv_rank(model, model["max_model_len"], model["min_sequences"], settings.block)
    names = ", ".join(str(g.index) for g in targets)
    if size == 1:
        where = f"GPU {tight.index}" if pinned else f"the GPU with the most room (GPU {tight.index})"
        needs = "it needs"
        outside = f"a {gib(settings.context):.2f} GiB CUDA context"
        weights = f"weights {gib(model['weights_bytes']):.2f}"
    else:
        where = (f"GPUs {names}" if pinned else f"the {size} GPUs with the most room (GPUs {names})") + f" (tightest: GPU {tight.index})"
        needs = f"each of its {size} ranks needs"
        outside = f"a {gib(settings.context):.2f} GiB CUDA context and {gib(settings.nccl):.2f} GiB of NCCL buffers"
        weights = f"weights {gib(model['rank_weights_bytes']):.2f} of {gib(model['weights_bytes']):.2f}"
    kv_what = f"KV cache for {model['min_sequences']} x {model['max_model_len']} tokens"
    lines = [
        f"model {model['name']!r} does not fit on {where}: {needs} {gib(need):.2f} GiB "
        f"({weights}, overhead {gib(_fixed_rank(model, settings) - model['rank_weights_bytes']):.2f}, {kv_what} {gib(kv):.2f}) "
        f"plus {outside}, but only {gib(unallocated):.2f} GiB is left of {gib(tight.total):.2f} GiB "
        f"({len(tight.models)} instance(s) already there, {settings.margin_fraction:.0%} margin): {gib(short):.2f} GiB short.",
    ]
    options = []
    kv_room = left - _fixed_rank(model, settings)
    per_token = model["rank_kv_bytes_per_token"] * model["min_sequences"]
    fitting_len = (kv_room // per_token) // settings.block * settings.block if kv_room > 0 else 0
    if fitting_len >= settings.block:
        options.append(f"max_model_len <= {fitting_len}")
    else:
        options.append("a shorter max_model_len cannot help: weights and overhead alone do not fit")
    kv_element_bytes = KV_CACHE_DTYPE_BYTES[model["kv_cache_dtype"]] or DTYPE_BYTES[model["dtype"]]
    if kv_element_bytes != 1:
        fp8 = dict(model, rank_kv_bytes_per_token=model["rank_kv_bytes_per_token"] // kv_element_bytes)
        fp8_short = tight.unit_bytes(tight.units(_need_rank(fp8, settings)) - free_units)
        verdict = "fits" if fp8_short <= 0 else f"still {gib(fp8_short):.2f} GiB short"
        options.append(f"kv_cache_dtype fp8 (1 byte per KV value: {verdict})")
    if model["min_sequences"] > 1:
        options.append(f"fewer than {model['min_sequences']} min_sequences")
    advice = _tp_advice(model, everywhere, settings)
    if advice:
        options.append(advice)
    if size == 1:
        options.append("another GPU (pin it with gpu: INDEX, or add a GPU)" if pinned else "another or a larger GPU")
    else:
        options.append("other GPUs (pin them with gpus: [...], or add GPUs)" if pinned else "more or larger GPUs")
    lines.append("To make it fit: " + "; or ".join(options) + ".")
    return " ".join(lines)


def _place(models: list[dict], gpus: list[_Gpu], settings: _Settings) -> dict:
    """Pinned models first (input order), then the rest: tensor-parallel ones first, each size class largest
    rank first, each on the GPUs with the most room left (worst fit: spreads the spare memory). Greedy, so a
    plan that only a cleverer packing would find is reported as not fitting; pin models to help it. For an unpinned
    model that does not fit, the remedies are measured against the models placed before it (the larger ones and the
    pinned ones). Returns each model's minimum utilisation steps by position."""
    by_index = {gpu.index: gpu for gpu in gpus}
    minimum = {}
    for model in models:
        if model["pins"] is None:
            continue
        missing = [i for i in model["pins"] if i not in by_index]
        if missing:
            raise GpuPlanError(f"model {model['name']!r} is pinned to GPU {', '.join(map(str, missing))}, which is not among the GPUs "
                               f"({', '.join(str(g.index) for g in gpus)})")
        targets = [by_index[i] for i in model["pins"]]
        if not _fits(model, targets, settings):
            # Measure against ALL the other pinned models, not only those placed so far, so that following the
            # advice makes the whole pinned group fit.
            others = [_Gpu(g.index, g.total, settings) for g in gpus]
            others_by_index = {g.index: g for g in others}
            for other in models:
                if other["pins"] is not None and other is not model:
                    other_targets = [others_by_index[i] for i in other["pins"] if i in others_by_index]
                    if len(other_targets) == len(other["pins"]):
                        other_units = _instance_units(other, other_targets, settings)
                        for gpu in other_targets:
                            gpu.add(other, other_units)
            raise GpuPlanError(_shortfall_message(model, [others_by_index[i] for i in model["pins"]], others, settings,
                                                  pinned=True))
        units = _instance_units(model, targets, settings)
        for gpu in targets:
            gpu.add(model, units)
        model["placed_on"] = list(model["pins"])
        minimum[model["position"]] = units
    floating = sorted((m for m in models if m["pins"] is None),
                      key=lambda m: (-m["tensor_parallel_size"], -_need_rank(m, settings), m["position"]))
    for model in floating:
        size = model["tensor_parallel_size"]
        if size > len(gpus):
            raise GpuPlanError(f"model {model['name']!r} tensor_parallel_size {size} is more than the {len(gpus)} GPU(s)")
        if size == 1:
            fitting = [gpu for gpu in gpus if _fits(model, [gpu], settings)]
            if not fitting:
                roomiest = max(gpus, key=lambda g: (g.room_bytes(model), -g.index))
                raise GpuPlanError(_shortfall_message(model, [roomiest], gpus, settings, pinned=False))
            targets = [max(fitting, key=lambda g: (g.room_bytes(model), -g.index))]
        else:
            targets = _roomiest(model, gpus, size)
            if not _fits(model, targets, settings):
                raise GpuPlanError(_shortfall_message(model, targets, gpus, settings, pinned=False))
        units = _instance_units(model, targets, settings)
        for gpu in targets:
            gpu.add(model, units)
        model["placed_on"] = [g.index for g in targets]
        minimum[model["position"]] = units
    return minimum


def _share_spare(spare: int, weights: list[int]) -> list[int]:
    """Split `spare` steps in proportion to `weights`, largest remainder first (ties: earlier first)."""
    total = sum(weights)
    if spare <= 0 or total <= 0:
        return [0] * len(weights)
    shares = [spare * w // total for w in weights]
    remainders = sorted(range(len(weights)), key=lambda i: (-(spare * weights[i] % total), i))
    for i in remainders[: spare - sum(shares)]:
        shares[i] += 1
    return shares


def _extra_units(gpus: list[_Gpu], minimum: dict) -> dict:
    """Spare steps per model, by position. On each GPU the spare is shared in proportion to each instance's
    per-sequence KV need (per rank: bytes per token x max_model_len), so every model gains about the same number
    of extra full-length sequences and the long-context models are not starved. A tensor-parallel instance needs
    one value on all its GPUs, so it takes the smallest of its shares; the single-GPU instances on each GPU then
    share what is left."""
    provisional = {}
    spare = {}
    for gpu in gpus:
        spare[gpu.index] = gpu.capacity_units(gpu.outside) - sum(minimum[m["position"]] for m in gpu.models)
        shares = _share_spare(spare[gpu.index], [m["rank_kv_bytes_per_token"] * m["max_model_len"] for m in gpu.models])
        for model, share in zip(gpu.models, shares):
            provisional.setdefault(model["position"], []).append(share)
    extra = {}
    for gpu in gpus:
        for model in gpu.models:
            if model["tensor_parallel_size"] > 1:
                extra[model["position"]] = min(provisional[model["position"]])
    for gpu in gpus:
        singles = [m for m in gpu.models if m["tensor_parallel_size"] == 1]
        left = spare[gpu.index] - sum(extra[m["position"]] for m in gpu.models if m["tensor_parallel_size"] > 1)
        shares = _share_spare(left, [m["rank_kv_bytes_per_token"] * m["max_model_len"] for m in singles])
        for model, share in zip(singles, shares):
            extra[model["position"]] = share
    return extra


def plan(gpus, models, base_port=DEFAULT_BASE_PORT, cuda_context_gib=DEFAULT_CUDA_CONTEXT_GIB,
         cuda_graph_gib=DEFAULT_CUDA_GRAPH_GIB, margin_fraction=DEFAULT_MARGIN_FRACTION,
         utilization_decimals=DEFAULT_UTILIZATION_DECIMALS, block_size=DEFAULT_BLOCK_SIZE, nccl_gib=DEFAULT_NCCL_GIB) -> dict:
    """Place models (one GPU each, or tensor_parallel_size GPUs) and size each vLLM instance's --gpu-memory-utilization.

    Every instance first gets the smallest utilisation that holds, on each of its GPUs, one rank's weights, overhead
    (activations, non-torch buffers, CUDA graphs unless eager) and KV cache for ``min_sequences`` full-length sequences.
    The steps left on each GPU once every rank's CUDA context (and NCCL buffers) and the margin are set aside are then
    shared out (see _extra_units). Per-model byte figures are per GPU (one rank); on GPUs of different sizes, those of
    the rank with the least KV cache.
    """
    settings = _Settings(cuda_context_gib, cuda_graph_gib, margin_fraction, utilization_decimals, block_size, base_port, nccl_gib)
    gpu_list = [_Gpu(g["index"], g["total_bytes"], settings) for g in normalize_gpus(gpus)]
    if not isinstance(models, list) or not models:
        raise GpuPlanError(f"models must be a non-empty list, got {models!r}")
    resolved = [normalize_model(model, position) for position, model in enumerate(models)]
    seen = set()
    for model in resolved:
        if model["name"] in seen:
            raise GpuPlanError(f"model name {model['name']!r} is used twice; served names must be unique")
        seen.add(model["name"])
    if settings.base_port + len(resolved) - 1 > 65535:
        raise GpuPlanError(f"base_port {settings.base_port} leaves no room for {len(resolved)} ports")

    minimum = _place(resolved, gpu_list, settings)
    extra = _extra_units(gpu_list, minimum)
    units = {position: minimum[position] + extra[position] for position in minimum}
    by_index = {gpu.index: gpu for gpu in gpu_list}

    ranks = {}  # position -> [(gpu, budget, kv)] per rank
    gpu_reports = []
    for gpu in gpu_list:
        # Start order = input order, the same order as the ports.
        gpu.models.sort(key=lambda m: m["position"])
        startup = []
        used = 0
        totals = {"weights": 0, "kv": 0, "overhead": 0, "nccl": 0}
        for model in gpu.models:
            budget = gpu.unit_bytes(units[model["position"]])
            fixed = _fixed_rank(model, settings)
            outside = settings.outside(model)
            free_seen = gpu.total - used - outside
            startup.append({"name": model["name"], "free_bytes": free_seen, "requested_bytes": budget,
                            "free_gib": gib(free_seen), "requested_gib": gib(budget)})
            used += budget + outside
            totals["weights"] += model["rank_weights_bytes"]
            totals["overhead"] += fixed - model["rank_weights_bytes"]
            totals["kv"] += budget - fixed
            totals["nccl"] += outside - settings.context
            ranks.setdefault(model["position"], []).append((gpu, budget, budget - fixed))
        contexts = len(gpu.models) * settings.context
        unused = gpu.total - used - gpu.margin
        gpu_reports.append({
            "index": gpu.index,
            "total_bytes": gpu.total,
            "weights_bytes": totals["weights"],
            "kv_cache_bytes": totals["kv"],
            "overhead_bytes": totals["overhead"],
            "cuda_context_bytes": contexts,
            "nccl_bytes": totals["nccl"],
            "margin_bytes": gpu.margin,
            "unused_bytes": unused,
            "total_gib": gib(gpu.total),
            "weights_gib": gib(totals["weights"]),
            "kv_cache_gib": gib(totals["kv"]),
            "overhead_gib": gib(totals["overhead"]),
            "cuda_context_gib": gib(contexts),
            "nccl_gib": gib(totals["nccl"]),
            "margin_gib": gib(gpu.margin),
            "unused_gib": gib(unused),
            "utilization_sum": f"{sum(units[m['position']] for m in gpu.models) / settings.scale:.{settings.decimals}f}",
            "models": [m["name"] for m in gpu.models],
            "startup": startup,
        })

    planned = []
    for model in resolved:
        position = model["position"]
        block_bytes = model["rank_kv_bytes_per_token"] * settings.block
        _gpu, budget, kv = min(ranks[position], key=lambda r: (r[2] // block_bytes, r[0].index))
        tokens = kv // block_bytes * settings.block
        first = by_index[model["placed_on"][0]]
        fixed = _fixed_rank(model, settings)
        planned.append({
            "name": model["name"],
            "model": model["model"],
            "gpu": first.index,
            "gpus": list(model["placed_on"]),
            "tensor_parallel_size": model["tensor_parallel_size"],
            "start_index": [m["position"] for m in first.models].index(position),
            "port": settings.base_port + position,
            "gpu_memory_utilization": f"{units[position] / settings.scale:.{settings.decimals}f}",
            "budget_bytes": budget,
            "weights_bytes": model["rank_weights_bytes"],
            "overhead_bytes": fixed - model["rank_weights_bytes"],
            "kv_cache_bytes": kv,
            "budget_gib": gib(budget),
            "weights_gib": gib(model["rank_weights_bytes"]),
            "overhead_gib": gib(fixed - model["rank_weights_bytes"]),
            "kv_cache_gib": gib(kv),
            "weights_total_bytes": model["weights_bytes"],
            "weights_total_gib": gib(model["weights_bytes"]),
            "kv_bytes_per_token": model["kv_bytes_per_token"],
            "kv_capacity_tokens": tokens,
            "kv_capacity_sequences": round(tokens / model["max_model_len"], 2),
            "min_sequences": model["min_sequences"],
            "max_model_len": model["max_model_len"],
            "dtype": model["dtype"],
            "kv_cache_dtype": model["kv_cache_dtype"],
            "quantization": model["quantization"],
            "bits": model["bits"],
            "group_size": model["group_size"],
            "enforce_eager": model["enforce_eager"],
            "trust_remote_code": model["trust_remote_code"],
        })
    return {"models": planned, "gpus": gpu_reports}


# ---------------------------------------------------------------------------------------------------
# vLLM command line
# ---------------------------------------------------------------------------------------------------

DEFAULT_EXECUTABLE = ("python3", "-m", "vllm.entrypoints.openai.api_server")
_ARGV_REQUIRED = ("model", "name", "port", "gpu_memory_utilization", "max_model_len")


def vllm_argv(planned_model, executable=DEFAULT_EXECUTABLE, host="127.0.0.1", api_key_env=None) -> list[str]:
    """The argv that starts vLLM's OpenAI server for one planned model (an item of plan()["models"]).

    --tensor-parallel-size (only above 1) and --quantization (when set) follow --kv-cache-dtype. The API key
    is never a value here: ``api_key_env`` names an environment variable and the argv carries ``${NAME}``,
    which systemd expands in ExecStart from Environment=/EnvironmentFile=.
    """
    if not isinstance(planned_model, dict):
        raise GpuPlanError(f"expects one planned model (a dict from llm_gpu_plan's models), got {planned_model!r}")
    missing = [key for key in _ARGV_REQUIRED if key not in planned_model]
    if missing:
        raise GpuPlanError(f"planned model {planned_model.get('name')!r} lacks {', '.join(missing)}")
    if isinstance(executable, str):
        executable = [executable]
    if not isinstance(executable, (list, tuple)) or not executable or not all(isinstance(a, str) and a for a in executable):
        raise GpuPlanError(f"executable must be a non-empty list of strings, got {executable!r}")
    name = planned_model["name"]
    util = str(planned_model["gpu_memory_utilization"])
    try:
        util_value = float(util)
    except ValueError:
        util_value = -1.0
    if not 0 < util_value <= 1:
        raise GpuPlanError(f"planned model {name!r} gpu_memory_utilization must be in (0, 1], got {util!r}")
    argv = list(executable) + [
        "--model", str(planned_model["model"]),
        "--served-model-name", str(name),
    ]
    if host is not None:
        if not isinstance(host, str) or not host or any(c.isspace() for c in host):
            raise GpuPlanError(f"host must be an address without spaces, got {host!r}")
        argv += ["--host", host]
    argv += [
        "--port", str(_positive_int(planned_model["port"], f"planned model {name!r} port")),
        "--gpu-memory-utilization", util,
        "--max-model-len", str(_positive_int(planned_model["max_model_len"], f"planned model {name!r} max_model_len")),
        "--dtype", str(planned_model.get("dtype", "auto")),
        "--kv-cache-dtype", str(planned_model.get("kv_cache_dtype", "auto")),
    ]
    flags = []
    if planned_model.get("enforce_eager"):
        flags.append("--enforce-eager")
    if planned_model.get("trust_remote_code"):
        flags.append("--trust-remote-code")
    if api_key_env is not None:
        if not isinstance(api_key_env, str) or not _ENV_NAME.match(api_key_env):
            raise GpuPlanError(f"api_key_env must be an environment variable NAME such as VLLM_API_KEY, got {api_key_env!r}")
        flags += ["--api-key", "${" + api_key_env + "}"]
    size = _positive_int(planned_model.get("tensor_parallel_size", 1), f"planned model {name!r} tensor_parallel_size")
    if size > 1:
        argv += ["--tensor-parallel-size", str(size)]
    method = planned_model.get("quantization")
    if method is not None:
        if not isinstance(method, str) or method not in QUANTIZATION_BITS:
            raise GpuPlanError(f"planned model {name!r} quantization must be one of {', '.join(QUANTIZATION_BITS)}, got {method!r}")
        argv += ["--quantization", method]
    return argv + flags
