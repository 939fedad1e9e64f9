# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure GPU memory planner for several vLLM instances sharing GPUs, and their command lines.

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

Everything here is plain arithmetic on integers (bytes, and utilisation in units of 10**-decimals of
the total), so results are exact and reproducible.
"""

from __future__ import annotations

import math
import re

GIB = 1 << 30
MIB = 1 << 20

# vLLM parses --gpu-memory-utilization as a Python float (any precision is accepted; 0 < u <= 1).
# Three decimals make one step 0.1 % of the card (0.08 GiB on 80 GB, 0.14 GiB on 141 GB), where two
# would waste up to 1.4 GiB per instance on an H200 when rounding each minimum up to a step. The
# printed value is exactly the planned one (no float formatting surprises) because the planner works
# in integer steps and only formats at the end.
DEFAULT_UTILIZATION_DECIMALS = 3
DEFAULT_CUDA_CONTEXT_GIB = 0.5  # 0.3-0.6 GiB per process; measure once on the target driver.
DEFAULT_CUDA_GRAPH_GIB = 0.5  # CUDA graphs live inside the budget (vLLM v0.21+); none with --enforce-eager.
DEFAULT_MARGIN_FRACTION = 0.02  # driver/ECC reservations, nvidia-smi vs CUDA total, stray processes.
DEFAULT_BLOCK_SIZE = 16  # vLLM's default KV block size in tokens on CUDA.
DEFAULT_BASE_PORT = 8000

# Bytes per element. vLLM's dtype "auto" serves FP32 and FP16 checkpoints in FP16 and BF16 ones in BF16,
# so "auto" is 2 bytes.
DTYPE_BYTES = {"auto": 2, "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}
KV_CACHE_DTYPE_BYTES = {"auto": None, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

# Well-known models: KV geometry from each model's config.json, published parameter counts (3
# significant figures) and a planning overhead for activations and non-torch buffers, in GiB.
# kv_heads is what vLLM allocates: DeciLM-7B has a per-layer num_key_value_heads_per_layer list and
# vLLM's old decilm.py "degrouped" it to max(list) (4), so the cache is sized as if every layer had 4.
# Current vLLM (PR #15008, ~v0.8.2) no longer loads DeciLM-7B at all; it needs an older pinned vLLM.
BUILTIN_MODELS = {
    "meta-llama-3-8b-instruct": {"num_layers": 32, "kv_heads": 8, "head_dim": 128, "max_position_embeddings": 8192,
                                 "parameters": 8.03e9, "overhead_gib": 1.5},
    "meta-llama-3.1-8b-instruct": {"num_layers": 32, "kv_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
                                   "parameters": 8.03e9, "overhead_gib": 1.5},
    # Gemma sets head_dim 256 explicitly (16 x 256 = 4096 != hidden 3072); its 256k vocabulary makes the
    # logits/sampler buffers large, hence the higher overhead.
    "gemma-1.1-7b-it": {"num_layers": 28, "kv_heads": 16, "head_dim": 256, "max_position_embeddings": 8192,
                        "parameters": 8.54e9, "overhead_gib": 2.0},
    "decilm-7b-instruct": {"num_layers": 32, "kv_heads": 4, "head_dim": 128, "max_position_embeddings": 8192,
                           "parameters": 7.04e9, "overhead_gib": 1.5, "trust_remote_code": True},
    # No GQA: 32 KV heads of 3072 / 32 = 96; the 128k context is what makes it the KV hog.
    "phi-3-mini-128k-instruct": {"num_layers": 32, "kv_heads": 32, "head_dim": 96, "max_position_embeddings": 131072,
                                 "parameters": 3.82e9, "overhead_gib": 1.2},
    "stablelm-2-1_6b-chat": {"num_layers": 24, "kv_heads": 32, "head_dim": 64, "max_position_embeddings": 4096,
                             "parameters": 1.64e9, "overhead_gib": 0.8},
    "mistral-7b-instruct-v0.2": {"num_layers": 32, "kv_heads": 8, "head_dim": 128, "max_position_embeddings": 32768,
                                 "parameters": 7.24e9, "overhead_gib": 1.5},
    "qwen2.5-7b-instruct": {"num_layers": 28, "kv_heads": 4, "head_dim": 128, "max_position_embeddings": 32768,
                            "parameters": 7.62e9, "overhead_gib": 1.5},
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


def normalize_model(model, position: int) -> dict:
    """One model entry with every number resolved, or GpuPlanError naming the model and the field."""
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

    per_token = kv_bytes_per_token(geometry["num_layers"], geometry["kv_heads"], geometry["head_dim"], kv_element_bytes)
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
        "gpu": pin,
    }


# ---------------------------------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------------------------------

class _Settings:
    def __init__(self, cuda_context_gib, cuda_graph_gib, margin_fraction, utilization_decimals, block_size, base_port):
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


def _fixed_bytes(model: dict, settings: _Settings) -> int:
    """Everything inside the budget except the KV cache."""
    return model["weights_bytes"] + model["overhead_bytes"] + (0 if model["enforce_eager"] else settings.graph)


def _kv_bytes_for(model: dict, tokens_per_sequence: int, sequences: int, block: int) -> int:
    # vLLM allocates whole blocks, so a sequence of L tokens takes ceil(L / block) blocks.
    return sequences * _ceil_div(tokens_per_sequence, block) * block * model["kv_bytes_per_token"]


def _need_bytes(model: dict, settings: _Settings) -> int:
    return _fixed_bytes(model, settings) + _kv_bytes_for(model, model["max_model_len"], model["min_sequences"], settings.block)


class _Gpu:
    """Running state of one GPU while models are placed on it."""

    def __init__(self, index: int, total: int, settings: _Settings):
        self.index = index
        self.total = total
        self.settings = settings
        self.margin = math.ceil(total * settings.margin_fraction)
        self.models: list[dict] = []
        self.used_units = 0

    def units(self, num_bytes: int) -> int:
        """Utilisation steps (10**-decimals of the total) needed to cover num_bytes, rounded up."""
        return _ceil_div(num_bytes * self.settings.scale, self.total)

    def unit_bytes(self, units: int) -> int:
        """What vLLM requests for `units` steps: math.ceil(total * util)."""
        return _ceil_div(units * self.total, self.settings.scale)

    def capacity_units(self, count: int) -> int:
        """Steps available to `count` instances once their contexts and the margin are set aside."""
        free = self.total - self.margin - count * self.settings.context
        return max(0, free * self.settings.scale // self.total)

    def free_units(self) -> int:
        """Steps left for one more instance."""
        return self.capacity_units(len(self.models) + 1) - self.used_units

    def room_bytes(self) -> int:
        """Budget bytes one more instance could still get here."""
        return max(0, self.free_units()) * self.total // self.settings.scale

    def add(self, model: dict, units: int) -> None:
        self.models.append(model)
        self.used_units += units


def _shortfall_message(model: dict, gpu: _Gpu, settings: _Settings, pinned: bool) -> str:
    need = _need_bytes(model, settings)
    need_units = gpu.units(need)
    free_units = gpu.free_units()
    short = gpu.unit_bytes(need_units - free_units)
    left = gpu.room_bytes()
    unallocated = max(0, gpu.total - gpu.margin - len(gpu.models) * settings.context - gpu.unit_bytes(gpu.used_units))
    kv = _kv_bytes_for(model, model["max_model_len"], model["min_sequences"], settings.block)
    where = f"GPU {gpu.index}" if pinned else f"the GPU with the most room (GPU {gpu.index})"
    lines = [
        f"model {model['name']!r} does not fit on {where}: it needs {gib(need):.2f} GiB "
        f"(weights {gib(model['weights_bytes']):.2f}, overhead {gib(_fixed_bytes(model, settings) - model['weights_bytes']):.2f}, "
        f"KV cache for {model['min_sequences']} x {model['max_model_len']} tokens {gib(kv):.2f}) plus a "
        f"{gib(settings.context):.2f} GiB CUDA context, but only {gib(unallocated):.2f} GiB is left "
        f"of {gib(gpu.total):.2f} GiB ({len(gpu.models)} instance(s) already there, "
        f"{settings.margin_fraction:.0%} margin): {gib(short):.2f} GiB short.",
    ]
    options = []
    kv_room = left - _fixed_bytes(model, settings)
    per_token = model["kv_bytes_per_token"] * model["min_sequences"]
    fitting_len = (kv_room // per_token) // settings.block * settings.block if kv_room > 0 else 0
    if fitting_len >= settings.block:
        options.append(f"max_model_len <= {fitting_len}")
    else:
        options.append("a shorter max_model_len cannot help: weights and overhead alone do not fit")
    kv_element_bytes = KV_CACHE_DTYPE_BYTES[model["kv_cache_dtype"]] or DTYPE_BYTES[model["dtype"]]
    if kv_element_bytes != 1:
        fp8 = dict(model, kv_bytes_per_token=model["kv_bytes_per_token"] // kv_element_bytes)
        fp8_short = gpu.unit_bytes(gpu.units(_need_bytes(fp8, settings)) - free_units)
        verdict = "fits" if fp8_short <= 0 else f"still {gib(fp8_short):.2f} GiB short"
        options.append(f"kv_cache_dtype fp8 (1 byte per KV value: {verdict})")
    if model["min_sequences"] > 1:
        options.append(f"fewer than {model['min_sequences']} min_sequences")
    options.append("another GPU (pin it with gpu: INDEX, or add a GPU)" if pinned else "another or a larger GPU")
    lines.append("To make it fit: " + "; or ".join(options) + ".")
    return " ".join(lines)


def _place(models: list[dict], gpus: list[_Gpu], settings: _Settings) -> None:
    """Pinned models first (input order), then the rest by size, largest first, each on the GPU with the
    most room left (worst fit: spreads the spare memory). Greedy, so a plan that only a cleverer packing
    would find is reported as not fitting; pin models to help it. For an unpinned model that does not fit,
    the remedies are measured against the models placed before it (the larger ones and the pinned ones)."""
    by_index = {gpu.index: gpu for gpu in gpus}
    for model in models:
        if model["gpu"] is None:
            continue
        gpu = by_index.get(model["gpu"])
        if gpu is None:
            raise GpuPlanError(f"model {model['name']!r} is pinned to GPU {model['gpu']}, which is not among the GPUs "
                               f"({', '.join(str(g.index) for g in gpus)})")
        units = gpu.units(_need_bytes(model, settings))
        if units > gpu.free_units():
            # Measure the shortfall against ALL the other models pinned there, not only those placed so
            # far, so that following the suggested remedy makes the whole group fit.
            others = _Gpu(gpu.index, gpu.total, settings)
            for other in models:
                if other["gpu"] == gpu.index and other is not model:
                    others.add(other, others.units(_need_bytes(other, settings)))
            raise GpuPlanError(_shortfall_message(model, others, settings, pinned=True))
        gpu.add(model, units)
    floating = sorted((m for m in models if m["gpu"] is None), key=lambda m: (-_need_bytes(m, settings), m["position"]))
    for model in floating:
        need = _need_bytes(model, settings)
        fitting = [gpu for gpu in gpus if gpu.units(need) <= gpu.free_units()]
        if not fitting:
            roomiest = max(gpus, key=lambda g: (g.room_bytes(), -g.index))
            raise GpuPlanError(_shortfall_message(model, roomiest, settings, pinned=False))
        best = max(fitting, key=lambda g: (g.room_bytes(), -g.index))
        best.add(model, best.units(need))


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


def plan(gpus, models, base_port=DEFAULT_BASE_PORT, cuda_context_gib=DEFAULT_CUDA_CONTEXT_GIB,
         cuda_graph_gib=DEFAULT_CUDA_GRAPH_GIB, margin_fraction=DEFAULT_MARGIN_FRACTION,
         utilization_decimals=DEFAULT_UTILIZATION_DECIMALS, block_size=DEFAULT_BLOCK_SIZE) -> dict:
    """Place models on GPUs and size each vLLM instance's --gpu-memory-utilization.

    Per GPU: every model first gets the smallest utilisation that holds its weights, overhead (activations,
    non-torch buffers, CUDA graphs unless eager) and KV cache for ``min_sequences`` full-length sequences.
    The steps left once every instance's CUDA context and the margin are set aside are then shared out in
    proportion to each model's per-sequence KV need (bytes per token x max_model_len), so every model gains
    about the same number of extra full-length sequences and the long-context models are not starved.
    """
    settings = _Settings(cuda_context_gib, cuda_graph_gib, margin_fraction, utilization_decimals, block_size, base_port)
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

    _place(resolved, gpu_list, settings)

    planned = {}
    gpu_reports = []
    for gpu in gpu_list:
        # Start order = input order, the same order as the ports.
        gpu.models.sort(key=lambda m: m["position"])
        minimum = [gpu.units(_need_bytes(m, settings)) for m in gpu.models]
        spare = gpu.capacity_units(len(gpu.models)) - sum(minimum)
        extra = _share_spare(spare, [m["kv_bytes_per_token"] * m["max_model_len"] for m in gpu.models])
        startup = []
        used = 0
        totals = {"weights": 0, "kv": 0, "overhead": 0}
        for order, (model, units) in enumerate(zip(gpu.models, (a + b for a, b in zip(minimum, extra)))):
            budget = gpu.unit_bytes(units)
            fixed = _fixed_bytes(model, settings)
            kv = budget - fixed
            tokens = kv // (model["kv_bytes_per_token"] * settings.block) * settings.block
            free_seen = gpu.total - used - settings.context
            startup.append({"name": model["name"], "free_bytes": free_seen, "requested_bytes": budget,
                            "free_gib": gib(free_seen), "requested_gib": gib(budget)})
            used += budget + settings.context
            totals["weights"] += model["weights_bytes"]
            totals["overhead"] += fixed - model["weights_bytes"]
            totals["kv"] += kv
            planned[model["position"]] = {
                "name": model["name"],
                "model": model["model"],
                "gpu": gpu.index,
                "start_index": order,
                "port": settings.base_port + model["position"],
                "gpu_memory_utilization": f"{units / settings.scale:.{settings.decimals}f}",
                "budget_bytes": budget,
                "weights_bytes": model["weights_bytes"],
                "overhead_bytes": fixed - model["weights_bytes"],
                "kv_cache_bytes": kv,
                "budget_gib": gib(budget),
                "weights_gib": gib(model["weights_bytes"]),
                "overhead_gib": gib(fixed - model["weights_bytes"]),
                "kv_cache_gib": gib(kv),
                "kv_bytes_per_token": model["kv_bytes_per_token"],
                "kv_capacity_tokens": tokens,
                "kv_capacity_sequences": round(tokens / model["max_model_len"], 2),
                "min_sequences": model["min_sequences"],
                "max_model_len": model["max_model_len"],
                "dtype": model["dtype"],
                "kv_cache_dtype": model["kv_cache_dtype"],
                "enforce_eager": model["enforce_eager"],
                "trust_remote_code": model["trust_remote_code"],
            }
        contexts = len(gpu.models) * settings.context
        unused = gpu.total - used - gpu.margin
        gpu_reports.append({
            "index": gpu.index,
            "total_bytes": gpu.total,
            "weights_bytes": totals["weights"],
            "kv_cache_bytes": totals["kv"],
            "overhead_bytes": totals["overhead"],
            "cuda_context_bytes": contexts,
            "margin_bytes": gpu.margin,
            "unused_bytes": unused,
            "total_gib": gib(gpu.total),
            "weights_gib": gib(totals["weights"]),
            "kv_cache_gib": gib(totals["kv"]),
            "overhead_gib": gib(totals["overhead"]),
            "cuda_context_gib": gib(contexts),
            "margin_gib": gib(gpu.margin),
            "unused_gib": gib(unused),
            "utilization_sum": f"{(sum(minimum) + sum(extra)) / settings.scale:.{settings.decimals}f}",
            "models": [m["name"] for m in gpu.models],
            "startup": startup,
        })
    return {"models": [planned[i] for i in range(len(resolved))], "gpus": gpu_reports}


# ---------------------------------------------------------------------------------------------------
# vLLM command line
# ---------------------------------------------------------------------------------------------------

DEFAULT_EXECUTABLE = ("python3", "-m", "vllm.entrypoints.openai.api_server")
_ARGV_REQUIRED = ("model", "name", "port", "gpu_memory_utilization", "max_model_len")


def vllm_argv(planned_model, executable=DEFAULT_EXECUTABLE, host="127.0.0.1", api_key_env=None) -> list[str]:
    """The argv that starts vLLM's OpenAI server for one planned model (an item of plan()["models"]).

    The API key is never a value here: ``api_key_env`` names an environment variable and the argv
    carries ``${NAME}``, which systemd expands in ExecStart from Environment=/EnvironmentFile=.
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
    if planned_model.get("enforce_eager"):
        argv.append("--enforce-eager")
    if planned_model.get("trust_remote_code"):
        argv.append("--trust-remote-code")
    if api_key_env is not None:
        if not isinstance(api_key_env, str) or not _ENV_NAME.match(api_key_env):
            raise GpuPlanError(f"api_key_env must be an environment variable NAME such as VLLM_API_KEY, got {api_key_env!r}")
        argv += ["--api-key", "${" + api_key_env + "}"]
    return argv
