from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.llm_gpu_plan import FilterModule

_llm_gpu_plan = FilterModule().filters()["llm_gpu_plan"]

# The plans recorded in this file were made with 0.5 GiB CUDA contexts, the default until it was measured on an H200
# (2026-12-04, 0.7 GiB since; test__gpu_plan.py covers the default). They pin the arithmetic, so they keep that input.
RECORDED_CONTEXT_GIB = 0.5


def llm_gpu_plan(gpus, models, *args, **options):
    return _llm_gpu_plan(gpus, models, *args, **{"cuda_context_gib": RECORDED_CONTEXT_GIB, **options})


REFERENCE = json.loads((Path(__file__).parents[2] / "fixtures" / "llm" / "reference_models.json").read_text())

# nvidia-smi --query-gpu=index,memory.total --format=csv,noheader on an H100 80GB and an H200.
H100 = [{"index": 0, "memory_total": "81559 MiB"}]
H200 = [{"index": 0, "memory_total": "143771 MiB"}]


def test_registered():
    assert set(FilterModule().filters()) == {"llm_gpu_plan"}


@pytest.mark.parametrize(
    "gpus,utils",
    [
        (H100, ["0.227", "0.256", "0.198", "0.201", "0.066"]),
        (H200, ["0.169", "0.215", "0.132", "0.378", "0.068"]),
    ],
    ids=["80GB", "141GB"],
)
def test_reference_design(gpus, utils):
    result = llm_gpu_plan(gpus, REFERENCE)
    assert [m["gpu_memory_utilization"] for m in result["models"]] == utils
    for spec, planned in zip(REFERENCE, result["models"]):
        assert planned["kv_capacity_tokens"] >= spec["max_model_len"]
    gpu = result["gpus"][0]
    assert gpu["models"] == [m["name"] for m in REFERENCE]
    committed = sum(m["budget_bytes"] for m in result["models"]) + gpu["cuda_context_bytes"] + gpu["margin_bytes"]
    assert committed <= gpu["total_bytes"]


def test_options_pass_through():
    result = llm_gpu_plan(H200, REFERENCE[:1], base_port=9100, cuda_context_gib=0.4, cuda_graph_gib=0, margin_fraction=0.05,
                          utilization_decimals=2, block_size=32)
    model, gpu = result["models"][0], result["gpus"][0]
    assert model["port"] == 9100
    assert len(model["gpu_memory_utilization"]) == 4
    assert model["overhead_gib"] == 1.5  # no CUDA-graph allowance
    assert model["kv_capacity_tokens"] % 32 == 0
    assert gpu["cuda_context_gib"] == 0.4
    assert gpu["margin_gib"] == round(143771 * 2 ** 20 * 0.05 / 2 ** 30, 2)


@pytest.mark.parametrize(
    "gpus,models,message",
    [
        ([{"index": 0, "memory_total": "40960 MiB"}], REFERENCE, r"^llm_gpu_plan: model 'decilm-7b' does not fit .* GiB short\. To make it fit: "),
        ([{"index": 0}], REFERENCE, "^llm_gpu_plan: GPU 0 has no memory total"),
        (H100, [dict(REFERENCE[0], max_model_len=-5)], "^llm_gpu_plan: model 'llama-3-8b' max_model_len must be a positive integer, got -5"),
        (H100, [dict(REFERENCE[0], model="acme/mystery")], "'acme/mystery' is not a built-in model"),
    ],
)
def test_errors_are_filter_errors(gpus, models, message):
    with pytest.raises(AnsibleFilterError, match=message):
        llm_gpu_plan(gpus, models)


# --------------------------------------------------------------------------------------------------
# Tensor parallelism and quantized weights (issue 19), on models outside the built-in table
# --------------------------------------------------------------------------------------------------

