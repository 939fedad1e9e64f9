"""The llm_serving role's systemd units and FastChat files, rendered offline from a GPU plan.

The reference design: five models on one 80 GB GPU (H100, 81559 MiB), planned by llm_gpu_plan, served
by vLLM one after another. The utilisations are the plan's (checked in test__gpu_plan); here the point
is the exact units and command lines the role writes from them.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.llm_gpu_plan import FilterModule as PlanFilters
from ansible_collections.hpclab.cluster.plugins.filter.llm_vllm_argv import FilterModule as ArgvFilters

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llm"
GPUS = [{"index": 0, "memory_total": "81559 MiB"}]
SERVER = "/opt/llm/venv-vllm/bin/python -m vllm.entrypoints.openai.api_server"


def reference_models():
    models = json.loads((FIXTURES / "reference_models.json").read_text(encoding="utf-8"))
    for position, model in enumerate(models):
        model["port"] = 8000 + position
    models[3]["enforce_eager"] = True  # Phi-3's 18k context: no CUDA graphs outside the plan
    return models


HOST_VARS = {"llm_serving_models": reference_models(), "llm_serving_gpus": GPUS, "llm_serving_api_key": "vaulted"}
NAMES = [m["name"] for m in reference_models()]

EXEC_START = {
    "llama-3-8b": f"{SERVER} --model meta-llama/Meta-Llama-3-8B-Instruct --served-model-name llama-3-8b --host 127.0.0.1"
                  " --port 8000 --gpu-memory-utilization 0.228 --max-model-len 8192 --dtype bfloat16 --kv-cache-dtype auto"
                  " --api-key ${LLM_API_KEY}",
    "gemma-7b": f"{SERVER} --model google/gemma-1.1-7b-it --served-model-name gemma-7b --host 127.0.0.1"
                " --port 8001 --gpu-memory-utilization 0.257 --max-model-len 8192 --dtype bfloat16 --kv-cache-dtype fp8"
                " --api-key ${LLM_API_KEY}",
    "decilm-7b": f"{SERVER} --model Deci/DeciLM-7B-instruct --served-model-name decilm-7b --host 127.0.0.1"
                 " --port 8002 --gpu-memory-utilization 0.198 --max-model-len 8192 --dtype bfloat16 --kv-cache-dtype auto"
                 " --trust-remote-code --api-key ${LLM_API_KEY}",
    "phi-3-mini": f"{SERVER} --model microsoft/Phi-3-mini-128k-instruct --served-model-name phi-3-mini --host 127.0.0.1"
                  " --port 8003 --gpu-memory-utilization 0.199 --max-model-len 18000 --dtype bfloat16 --kv-cache-dtype auto"
                  " --enforce-eager --api-key ${LLM_API_KEY}",
    "stablelm-2": f"{SERVER} --model stabilityai/stablelm-2-1_6b-chat --served-model-name stablelm-2 --host 127.0.0.1"
                  " --port 8004 --gpu-memory-utilization 0.066 --max-model-len 4096 --dtype float16 --kv-cache-dtype auto"
                  " --api-key ${LLM_API_KEY}",
}

FIRST_UNIT = """\
#
# Ansible managed
#
[Unit]
Description=vLLM OpenAI-compatible server for llama-3-8b (port 8000)
Wants=network-online.target
After=network-online.target

[Service]
Type=exec
User=llm
Group=llm
WorkingDirectory=/var/lib/llm
EnvironmentFile=/etc/llm/api-key.env
Environment=HF_HOME=/var/lib/llm/hf
Environment=CUDA_VISIBLE_DEVICES=0
Environment=VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
ExecStart={exec_start}
ExecStartPost=/opt/llm/bin/llm-wait-ready http://127.0.0.1:8000/health 900
TimeoutStartSec=930
Restart=on-failure
RestartSec=10
KillSignal=SIGINT
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
"""


def unit_lines(text: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(key + "=")]


@pytest.fixture(scope="module")
def units(role):
    return role.render_units(HOST_VARS)


def test_one_unit_per_model_in_start_order(units):
    assert list(units) == NAMES


def test_first_unit_exactly(units):
    assert units["llama-3-8b"].rstrip("\n") == FIRST_UNIT.format(exec_start=EXEC_START["llama-3-8b"]).rstrip("\n")


@pytest.mark.parametrize("name", NAMES)
def test_exec_start_exactly(units, name):
    assert unit_lines(units[name], "ExecStart") == [EXEC_START[name]]


@pytest.mark.parametrize("name", NAMES)
def test_exec_start_is_the_filter_argv_of_the_plan(units, name):
    """The unit carries llm_vllm_argv's argv for the planned model, word for word."""
    plan = PlanFilters().filters()["llm_gpu_plan"](GPUS, [dict(m, engine="vllm") for m in reference_models()])
    planned = next(m for m in plan["models"] if m["name"] == name)
    argv = ArgvFilters().filters()["llm_vllm_argv"](
        planned, executable=shlex.split(SERVER), host="127.0.0.1", api_key_env="LLM_API_KEY")
    assert unit_lines(units[name], "ExecStart")[0].split(" ") == argv


