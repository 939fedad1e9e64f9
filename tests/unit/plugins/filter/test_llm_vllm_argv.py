from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.llm_gpu_plan import FilterModule as PlanFilters
from ansible_collections.hpclab.cluster.plugins.filter.llm_vllm_argv import FilterModule

llm_vllm_argv = FilterModule().filters()["llm_vllm_argv"]

REFERENCE = [
    {"name": "llama-3-8b", "model": "meta-llama/Meta-Llama-3-8B-Instruct", "dtype": "bfloat16", "max_model_len": 8192},
    {"name": "gemma-7b", "model": "google/gemma-1.1-7b-it", "dtype": "bfloat16", "kv_cache_dtype": "fp8", "max_model_len": 8192},
    {"name": "decilm-7b", "model": "Deci/DeciLM-7B-instruct", "dtype": "bfloat16", "max_model_len": 8192},
    {"name": "phi-3-mini", "model": "microsoft/Phi-3-mini-128k-instruct", "dtype": "bfloat16", "max_model_len": 18000,
     "enforce_eager": True},
    {"name": "stablelm-2", "model": "stabilityai/stablelm-2-1_6b-chat", "dtype": "float16", "max_model_len": 4096},
]
PLAN = PlanFilters().filters()["llm_gpu_plan"]([{"index": 0, "memory_total": "143771 MiB"}], REFERENCE)
UTIL = [m["gpu_memory_utilization"] for m in PLAN["models"]]  # the plan's own values are checked in test__gpu_plan

SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]


def test_registered():
    assert set(FilterModule().filters()) == {"llm_vllm_argv"}


@pytest.mark.parametrize(
    "position,tail",
    [
        (0, ["--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--served-model-name", "llama-3-8b", "--host", "127.0.0.1",
             "--port", "8000", "--gpu-memory-utilization", UTIL[0], "--max-model-len", "8192",
             "--dtype", "bfloat16", "--kv-cache-dtype", "auto"]),
        (1, ["--model", "google/gemma-1.1-7b-it", "--served-model-name", "gemma-7b", "--host", "127.0.0.1",
             "--port", "8001", "--gpu-memory-utilization", UTIL[1], "--max-model-len", "8192",
             "--dtype", "bfloat16", "--kv-cache-dtype", "fp8"]),
        # DeciLM ships custom modelling code.
        (2, ["--model", "Deci/DeciLM-7B-instruct", "--served-model-name", "decilm-7b", "--host", "127.0.0.1",
             "--port", "8002", "--gpu-memory-utilization", UTIL[2], "--max-model-len", "8192",
             "--dtype", "bfloat16", "--kv-cache-dtype", "auto", "--trust-remote-code"]),
        # Phi-3 runs eager here (no CUDA graphs).
        (3, ["--model", "microsoft/Phi-3-mini-128k-instruct", "--served-model-name", "phi-3-mini", "--host", "127.0.0.1",
             "--port", "8003", "--gpu-memory-utilization", UTIL[3], "--max-model-len", "18000",
             "--dtype", "bfloat16", "--kv-cache-dtype", "auto", "--enforce-eager"]),
        (4, ["--model", "stabilityai/stablelm-2-1_6b-chat", "--served-model-name", "stablelm-2", "--host", "127.0.0.1",
             "--port", "8004", "--gpu-memory-utilization", UTIL[4], "--max-model-len", "4096",
             "--dtype", "float16", "--kv-cache-dtype", "auto"]),
    ],
)
def test_reference_models(position, tail):
    argv = llm_vllm_argv(PLAN["models"][position])
    assert argv == SERVER + tail
    assert all(isinstance(arg, str) for arg in argv)


def test_api_key_is_an_env_reference_never_a_value():
    argv = llm_vllm_argv(PLAN["models"][0], api_key_env="VLLM_API_KEY")
    assert argv[-2:] == ["--api-key", "${VLLM_API_KEY}"]


