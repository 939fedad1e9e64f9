"""llm_serving_problems on who reaches the models: a key on servers other hosts reach (rule 47), logins on web UIs they
reach (rule 48); and the values that reach vLLM as written: dtype, kv_cache_dtype and quantization spelt exactly (rules 11
and 41), explicit utilisations within what the planner leaves (rule 23)."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.llm_serving_problems import FilterModule
from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import plan

PROBLEMS = FilterModule().filters()["llm_serving_problems"]
GPUS = [{"index": 0, "memory_total": "81559 MiB"}]
PACKAGES = {"vllm": ["vllm==0.11.0"], "llama_cpp": ["llama-cpp-python[server]==0.3.36"], "fastchat": ["fschat[webui]==0.2.36"]}
KEY = "ServersKey0123456789abcdefghijklmnopqrstuv"
LOGINS = [{"user": "alice", "password": "alicesWebPassword0123456"}]
HOST_ADDRESSES = ["10.0.0.5", "127.0.0.1", "fd00::5"]


def tiny(**overrides):
    return {"name": "tiny-a", "port": 8101, "engine": "llama_cpp", "gguf_src": "/srv/tiny-a.gguf", "n_ctx": 512, **overrides}


def vllm(**overrides):
    return {"name": "llama-3-8b", "port": 8000, "model": "meta-llama/Meta-Llama-3-8B-Instruct", "dtype": "bfloat16",
            "max_model_len": 8192, **overrides}


def check(models=None, **kwargs):
    return PROBLEMS([tiny()] if models is None else models, **{"host": "llm1", "packages": PACKAGES, "gpus": GPUS, **kwargs})


# ---- rule 47: a key on model servers other hosts reach ------------------------------------------------------------

@pytest.mark.parametrize("bind,client", [("0.0.0.0", "127.0.0.1"), ("::", "127.0.0.1"), ("10.0.0.5", "10.0.0.5"),
                                         ("fd00::5", "fd00::5")])
def test_servers_on_the_network_need_the_key(bind, client):
    found = check(bind_address=bind, client_address=client)
    assert len(found) == 1, found
    assert found[0].startswith(f"llm1: llm_serving_bind_address {bind} lets other hosts reach the model servers, but "
                               "llm_serving_api_key is empty"), found
    assert "Fix: set llm_serving_api_key from the vault" in found[0] and "openssl rand -hex 32" in found[0]
    assert check(bind_address=bind, client_address=client, api_key=KEY) == []


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2", "::1"])
def test_servers_on_loopback_may_go_without_the_key(bind):
    """The gateway's own check (llm_gateway_problems rule 27) asks the key of the servers it fronts."""
    assert check(bind_address=bind, client_address=bind) == []


def test_no_server_needs_no_key():
    assert check([], bind_address="0.0.0.0", fastchat_enabled=False) == []


def test_a_bad_bind_address_is_one_problem():
    found = check(bind_address="0.0.0.0.0")
    assert len(found) == 1 and "is not an IP address" in found[0], found


# ---- rule 48: logins in front of web UIs other hosts reach --------------------------------------------------------

@pytest.mark.parametrize("address,kwargs", [
    ("10.0.0.5", {}),
    ("fd00::5", {}),
    ("0.0.0.0", {"fastchat_bind_wildcard": True}),
    ("::", {"fastchat_bind_wildcard": True}),
], ids=["cluster-address", "ipv6", "every-ipv4-address", "every-address"])
def test_web_uis_on_the_network_need_logins(address, kwargs):
    found = check(fastchat_bind_address=address, host_addresses=HOST_ADDRESSES, **kwargs)
    assert len(found) == 1, found
    assert found[0].startswith(f"llm1: llm_serving_fastchat_logins is empty but the web UIs listen on {address} "), found
    assert "Fix: list the cluster's users in hpclab_cluster_users" in found[0]
    assert check(fastchat_bind_address=address, host_addresses=HOST_ADDRESSES, fastchat_logins=LOGINS, **kwargs) == []


def test_a_refused_wildcard_reports_the_missing_logins_too():
    found = check(fastchat_bind_address="0.0.0.0")
    assert len(found) == 2 and "would listen on every network" in found[0] and "logins is empty" in found[1], found