@pytest.mark.parametrize("position", range(1, 5))
def test_each_unit_starts_after_the_previous(units, position):
    assert f"llm-{NAMES[position - 1]}.service" in unit_lines(units[NAMES[position]], "After")


def test_first_unit_waits_for_nobody(units):
    assert unit_lines(units[NAMES[0]], "After") == ["network-online.target"]


@pytest.mark.parametrize("position", range(5))
def test_unit_waits_for_its_own_health(units, position):
    assert unit_lines(units[NAMES[position]], "ExecStartPost") == [
        f"/opt/llm/bin/llm-wait-ready http://127.0.0.1:{8000 + position}/health 900"]


def test_utilizations_fit_the_gpu(units):
    utils = [float(EXEC_START[n].split("--gpu-memory-utilization ")[1].split()[0]) for n in NAMES]
    assert sum(utils) <= 0.98


def test_api_key_never_in_a_unit(units):
    assert not any("vaulted" in text for text in units.values())


def test_no_api_key_no_flag(role):
    units = role.render_units(dict(HOST_VARS, llm_serving_api_key=""))
    assert all("--api-key" not in text and "EnvironmentFile" not in text for text in units.values())


def test_offline_mode(role):
    units = role.render_units(dict(HOST_VARS, llm_serving_hf_offline=True))
    assert all("Environment=HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1" in text.splitlines() for text in units.values())


def test_explicit_utilization_wins_over_the_plan(role):
    models = reference_models()
    models[4]["gpu_memory_utilization"] = "0.05"
    units = role.render_units(dict(HOST_VARS, llm_serving_models=models))
    assert "--gpu-memory-utilization 0.05 " in units["stablelm-2"]


def test_extra_args_are_quoted_for_systemd(role):
    models = reference_models()[:1]
    models[0]["extra_args"] = ["--chat-template", "/srv/templates/a b.jinja", "--max-num-seqs", 8, "--x", "100%"]
    text = role.render_units(dict(HOST_VARS, llm_serving_models=models))["llama-3-8b"]
    assert unit_lines(text, "ExecStart")[0].endswith(
        ' --chat-template "/srv/templates/a b.jinja" --max-num-seqs 8 --x "100%%"')


def test_llama_cpp_unit(role):
    host_vars = {"llm_serving_engine": "llama_cpp", "llm_serving_api_key": "k",
                 "llm_serving_models": [{"name": "tiny-a", "port": 8101, "gguf_src": "a.gguf", "n_ctx": 512},
                                        {"name": "tiny-b", "port": 8102, "gguf_path": "/srv/b.gguf"}]}
    units = role.render_units(host_vars)
    assert unit_lines(units["tiny-a"], "ExecStart") == [
        "/opt/llm/venv-llama-cpp/bin/python -m llama_cpp.server --model /var/lib/llm/models/tiny-a.gguf"
        " --model_alias tiny-a --host 127.0.0.1 --port 8101 --n_ctx 512 --api_key ${LLM_API_KEY}"]
    assert unit_lines(units["tiny-b"], "ExecStart")[0].split(" --model ")[1].startswith("/srv/b.gguf --model_alias tiny-b")
    assert "llm-tiny-a.service" in unit_lines(units["tiny-b"], "After")
    assert unit_lines(units["tiny-b"], "ExecStartPost") == ["/opt/llm/bin/llm-wait-ready http://127.0.0.1:8102/v1/models 900"]
    assert "CUDA_VISIBLE_DEVICES" not in units["tiny-a"]


def test_api_endpoints_json(role):
    host_vars = dict(HOST_VARS, llm_serving_fastchat_anony_only=["decilm-7b"])
    endpoints = json.loads(role.render_text("api_endpoints.json.j2", host_vars=host_vars))
    assert list(endpoints) == NAMES
    assert endpoints["decilm-7b"] == {
        "model_name": "decilm-7b", "api_type": "openai", "api_base": "http://127.0.0.1:8002/v1", "api_key": "vaulted",
        "anony_only": True, "multimodal": False, "text-arena": True, "vision-arena": False}
    assert [e["anony_only"] for e in endpoints.values()] == [False, False, True, False, False]


def test_api_endpoints_without_key_say_empty(role):
    # FastChat reads os.environ["OPENAI_API_KEY"] when api_key is "" (a KeyError without it).
    endpoints = json.loads(role.render_text("api_endpoints.json.j2", host_vars=dict(HOST_VARS, llm_serving_api_key="")))
    assert {e["api_key"] for e in endpoints.values()} == {"EMPTY"}