def test_executable_and_host_options():
    argv = llm_vllm_argv(PLAN["models"][0], executable=["/opt/vllm/bin/vllm", "serve"], host=None)
    assert argv[:4] == ["/opt/vllm/bin/vllm", "serve", "--model", "meta-llama/Meta-Llama-3-8B-Instruct"]
    assert "--host" not in argv


@pytest.mark.parametrize(
    "entry,kwargs,message",
    [
        ("llama", {}, "^llm_vllm_argv: expects one planned model"),
        ({"name": "x"}, {}, "^llm_vllm_argv: planned model 'x' lacks model, port"),
        (PLAN["models"][0], {"api_key_env": "$KEY"}, "api_key_env must be an environment variable NAME.*'\\$KEY'"),
        (dict(PLAN["models"][0], gpu_memory_utilization="0"), {}, r"must be in \(0, 1\], got '0'"),
    ],
)
def test_errors_are_filter_errors(entry, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        llm_vllm_argv(entry, **kwargs)


# Issue 19: tensor parallelism and quantized weights. Llama-3.1-70B-Instruct's config.json fields and size.
LLAMA_70B = {"name": "llama-70b", "model": "meta-llama/Llama-3.1-70B-Instruct", "dtype": "bfloat16", "max_model_len": 8192,
             "parameters": 70553706496, "config": {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                                                   "hidden_size": 8192, "vocab_size": 128256}}
TWO_A100 = [{"index": 0, "memory_total": "81920 MiB"}, {"index": 1, "memory_total": "81920 MiB"}]


def _planned(**overrides):
    return PlanFilters().filters()["llm_gpu_plan"](TWO_A100, [dict(LLAMA_70B, **overrides)])["models"][0]


@pytest.mark.parametrize("overrides,added", [
    ({"tensor_parallel_size": 2}, ["--tensor-parallel-size", "2"]),
    ({"quantization": "awq_marlin"}, ["--quantization", "awq_marlin"]),
    ({"tensor_parallel_size": 2, "quantization": "fp8"}, ["--tensor-parallel-size", "2", "--quantization", "fp8"]),
    ({"tensor_parallel_size": 2, "quantization": "gptq", "bits": 8, "enforce_eager": True},
     ["--tensor-parallel-size", "2", "--quantization", "gptq", "--enforce-eager"]),
], ids=["tp2", "awq-marlin", "tp2-fp8", "tp2-gptq-eager"])
def test_tensor_parallel_size_and_quantization_follow_the_kv_cache_dtype(overrides, added):
    planned = _planned(**overrides)
    argv = llm_vllm_argv(planned, api_key_env="LLM_API_KEY")
    after = argv.index("--kv-cache-dtype") + 2
    assert argv[after:] == added + ["--api-key", "${LLM_API_KEY}"]
    assert argv[argv.index("--gpu-memory-utilization") + 1] == planned["gpu_memory_utilization"]


def test_one_gpu_and_no_quantization_add_nothing():
    argv = llm_vllm_argv(dict(PLAN["models"][0], tensor_parallel_size=1, quantization=None))
    assert argv == llm_vllm_argv(PLAN["models"][0])
    assert "--tensor-parallel-size" not in argv and "--quantization" not in argv


def test_executable_as_a_string_keeps_the_order():
    argv = llm_vllm_argv(_planned(tensor_parallel_size=2), executable="/opt/vllm/bin/vllm-serve")
    assert argv[0] == "/opt/vllm/bin/vllm-serve" and argv[-2:] == ["--tensor-parallel-size", "2"]


@pytest.mark.parametrize("entry,message", [
    (dict(PLAN["models"][0], tensor_parallel_size=0), "tensor_parallel_size must be a positive integer, got 0"),
    (dict(PLAN["models"][0], quantization="int4"), "quantization must be one of awq, awq_marlin, gptq, gptq_marlin, fp8, got 'int4'"),
])
def test_bad_parallel_or_quantization_entries(entry, message):
    with pytest.raises(AnsibleFilterError, match="^llm_vllm_argv: planned model 'llama-3-8b' " + message.replace("(", r"\(")):
        llm_vllm_argv(entry)