@pytest.mark.parametrize("kwargs", [
    {"fastchat_bind_address": "127.0.0.1"},
    {"fastchat_bind_address": "::1"},
    {"fastchat_bind_address": "10.0.0.5", "fastchat_enabled": False},
    {"fastchat_bind_address": "10.0.0.5", "fastchat_logins_pending": True},
], ids=["loopback", "ipv6-loopback", "web-ui-off", "gpus-entry-point"])
def test_no_login_needed(kwargs):
    assert check(host_addresses=HOST_ADDRESSES, **kwargs) == []


def test_behind_the_gateway_without_logins_is_one_problem():
    found = check(fastchat_bind_address="10.0.0.5", host_addresses=HOST_ADDRESSES, fastchat_api_base="http://10.0.0.5:4000/v1",
                  fastchat_api_key=KEY)
    assert len(found) == 1 and "with the web UI's own key, but llm_serving_fastchat_logins is empty" in found[0], found


# ---- rules 11 and 41: compared as vLLM compares them --------------------------------------------------------------

@pytest.mark.parametrize("key,value,written", [
    ("dtype", "BFloat16", "bfloat16"),
    ("dtype", "AUTO", "auto"),
    ("kv_cache_dtype", "FP8", "fp8"),
    ("kv_cache_dtype", "Fp8_E4m3", "fp8_e4m3"),
])
def test_dtypes_in_another_case_are_refused(key, value, written):
    """The planner reads them in any case, but the model's own value reaches vLLM's command line, whose choices are
    lower case (argparse compares exactly)."""
    found = check([vllm(**{key: value})])
    assert len(found) == 1, found
    assert f"llm_serving_models[0] (llama-3-8b): {key} {value!r} is not one of" in found[0], found
    assert f"(write {written}: vLLM takes only these spellings, in lower case)" in found[0] and "Fix:" in found[0]


@pytest.mark.parametrize("value,written", [("AWQ_Marlin", "awq_marlin"), ("GPTQ", "gptq"), ("FP8", "fp8")])
def test_quantization_in_another_case_is_refused(value, written):
    found = check([vllm(quantization=value)])
    assert len(found) == 1, found
    assert f"quantization {value!r} is not one the GPU planner sizes" in found[0], found
    assert f"(write {written}: vLLM takes only these spellings, in lower case)" in found[0]


def test_the_lower_case_spellings_pass():
    assert check([vllm(dtype="bfloat16", kv_cache_dtype="fp8", quantization="awq_marlin", weights_gib=5.7)]) == []


def test_an_unknown_spelling_gets_no_case_hint():
    found = check([vllm(dtype="bf16")])
    assert len(found) == 1 and "dtype 'bf16' is not one of" in found[0] and "write" not in found[0].split("Fix:")[0], found


# ---- rule 23: explicit utilisations within what the planner leaves to the servers ----------------------------------

def test_explicit_utilizations_keep_the_planners_margin():
    """Two models fixed at 0.491 each: with their two CUDA contexts they stay below the whole GPU (the old check), but
    above the 0.962 the planner leaves to the servers once its 2% margin is set aside too."""
    models = [vllm(gpu_memory_utilization=0.491), vllm(name="b", port=8001, gpu_memory_utilization="0.491")]
    gpu = plan(GPUS, [dict(m, engine="vllm") for m in models])["gpus"][0]
    capacity = (gpu["total_bytes"] - gpu["cuda_context_bytes"] - gpu["margin_bytes"]) / gpu["total_bytes"]
    assert 0.962 < capacity < 0.963
    assert 0.982 + gpu["cuda_context_bytes"] / gpu["total_bytes"] < 1
    found = check(models)
    assert len(found) == 1, found
    assert ("llm1: the gpu_memory_utilization of b, llama-3-8b in llm_serving_models brings GPU 0 to 0.982 of its memory "
            "plus 0.018 of CUDA contexts: above the 0.962 the planner leaves to the servers there") in found[0], found
    assert "2% margin" in found[0] and "Fix: lower those values" in found[0]


def test_explicit_utilizations_within_the_plan_pass():
    models = [vllm(gpu_memory_utilization=0.48), vllm(name="b", port=8001, gpu_memory_utilization="0.481")]
    assert check(models) == []


def test_an_explicit_utilization_equal_to_the_plans_passes():
    """The plan fills the GPU to its capacity: its own values, given explicitly, must not be refused by rounding."""
    models = [vllm(), vllm(name="b", port=8001)]
    planned = plan(GPUS, [dict(m, engine="vllm") for m in models])["models"]
    fixed = [dict(m, gpu_memory_utilization=p["gpu_memory_utilization"]) for m, p in zip(models, planned)]
    assert check(fixed) == []