# Fields of each model's config.json on the Hugging Face Hub, checked against public copies of those files (and
# the model cards' parameter counts). The parameter counts are computed here from the shapes the configs give:
# per layer q, k, v, o projections (+ Qwen2's q/k/v biases), the gated MLP (x 8 experts and a router for
# Mixtral), two RMSNorms; plus the embedding and the untied LM head (vocab x hidden each) and the final norm.
LLAMA_31_70B_CONFIG = {  # meta-llama/Llama-3.1-70B-Instruct
    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_size": 8192,
    "intermediate_size": 28672, "vocab_size": 128256, "tie_word_embeddings": False, "max_position_embeddings": 131072,
}
QWEN_25_72B_CONFIG = {  # Qwen/Qwen2.5-72B-Instruct
    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_size": 8192,
    "intermediate_size": 29568, "vocab_size": 152064, "tie_word_embeddings": False, "max_position_embeddings": 32768,
}
MIXTRAL_8X7B_CONFIG = {  # mistralai/Mixtral-8x7B-Instruct-v0.1
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096, "head_dim": 128,
    "intermediate_size": 14336, "num_local_experts": 8, "vocab_size": 32000, "tie_word_embeddings": False,
    "max_position_embeddings": 32768,
}


def _parameters(config, qkv_bias=False):
    h, layers, inter = config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"]
    head_dim = config.get("head_dim", h // config["num_attention_heads"])
    kv = config["num_key_value_heads"] * head_dim
    attention = 2 * h * h + 2 * h * kv + ((h + 2 * kv) if qkv_bias else 0)
    experts = config.get("num_local_experts", 1)
    mlp = experts * 3 * h * inter + (h * experts if experts > 1 else 0)
    return layers * (attention + mlp + 2 * h) + 2 * config["vocab_size"] * h + h


LLAMA_70B_PARAMETERS = _parameters(LLAMA_31_70B_CONFIG)
QWEN_72B_PARAMETERS = _parameters(QWEN_25_72B_CONFIG, qkv_bias=True)
MIXTRAL_PARAMETERS = _parameters(MIXTRAL_8X7B_CONFIG)

# nvidia-smi --query-gpu=index,memory.total --format=csv,noheader on an A100-SXM4-80GB: "0, 81920 MiB".
A100 = [{"index": i, "memory_total": "81920 MiB"} for i in range(4)]
A100_BYTES = 81920 * 2 ** 20
GIB = 2 ** 30


def llama_70b(**overrides):
    return {"name": "llama-70b", "model": "meta-llama/Llama-3.1-70B-Instruct", "dtype": "bfloat16", "max_model_len": 8192,
            "parameters": LLAMA_70B_PARAMETERS, "config": LLAMA_31_70B_CONFIG, **overrides}


def test_published_parameter_counts():
    # The model cards say 70.6B, 72.7B and 46.7B; in bf16 Llama-3.1-70B is 141.1 GB, the size of its safetensors.
    assert LLAMA_70B_PARAMETERS == 70_553_706_496 and round(LLAMA_70B_PARAMETERS * 2 / 1e9, 1) == 141.1
    assert round(QWEN_72B_PARAMETERS / 1e9, 1) == 72.7
    assert round(MIXTRAL_PARAMETERS / 1e9, 1) == 46.7


@pytest.mark.parametrize("config,parameters,per_token", [
    (LLAMA_31_70B_CONFIG, LLAMA_70B_PARAMETERS, 2 * 80 * 8 * 128 * 2),  # 320 KiB: 80 layers, 8 KV heads of 128, bf16
    (QWEN_25_72B_CONFIG, QWEN_72B_PARAMETERS, 2 * 80 * 8 * 128 * 2),
    (MIXTRAL_8X7B_CONFIG, MIXTRAL_PARAMETERS, 2 * 32 * 8 * 128 * 2),  # 128 KiB: the experts add weights, not KV
], ids=["llama-3.1-70b", "qwen2.5-72b", "mixtral-8x7b"])
def test_large_models_kv_per_token_and_weights(config, parameters, per_token):
    model = {"name": "m", "model": "x/y", "dtype": "bfloat16", "max_model_len": 4096, "parameters": parameters,
             "config": config, "tensor_parallel_size": 4}
    planned = llm_gpu_plan(A100, [model])["models"][0]
    assert planned["kv_bytes_per_token"] == per_token
    assert planned["weights_total_bytes"] == 2 * parameters
    assert planned["weights_bytes"] == 2 * parameters // 4  # each of the 4 ranks
    assert planned["gpus"] == [0, 1, 2, 3]


def test_llama_70b_bf16_does_not_fit_one_80gb_gpu_and_says_tp2_would():
    with pytest.raises(AnsibleFilterError) as error:
        llm_gpu_plan(A100[:2], [llama_70b()])
    message = str(error.value)
    # Hand computation, in steps of 0.1 % of the card: the model needs its bf16 weights, 2.5 GiB overhead (the
    # size class above 20 GiB), 0.5 GiB of CUDA graphs and 8192 tokens of 320 KiB; the card offers its total less
    # the 2 % margin and one CUDA context.
    need = 2 * LLAMA_70B_PARAMETERS + int(2.5 * GIB) + GIB // 2 + 8192 * 327680
    free = A100_BYTES - math.ceil(A100_BYTES * 0.02) - GIB // 2
    short_steps = -(-need * 1000 // A100_BYTES) - free * 1000 // A100_BYTES
    short_gib = round(-(-short_steps * A100_BYTES // 1000) / GIB, 2)
    assert message.startswith("llm_gpu_plan: model 'llama-70b' does not fit on the GPU with the most room (GPU 0): "
                              "it needs 136.92 GiB (weights 131.42, overhead 3.00, KV cache for 1 x 8192 tokens 2.50)")
    assert f"{short_gib:.2f} GiB short" in message and short_gib == 59.12
    assert "tensor parallelism over 2 GPUs (tensor_parallel_size: 2, on GPUs 0, 1: fits)" in message


def test_llama_70b_bf16_over_two_80gb_gpus():
    result = llm_gpu_plan(A100[:2], [llama_70b(tensor_parallel_size=2)])
    model = result["models"][0]
    # Per rank: half the weights, the full overhead and graphs, half of each token's KV (4 of the 8 KV heads).
    rank_need = LLAMA_70B_PARAMETERS + 3 * GIB + 8192 * 327680 // 2
    minimum = -(-rank_need * 1000 // A100_BYTES)
    # Each GPU sets aside its margin, one CUDA context and the NCCL buffers (0.6 GiB default) of its rank.
    capacity = (A100_BYTES - math.ceil(A100_BYTES * 0.02) - GIB // 2 - int(0.6 * GIB)) * 1000 // A100_BYTES
    assert (minimum, capacity) == (875, 966)
    assert model["gpu_memory_utilization"] == "0.966"  # the whole spare goes to the only instance
    assert model["gpus"] == [0, 1] and model["gpu"] == 0 and model["tensor_parallel_size"] == 2
    budget = -(-966 * A100_BYTES // 1000)
    kv = budget - LLAMA_70B_PARAMETERS - 3 * GIB
    assert (model["budget_bytes"], model["kv_cache_bytes"]) == (budget, kv)
    assert model["kv_capacity_tokens"] == kv // (163840 * 16) * 16 == 56160
    for gpu in result["gpus"]:
        assert gpu["models"] == ["llama-70b"] and gpu["utilization_sum"] == "0.966"
        assert gpu["nccl_bytes"] == int(0.6 * GIB)
        assert sum(gpu[k] for k in ("weights_bytes", "kv_cache_bytes", "overhead_bytes", "cuda_context_bytes", "nccl_bytes",
                                    "margin_bytes", "unused_bytes")) == gpu["total_bytes"]
        assert gpu["startup"][0]["free_bytes"] >= gpu["startup"][0]["requested_bytes"]


def test_kv_heads_not_divisible_by_the_tensor_parallel_size():
    with pytest.raises(AnsibleFilterError, match=r"^llm_gpu_plan: model 'llama-70b' tensor_parallel_size 3 does not divide the "
                                                 r"model's 8 KV heads \(num_key_value_heads\).*Use one of 1, 2, 4, 8$"):
        llm_gpu_plan(A100[:3], [llama_70b(tensor_parallel_size=3)])


def _awq_bytes(parameters, config, bits=4, group=128):
    embedding = 2 * config["vocab_size"] * config["hidden_size"]  # embedding and LM head, kept in 16 bits
    per_weight = Fraction(bits, 8) + Fraction(2, group) + Fraction(bits, 8 * group)  # weight, fp16 scale, packed zero
    return embedding * 2 + math.ceil((parameters - embedding) * per_weight)


def test_llama_70b_awq_4bit_fits_one_80gb_gpu():
    result = llm_gpu_plan(A100[:1], [llama_70b(quantization="awq")])
    model = result["models"][0]
    assert model["weights_total_bytes"] == _awq_bytes(LLAMA_70B_PARAMETERS, LLAMA_31_70B_CONFIG)
    # About 37 GiB (39.8 GB): the published AWQ-INT4 checkpoints of this model are about 40 GB.
    assert model["weights_total_gib"] == 37.03
    assert (model["gpus"], model["quantization"], model["bits"], model["group_size"]) == ([0], "awq", 4, 128)
    assert model["kv_capacity_tokens"] >= 8192 and float(model["gpu_memory_utilization"]) <= 0.98


def test_fp8_weights_are_half_of_bf16_plus_scales():
    bf16 = llm_gpu_plan(A100[:2], [llama_70b(tensor_parallel_size=2)])["models"][0]["weights_total_bytes"]
    fp8 = llm_gpu_plan(A100[:1], [llama_70b(quantization="fp8")])["models"][0]["weights_total_bytes"]
    embedding = 2 * 128256 * 8192  # embedding and LM head: still 2 bytes each, 1 more than the halved figure
    scales = math.ceil((LLAMA_70B_PARAMETERS - embedding) * Fraction(4, 8192))  # one fp32 per output channel
    assert fp8 == bf16 // 2 + embedding + scales
    assert round(scales / 2 ** 20) == 32  # 32 MiB of scales on 66 GiB of weights


def test_gptq_and_mixtral():
    # Mixtral-8x7B in bf16 (87 GiB) needs two 80 GB GPUs; GPTQ 4-bit (with its g_idx) fits on one.
    with pytest.raises(AnsibleFilterError, match="tensor parallelism over 2 GPUs"):
        llm_gpu_plan(A100[:2], [{"name": "mixtral", "model": "mistralai/Mixtral-8x7B-Instruct-v0.1", "dtype": "bfloat16",
                                 "max_model_len": 32768, "parameters": MIXTRAL_PARAMETERS, "config": MIXTRAL_8X7B_CONFIG}])
    mixtral_gptq = {"name": "mixtral", "model": "x/mixtral-gptq", "dtype": "float16", "max_model_len": 32768,
                    "parameters": MIXTRAL_PARAMETERS, "config": MIXTRAL_8X7B_CONFIG,
                    "quantization": "gptq_marlin", "bits": 4, "group_size": 128}
    gptq = llm_gpu_plan(A100[:1], [mixtral_gptq])["models"][0]
    embedding = 2 * 32000 * 4096
    per_weight = Fraction(1, 2) + Fraction(2, 128) + Fraction(4, 8 * 128) + Fraction(4, 4096)
    assert gptq["weights_total_bytes"] == embedding * 2 + math.ceil((MIXTRAL_PARAMETERS - embedding) * per_weight)


def test_pinned_ranks_keep_their_order_and_share_gpus_with_single_models():
    qwen = {"name": "qwen-72b", "model": "Qwen/Qwen2.5-72B-Instruct", "dtype": "bfloat16", "max_model_len": 32768,
            "parameters": QWEN_72B_PARAMETERS, "config": QWEN_25_72B_CONFIG, "tensor_parallel_size": 4, "gpus": [2, 3, 0, 1]}
    small = dict(REFERENCE[4], name="stablelm-2")
    result = llm_gpu_plan(A100, [qwen, small])
    planned = {m["name"]: m for m in result["models"]}
    assert planned["qwen-72b"]["gpus"] == [2, 3, 0, 1]  # CUDA_VISIBLE_DEVICES order = rank order
    assert planned["qwen-72b"]["gpu"] == 2
    # The small model goes to a GPU with the most room, next to one rank; its GPU's sum stays within the card.
    gpu = next(g for g in result["gpus"] if "stablelm-2" in g["models"])
    assert gpu["models"] == ["qwen-72b", "stablelm-2"]
    committed = sum(s["requested_bytes"] for s in gpu["startup"]) + gpu["cuda_context_bytes"] + gpu["nccl_bytes"] + gpu["margin_bytes"]
    assert committed <= gpu["total_bytes"]
    utils = {g["index"]: g["utilization_sum"] for g in result["gpus"]}
    assert len({utils[i] for i in (0, 1, 2, 3) if i != gpu["index"]}) == 1  # the rank-only GPUs are alike


def test_fewer_kv_heads_than_ranks_are_replicated():
    # Qwen2.5-7B-Instruct has 4 KV heads: over 8 GPUs vLLM gives each GPU one copy, a quarter of the KV per token.
    eight = [{"index": i, "memory_total": "81920 MiB"} for i in range(8)]
    model = llm_gpu_plan(eight, [{"name": "q", "model": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": 8192,
                                  "tensor_parallel_size": 8}])["models"][0]
    assert model["kv_bytes_per_token"] == 2 * 28 * 4 * 128 * 2
    with pytest.raises(AnsibleFilterError, match="tensor_parallel_size 3 does not divide the model's 4 KV heads"):
        llm_gpu_plan(eight, [{"name": "q", "model": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": 8192, "tensor_parallel_size": 3}])


def test_no_tensor_parallelism_fits_either():
    forty = [{"index": i, "memory_total": "40960 MiB"} for i in range(2)]
    with pytest.raises(AnsibleFilterError, match=r"tensor parallelism does not fit either \(tensor_parallel_size 2 tried\)"):
        llm_gpu_plan(forty, [llama_70b()])


def test_weights_gib_overrides_the_quantization_estimate():
    model = llm_gpu_plan(A100[:1], [llama_70b(quantization="awq", weights_gib=38.5)])["models"][0]
    assert model["weights_total_gib"] == 38.5


def test_nccl_option():
    default = llm_gpu_plan(A100[:2], [llama_70b(tensor_parallel_size=2)])["models"][0]
    none = llm_gpu_plan(A100[:2], [llama_70b(tensor_parallel_size=2)], nccl_gib=0)["models"][0]
    assert (default["gpu_memory_utilization"], none["gpu_memory_utilization"]) == ("0.966", "0.973")


# GPUs of two sizes, two pins, min_sequences, --enforce-eager and every option that is not about tensor parallelism.
MIXED = [{"index": 0, "memory_total": "81559 MiB"}, {"index": 1, "memory_total": "143771 MiB"}]
PINNED = [dict(REFERENCE[0], gpu=1, min_sequences=4), REFERENCE[1], REFERENCE[2], dict(REFERENCE[3], enforce_eager=True),
          dict(REFERENCE[4], gpu=0)]
MIXED_OPTIONS = {"base_port": 9000, "cuda_context_gib": 0.4, "cuda_graph_gib": 0.25, "margin_fraction": 0.05,
                 "utilization_decimals": 2, "block_size": 32}


# What llm_gpu_plan gave before it planned tensor parallelism and quantized weights (issue 19), computed by that
# planner. Per model: GPU, start index, port, --gpu-memory-utilization, then budget, weights, overhead and KV cache
# in bytes, and the KV capacity in tokens. Per GPU: its models in start order, the utilization sum, KV cache and
# unused bytes, and the free bytes each instance sees at startup.
@pytest.mark.parametrize("gpus,models,options,planned,per_gpu", [
    pytest.param(H100, REFERENCE, {}, [
        (0, 0, 8000, "0.227", 19413223867, 16060000000, 2147483648, 1205740219, 9184),
        (0, 1, 8001, "0.256", 21893327356, 17080000000, 2684354560, 2128972796, 9280),
        (0, 2, 8002, "0.198", 16933120377, 14080000000, 2147483648, 705636729, 10752),
        (0, 3, 8003, "0.201", 17189682807, 7640000000, 1825361100, 7724321707, 19632),
        (0, 4, 8004, "0.066", 5644373459, 3280000000, 1395864371, 968509088, 4912),
    ], [
        (["llama-3-8b", "gemma-7b", "decilm-7b", "phi-3-mini", "stablelm-2"], "0.948", 12733180539, 52311358,
         [84983939072, 65033844293, 42603646025, 25133654736, 7407101017]),
    ], id="80GB"),
    pytest.param(H200, REFERENCE, {}, [
        (0, 0, 8000, "0.169", 25477564597, 16060000000, 2147483648, 7270080949, 55456),
        (0, 1, 8001, "0.215", 32412286321, 17080000000, 2684354560, 12647931761, 55136),
        (0, 2, 8002, "0.132", 19899636253, 14080000000, 2147483648, 3672152605, 56032),
        (0, 3, 8003, "0.378", 56985321997, 7640000000, 1825361100, 47519960897, 120848),
        (0, 4, 8004, "0.068", 10251327767, 3280000000, 1395864371, 5575463396, 28352),
    ], [
        (["llama-3-8b", "gemma-7b", "decilm-7b", "phi-3-mini", "stablelm-2"], "0.962", 76685589608, 29232199,
         [150217949184, 124203513675, 91254356442, 70817849277, 13295656368]),
    ], id="141GB"),
    pytest.param(A100[:2], REFERENCE, {}, [
        (1, 0, 8000, "0.436", 37452114822, 16060000000, 2147483648, 19244631174, 146816),
        (0, 0, 8001, "0.362", 31095563224, 17080000000, 2684354560, 11331208664, 49392),
        (1, 1, 8002, "0.302", 25941602468, 14080000000, 2147483648, 9714118820, 148224),
        (0, 1, 8003, "0.605", 51969104282, 7640000000, 1825361100, 42503743182, 108080),
        (1, 2, 8004, "0.223", 19155554141, 3280000000, 1395864371, 14479689770, 73632),
    ], [
        (["gemma-7b", "phi-3-mini"], "0.967", 53834951846, 42949671, [85362475008, 53730040872]),
        (["llama-3-8b", "decilm-7b", "stablelm-2"], "0.961", 43438439764, 21474834,
         [85362475008, 47373489274, 20895015894]),
    ], id="2x80GB"),
    pytest.param(MIXED, PINNED, MIXED_OPTIONS, [
        (1, 0, 9000, "0.19", 28643415819, 16060000000, 1879048192, 10704367627, 81664),
        (1, 1, 9001, "0.22", 33166060422, 17080000000, 2415919104, 13670141318, 59584),
        (1, 2, 9002, "0.13", 19598126613, 14080000000, 1879048192, 3639078421, 55520),
        (1, 3, 9003, "0.39", 58794379838, 7640000000, 1288490188, 49865889650, 126784),
        (0, 0, 9004, "0.94", 80389561385, 3280000000, 1127428915, 75982132470, 386464),
    ], [
        (["stablelm-2"], "0.94", 75982132470, 425711370, [85091313255]),
        (["llama-3-8b", "gemma-7b", "decilm-7b", "phi-3-mini"], "0.93", 77879477016, 1297109483,
         [150325323367, 121252410819, 87656853668, 67629230326]),
    ], id="pinned-mixed-options"),
])
def test_without_the_new_keys_the_plan_is_unchanged(gpus, models, options, planned, per_gpu):
    result = llm_gpu_plan(gpus, models, **options)
    keys = ("gpu", "start_index", "port", "gpu_memory_utilization", "budget_bytes", "weights_bytes", "overhead_bytes",
            "kv_cache_bytes", "kv_capacity_tokens")
    assert [tuple(m[k] for k in keys) for m in result["models"]] == planned
    assert [(g["models"], g["utilization_sum"], g["kv_cache_bytes"], g["unused_bytes"], [s["free_bytes"] for s in g["startup"]])
            for g in result["gpus"]] == per_gpu
    for model in result["models"]:
        assert (model["gpus"], model["tensor_parallel_size"], model["quantization"], model["bits"], model["group_size"]) == \
            ([model["gpu"]], 1, None, None, None)
        assert model["weights_total_bytes"] == model["weights_bytes"]
        for key in ("budget", "weights", "overhead", "kv_cache"):
            assert model[f"{key}_gib"] == round(model[f"{key}_bytes"] / GIB, 2)
    assert all(g["nccl_bytes"] == 0 for g in result["gpus"])


@pytest.mark.parametrize("gpus,models,message", [
    pytest.param([{"index": 0, "memory_total": "40960 MiB"}], REFERENCE, (
        "model 'decilm-7b' does not fit on the GPU with the most room (GPU 0): it needs 15.61 GiB (weights "
        "13.11, overhead 2.00, KV cache for 1 x 8192 tokens 0.50) plus a 0.50 GiB CUDA context, but only 0.08 "
        "GiB is left of 40.00 GiB (2 instance(s) already there, 2% margin): 16.08 GiB short. To make it fit: "
        "a shorter max_model_len cannot help: weights and overhead alone do not fit; or kv_cache_dtype fp8 (1 "
        "byte per KV value: still 15.84 GiB short); or another or a larger GPU."), id="40GB"),
    pytest.param(H100, [dict(REFERENCE[3], max_model_len=131072, min_sequences=2, gpu=0), REFERENCE[0]],
                 ("model 'phi-3-mini' does not fit on GPU 0: it needs 104.82 GiB (weights 7.12, overhead 1.70, KV cache "
                  "for 2 x 131072 tokens 96.00) plus a 0.50 GiB CUDA context, but only 78.05 GiB is left of 79.65 GiB "
                  "(0 instance(s) already there, 2% margin): 27.32 GiB short. To make it fit: max_model_len <= 93760; "
                  "or kv_cache_dtype fp8 (1 byte per KV value: fits); or fewer than 2 min_sequences; or another GPU "
                  "(pin it with gpu: INDEX, or add a GPU)."), id="pinned"),
])
def test_on_one_gpu_the_shortfall_message_is_unchanged(gpus, models, message):
    """With one GPU there is no tensor parallelism to suggest: the message is the one the planner gave before issue 19."""
    with pytest.raises(AnsibleFilterError) as info:
        llm_gpu_plan(gpus, models)
    assert str(info.value) == "llm_gpu_plan: " + message


@pytest.mark.parametrize(
    "gpus,model,message",
    [
        (A100[:2], llama_70b(tensor_parallel_size=3), "tensor_parallel_size 3 does not divide"),
        (A100[:2], llama_70b(tensor_parallel_size=4, config=dict(LLAMA_31_70B_CONFIG)), "is more than the 2 GPU"),
        (A100[:2], llama_70b(tensor_parallel_size=0), "tensor_parallel_size must be a positive integer, got 0"),
        (A100[:2], llama_70b(tensor_parallel_size=2, gpus=[0]), "gpus lists 1 GPU(s) but tensor_parallel_size is 2"),
        (A100[:2], llama_70b(tensor_parallel_size=2, gpus=[0, 0]), "gpus lists a GPU twice"),
        (A100[:2], llama_70b(tensor_parallel_size=2, gpus=[0, 5]), "pinned to GPU 5, which is not among the GPUs (0, 1)"),
        (A100[:2], llama_70b(tensor_parallel_size=2, gpu=0), "gpu pins one GPU but tensor_parallel_size is 2"),
        (A100[:2], llama_70b(gpus=[0], gpu=0), "gives both gpu and gpus"),
        (A100[:2], llama_70b(gpus="0,1"), "gpus must be a list of GPU indexes"),
        (A100[:1], llama_70b(quantization="int4"), "quantization 'int4' is not one of awq, awq_marlin, gptq, gptq_marlin, fp8"),
        (A100[:1], llama_70b(quantization="awq", bits=8), "bits 8 does not fit quantization awq: vLLM's AWQ reads only 4-bit"),
        (A100[:1], llama_70b(quantization="gptq", bits=3), "bits 3 does not fit quantization gptq: gptq has 4 or 8-bit"),
        (A100[:1], llama_70b(quantization="fp8", group_size=128), "group_size applies to AWQ and GPTQ, not fp8"),
        (A100[:1], llama_70b(bits=4), "bits describes quantized weights: set quantization"),
        (A100[:1], llama_70b(quantization="awq", dtype="float32"), "computes in 16 bits, but dtype is float32"),
        (A100[:1], llama_70b(quantization="awq", config=None, num_layers=80, kv_heads=8, head_dim=128),
         "keeps the embedding in bfloat16: give config"),
        (A100[:1], llama_70b(quantization="awq", parameters=1e9), "parameters 1000000000 are fewer than the embedding's"),
    ],
)
def test_tensor_parallel_and_quantization_errors(gpus, model, message):
    model = {k: v for k, v in model.items() if v is not None}
    with pytest.raises(AnsibleFilterError, match="^llm_gpu_plan: .*" + re.escape(message)):
        llm_gpu_plan(gpus, [model])