@pytest.mark.parametrize("position,module,port", [
    (0, "fastchat.serve.gradio_web_server", 7860),
    (1, "fastchat.serve.gradio_web_server_multi", 7861),
])
def test_fastchat_units(role, position, module, port):
    item = role.evaluate("__llm_serving_fastchat_units", host_vars=HOST_VARS)[position]
    text = role.render_text("fastchat.service.j2", host_vars=HOST_VARS, extra={"item": item})
    assert unit_lines(text, "ExecStart") == [
        f'/opt/llm/venv-fastchat/bin/python -m {module} --controller-url "" '
        f"--register-api-endpoint-file /etc/llm/api_endpoints.json --host 0.0.0.0 --port {port}"]
    assert all(f"llm-{name}.service" in unit_lines(text, "After")[0] for name in NAMES)


def test_pip_environment_for_a_wheelhouse(role):
    env = role.evaluate("__llm_serving_pip_env", host_vars={"llm_serving_pip_no_index": True,
                                                            "llm_serving_pip_find_links": ["/w1", "/w2"]})
    assert env == {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/w1 /w2"}


def test_pip_environment_online(role):
    assert role.evaluate("__llm_serving_pip_env") == {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def preflight_problems(role, host_vars, **registered):
    """The problems preflight.yml's one assertion reports, its filter call evaluated with the role's variables."""
    import yaml

    from ansible.template import trust_as_template

    tasks = yaml.safe_load((Path(role.defaults_path).parent.parent / "tasks" / "preflight.yml").read_text())
    check = next(task for task in tasks if "ansible.builtin.assert" in task)
    registered = {"__llm_serving_local_paths": {"results": []}, "__llm_serving_nvidia_smi": {"skipped": True}, **registered}
    return role.templar(host_vars=host_vars, extra=registered).template(
        trust_as_template(check["vars"]["__llm_serving_problems"]))


def test_preflight_passes_the_reference_design(role):
    assert preflight_problems(role, HOST_VARS) == []


def test_preflight_passes_the_lab(role):
    import yaml

    lab = yaml.safe_load((Path(role.defaults_path).parents[3] / "inventory" / "lab" / "group_vars" / "llm.yml").read_text())
    assert preflight_problems(role, lab) == []


def test_preflight_reads_the_gpus_nvidia_smi_found(role):
    host_vars = dict(HOST_VARS, llm_serving_gpus=[])
    assert "gpu1: has no GPU (nvidia-smi: [Errno 2] No such file" in preflight_problems(
        role, host_vars, __llm_serving_nvidia_smi={"rc": 2, "msg": "[Errno 2] No such file or directory: b'nvidia-smi'"})[0]
    assert preflight_problems(role, host_vars, __llm_serving_detected_gpus=[{"index": 0, "memory_total_mib": 81559}]) == []


def test_preflight_reads_what_is_on_the_host(role):
    host_vars = {"llm_serving_engine": "llama_cpp", "llm_serving_models": [{"name": "t", "port": 8101, "gguf_path": "/srv/t.gguf"}]}
    stat = {"results": [{"item": "/srv/t.gguf", "stat": {"exists": False}}]}
    assert "gguf_path /srv/t.gguf is missing on the host" in preflight_problems(role, host_vars, __llm_serving_local_paths=stat)[0]
    stat["results"][0]["stat"] = {"exists": True, "isreg": True}
    assert preflight_problems(role, host_vars, __llm_serving_local_paths=stat) == []


def test_preflight_passes_the_reserved_ports(role):
    models = reference_models()
    models[2]["port"] = 6818
    assert "gpu1: llm_serving_models[2] (decilm-7b): port 6818 is slurmd (slurm_worker)'s" in preflight_problems(
        role, dict(HOST_VARS, llm_serving_models=models))[0]


def test_preflight_sees_two_directories_in_one(role):
    found = preflight_problems(role, dict(HOST_VARS, llm_serving_model_dir="/opt/llm"))
    assert len(found) == 1 and "llm_serving_model_dir and llm_serving_home are both /opt/llm" in found[0], found


def test_ipv6_client_address_in_urls(role):
    host_vars = dict(HOST_VARS, llm_serving_bind_address="::1", llm_serving_client_address="::1")
    units = role.render_units(host_vars)
    assert unit_lines(units["llama-3-8b"], "ExecStartPost") == ["/opt/llm/bin/llm-wait-ready http://[::1]:8000/health 900"]
    endpoints = json.loads(role.render_text("api_endpoints.json.j2", host_vars=host_vars))
    assert endpoints["gemma-7b"]["api_base"] == "http://[::1]:8001/v1"


@pytest.mark.parametrize("bind,expected", [("0.0.0.0", "127.0.0.1"), ("::", "[::1]"), ("10.0.0.5", "10.0.0.5"),
                                           ("fd00::5", "[fd00::5]")])
def test_web_ui_check_address(role, bind, expected):
    assert role.evaluate("__llm_serving_fastchat_check_address", host_vars={"llm_serving_fastchat_bind_address": bind}) == expected


def test_defaults_match_argument_specs(role):
    import yaml

    specs = yaml.safe_load((Path(role.defaults_path).parent.parent / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load(Path(role.defaults_path).read_text())
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert spec.get("default") == defaults[name], name
