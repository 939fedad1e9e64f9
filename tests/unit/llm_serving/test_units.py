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
                  " --port 8000 --gpu-memory-utilization 0.227 --max-model-len 8192 --dtype bfloat16 --kv-cache-dtype auto",
    "gemma-7b": f"{SERVER} --model google/gemma-1.1-7b-it --served-model-name gemma-7b --host 127.0.0.1"
                " --port 8001 --gpu-memory-utilization 0.255 --max-model-len 8192 --dtype bfloat16 --kv-cache-dtype fp8",
    "decilm-7b": f"{SERVER} --model Deci/DeciLM-7B-instruct --served-model-name decilm-7b --host 127.0.0.1"
                 " --port 8002 --gpu-memory-utilization 0.197 --max-model-len 8192 --dtype bfloat16 --kv-cache-dtype auto"
                 " --trust-remote-code",
    "phi-3-mini": f"{SERVER} --model microsoft/Phi-3-mini-128k-instruct --served-model-name phi-3-mini --host 127.0.0.1"
                  " --port 8003 --gpu-memory-utilization 0.192 --max-model-len 18000 --dtype bfloat16 --kv-cache-dtype auto"
                  " --enforce-eager",
    "stablelm-2": f"{SERVER} --model stabilityai/stablelm-2-1_6b-chat --served-model-name stablelm-2 --host 127.0.0.1"
                  " --port 8004 --gpu-memory-utilization 0.065 --max-model-len 4096 --dtype float16 --kv-cache-dtype auto",
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
    argv = ArgvFilters().filters()["llm_vllm_argv"](planned, executable=shlex.split(SERVER), host="127.0.0.1")
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


def test_utilizations_fit_the_gpu(role, units):
    """The units' utilisations are the plan's, and what the servers then take (each its budget as vLLM requests it, a CUDA
    context each, NCCL buffers) leaves the planner's margin free on every GPU."""
    plan = role.evaluate("__llm_serving_plan", host_vars=HOST_VARS)
    for planned in plan["models"]:
        assert f" --gpu-memory-utilization {planned['gpu_memory_utilization']} " in unit_lines(units[planned["name"]], "ExecStart")[0]
    for gpu in plan["gpus"]:
        committed = sum(s["requested_bytes"] for s in gpu["startup"]) + gpu["cuda_context_bytes"] + gpu["nccl_bytes"]
        assert committed + gpu["margin_bytes"] <= gpu["total_bytes"]


def test_api_key_never_in_a_unit(units):
    assert not any("vaulted" in text for text in units.values())


def test_api_key_not_on_the_command_line(units):
    """systemd expands ${VAR} in ExecStart onto the command line, which every local user reads (ps): vLLM gets the key
    from the environment file instead, as VLLM_API_KEY, which its OpenAI server reads itself."""
    for text in units.values():
        assert "--api-key" not in text and "API_KEY" not in unit_lines(text, "ExecStart")[0]
        assert unit_lines(text, "EnvironmentFile") == ["/etc/llm/api-key.env"]


def test_the_key_file_gives_vllm_its_key(role):
    import yaml

    from ansible.template import trust_as_template

    tasks = yaml.safe_load((Path(role.defaults_path).parent.parent / "tasks" / "configure.yml").read_text())
    task = next(t for t in tasks if t.get("register") == "__llm_serving_key_file")
    content = role.templar(host_vars=HOST_VARS).template(trust_as_template(task["vars"]["__llm_serving_content"]))
    assert content == "LLM_API_KEY=vaulted\nVLLM_API_KEY=vaulted\nAPI_KEY=vaulted\n"
    assert task["no_log"] is True


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
        " --model_alias tiny-a --host 127.0.0.1 --port 8101 --n_ctx 512 --interrupt_requests false"]
    # The key from the environment file (API_KEY), not on the command line that every local user reads.
    assert unit_lines(units["tiny-a"], "EnvironmentFile") == ["/etc/llm/api-key.env"]
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
    """On the host's cluster address (its default route's), without a login where there are no logins."""
    item = role.evaluate("__llm_serving_fastchat_units", host_vars=HOST_VARS)[position]
    text = role.render_text("fastchat.service.j2", host_vars=HOST_VARS, extra={"item": item})
    assert unit_lines(text, "ExecStart") == [
        f'/opt/llm/venv-fastchat/bin/python -m {module} --controller-url "" '
        f"--register-api-endpoint-file /etc/llm/api_endpoints.json --host 10.0.0.5 --port {port}"]
    assert all(f"llm-{name}.service" in unit_lines(text, "After")[0] for name in NAMES)
    # The conversation logs are the service user's alone.
    assert unit_lines(text, "UMask") == ["0077"]
    assert unit_lines(text, "Environment")[0] == "LOGDIR=/var/lib/llm/fastchat"


# What playbooks/llm.yml passes from llm_gateway_result: the gateway's users' web logins, its URL and its key for the UI.
LOGINS = [{"user": "alice", "password": "alicesWebPassword0123456"}, {"user": "bob", "password": "bob-given@web%password"}]
GATEWAY_KEY = "GatewayKeyOfTheWebUI0123456789abcdefghijklmnop"
BEHIND_THE_GATEWAY = dict(HOST_VARS, llm_serving_fastchat_logins=LOGINS, llm_serving_fastchat_api_base="http://10.0.0.5:4000/v1",
                          llm_serving_fastchat_api_key=GATEWAY_KEY)


@pytest.mark.parametrize("position", [0, 1])
def test_fastchat_units_ask_the_logins(role, position):
    item = role.evaluate("__llm_serving_fastchat_units", host_vars=BEHIND_THE_GATEWAY)[position]
    text = role.render_text("fastchat.service.j2", host_vars=BEHIND_THE_GATEWAY, extra={"item": item})
    assert unit_lines(text, "ExecStart")[0].endswith(" --gradio-auth-path /etc/llm/fastchat-auth/logins")
    assert all(login["password"] not in text for login in LOGINS)


def test_login_file_as_fastchat_reads_it(role):
    """USER:PASSWORD pairs split at ',' and ':' (fastchat.utils.parse_gradio_auth_creds), no comment line."""
    import yaml

    from ansible.template import trust_as_template

    tasks = yaml.safe_load((Path(role.defaults_path).parent.parent / "tasks" / "configure.yml").read_text())
    task = next(t for t in tasks if t["name"] == "configure | Logins of the web UIs")
    assert task["no_log"] is True and task["ansible.builtin.copy"]["mode"] == "0600"
    # The task's own vars, as Ansible gives them to its arguments (trusted: they are the role's code).
    task_vars = {name: trust_as_template(value) for name, value in task.get("vars", {}).items()}
    content = role.templar(host_vars=BEHIND_THE_GATEWAY, extra=task_vars).template(
        trust_as_template(task["ansible.builtin.copy"]["content"]))
    assert content == "alice:alicesWebPassword0123456,bob:bob-given@web%password\n"
    # FastChat 0.2.36's parser, line for line.
    creds = []
    for line in content.splitlines(keepends=True):
        creds += [x.strip() for x in line.split(",") if x.strip()]
    assert [tuple(cred.split(":")) for cred in creds] == [(login["user"], login["password"]) for login in LOGINS]


def test_login_file_and_log_directory_are_the_service_users_alone(role):
    directories = {d["path"]: d for d in role.evaluate("__llm_serving_directories")}
    for path in ("/var/lib/llm/fastchat", "/etc/llm/fastchat-auth"):
        assert (directories[path]["owner"], directories[path]["mode"]) == ("llm", "0700"), path
    assert role.evaluate("__llm_serving_fastchat_auth_file") == "/etc/llm/fastchat-auth/logins"


def test_api_endpoints_through_the_gateway(role):
    """Every model asked at the gateway with its key for the web UI; the model servers' key stays out."""
    endpoints = json.loads(role.render_text("api_endpoints.json.j2", host_vars=BEHIND_THE_GATEWAY))
    assert list(endpoints) == NAMES
    assert {(e["model_name"], e["api_base"], e["api_key"]) for e in endpoints.values()} == {
        (name, "http://10.0.0.5:4000/v1", GATEWAY_KEY) for name in NAMES}


@pytest.mark.parametrize("bind,url", [("10.0.0.5", "http://10.0.0.5:7860/"), ("0.0.0.0", "http://10.0.0.5:7860/"),
                                      ("fd00::5", "http://[fd00::5]:7860/"), ("127.0.0.1", "http://127.0.0.1:7860/")])
def test_web_url_in_the_result(role, bind, url):
    assert role.evaluate("__llm_serving_fastchat_url", host_vars={"llm_serving_fastchat_bind_address": bind}) == url
    assert role.evaluate("__llm_serving_fastchat_url", host_vars={"llm_serving_fastchat_enabled": False}) == ""


def test_web_ui_restarts_when_its_logins_change(role):
    """They read the login file only at start; nothing else of theirs restarts them besides what did before."""
    unchanged = {"changed": False}
    registered = {"__llm_serving_fastchat_unit_files": unchanged, "__llm_serving_endpoints": unchanged,
                  "__llm_serving_key_file": unchanged, "__llm_serving_key_removed": {"skipped": True, "changed": False},
                  "__llm_serving_venv_result": {"results": []}, "__llm_serving_fastchat_auth": unchanged,
                  "__llm_serving_fastchat_auth_removed": {"skipped": True, "changed": False}}
    assert role.evaluate("__llm_serving_fastchat_restart", extra=registered) is False
    for name in ("__llm_serving_fastchat_auth", "__llm_serving_fastchat_auth_removed", "__llm_serving_endpoints"):
        assert role.evaluate("__llm_serving_fastchat_restart", extra={**registered, name: {"changed": True}}) is True, name


def test_pip_environment_for_a_wheelhouse(role):
    env = role.evaluate("__llm_serving_pip_env", host_vars={"llm_serving_pip_no_index": True,
                                                            "llm_serving_pip_find_links": ["/w1", "/w2"]})
    assert env == {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/w1 /w2"}


def test_pip_environment_online(role):
    assert role.evaluate("__llm_serving_pip_env") == {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def preflight_problems(role, host_vars, **registered):
    """The problems preflight.yml's one assertion reports, its filter call evaluated with the role's variables, and the web
    logins playbooks/llm.yml passes (the gateway's) unless host_vars gives others."""
    host_vars = {"llm_serving_fastchat_logins": LOGINS, **host_vars}
    import yaml

    from ansible.template import trust_as_template

    tasks = yaml.safe_load((Path(role.defaults_path).parent.parent / "tasks" / "preflight.yml").read_text())
    check = next(task for task in tasks if "ansible.builtin.assert" in task)
    registered = {"__llm_serving_local_read": {"skipped": True}, "__llm_serving_nvidia_smi": {"skipped": True}, **registered}
    return role.templar(host_vars=host_vars, extra=registered).template(
        trust_as_template(check["vars"]["__llm_serving_problems"]))


def test_preflight_passes_the_reference_design(role):
    assert preflight_problems(role, HOST_VARS) == []


def test_preflight_passes_behind_the_gateway(role):
    assert preflight_problems(role, BEHIND_THE_GATEWAY) == []


def test_preflight_refuses_every_address_without_the_opt_in(role):
    found = preflight_problems(role, dict(HOST_VARS, llm_serving_fastchat_bind_address="0.0.0.0"))
    assert len(found) == 1 and found[0].startswith(
        "gpu1: llm_serving_fastchat_bind_address 0.0.0.0 would listen on every network of the host"), found
    assert "Fix:" in found[0] and "llm_serving_fastchat_bind_wildcard: true" in found[0]
    assert preflight_problems(role, dict(HOST_VARS, llm_serving_fastchat_bind_address="0.0.0.0",
                                         llm_serving_fastchat_bind_wildcard=True)) == []


def test_preflight_refuses_web_uis_on_the_network_without_logins(role):
    """Rule 48: the web UIs on the cluster address (the default) ask a login, the main entry point's check."""
    found = preflight_problems(role, dict(HOST_VARS, llm_serving_fastchat_logins=[]))
    assert len(found) == 1 and found[0].startswith(
        "gpu1: llm_serving_fastchat_logins is empty but the web UIs listen on 10.0.0.5"), found
    assert "Fix:" in found[0] and "hpclab_cluster_users" in found[0]
    assert preflight_problems(role, dict(HOST_VARS, llm_serving_fastchat_logins=[],
                                         llm_serving_fastchat_bind_address="127.0.0.1")) == []
    assert preflight_problems(role, dict(HOST_VARS, llm_serving_fastchat_logins=[], llm_serving_fastchat_enabled=False)) == []


def test_the_gpus_entry_point_leaves_the_logins_to_the_main_one(role):
    """playbooks/llm.yml runs the `gpus` entry point before the gateway hands out its logins; it deploys no web UI."""
    import yaml

    tasks = yaml.safe_load((Path(role.defaults_path).parent.parent / "tasks" / "gpus.yml").read_text())
    assert tasks == [{"name": "gpus | The role's checks and its GPU plan", "ansible.builtin.import_tasks": "preflight.yml",
                      "vars": {"__llm_serving_logins_pending": True}}]
    no_logins = dict(HOST_VARS, llm_serving_fastchat_logins=[])
    assert preflight_problems(role, no_logins, __llm_serving_logins_pending=True) == []


def test_preflight_refuses_model_servers_on_the_network_without_a_key(role):
    """Rule 47: other hosts reach the model servers; without the key they would bypass the gateway's per-user keys."""
    found = preflight_problems(role, dict(HOST_VARS, llm_serving_api_key="", llm_serving_bind_address="0.0.0.0"))
    assert len(found) == 1 and found[0].startswith(
        "gpu1: llm_serving_bind_address 0.0.0.0 lets other hosts reach the model servers, but llm_serving_api_key is "
        "empty"), found
    assert preflight_problems(role, dict(HOST_VARS, llm_serving_bind_address="0.0.0.0")) == []


def test_preflight_refuses_a_host_without_a_default_route(role):
    found = preflight_problems(role, dict(HOST_VARS, ansible_facts={"all_ipv4_addresses": ["127.0.0.1"]}))
    assert len(found) == 1 and found[0].startswith("gpu1: llm_serving_fastchat_bind_address '' is not an IP address"), found


def test_preflight_refuses_the_gateway_without_logins(role):
    found = preflight_problems(role, dict(BEHIND_THE_GATEWAY, llm_serving_fastchat_logins=[]))
    assert len(found) == 1 and "llm_serving_fastchat_logins is empty: anyone who reaches a web UI" in found[0], found
    assert GATEWAY_KEY not in found[0]


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
    from ansible.template import trust_as_template

    host_vars = {"llm_serving_engine": "llama_cpp", "llm_serving_models": [{"name": "t", "port": 8101, "gguf_path": "/srv/t.gguf"}]}
    # The paths the stat loop is asked for, and what it answers (no link followed).
    assert role.templar(host_vars=host_vars).template(trust_as_template("{{ __llm_serving_local_paths }}")) == ["/srv/t.gguf"]

    def read(stat):
        return {"results": [{"item": "/srv/t.gguf", "stat": stat, "changed": False}]}

    found = preflight_problems(role, host_vars, __llm_serving_local_read=read({"exists": False}))
    assert "gguf_path /srv/t.gguf is missing on the host" in found[0]
    found = preflight_problems(role, host_vars, __llm_serving_local_read=read(
        {"exists": True, "isreg": False, "isdir": False, "islnk": True}))
    assert "gguf_path /srv/t.gguf is not a file on the host" in found[0]
    assert preflight_problems(role, host_vars, __llm_serving_local_read=read(
        {"exists": True, "isreg": True, "isdir": False, "islnk": False})) == []


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


def test_stale_units_are_the_read_units_no_served_model_has(role, tmp_path):
    """configure.yml stops and removes what its find (here: the files of a real directory that match its pattern, in
    the directory's order) found of llm-*.service that no served model has; a served model's unit stays."""
    for unit in ["llm-zz-old.service", f"llm-{NAMES[-1]}.service", f"llm-{NAMES[0]}.service", "llm-aa-old.service"]:
        (tmp_path / unit).write_text("[Unit]\n")
    (tmp_path / "fastchat-web.service").write_text("[Unit]\n")
    read = {"files": [{"path": str(path)} for path in tmp_path.glob("llm-*.service")], "matched": 4}
    assert role.evaluate("__llm_serving_stale_units", host_vars=HOST_VARS, extra={"__llm_serving_unit_files": read}) == [
        "llm-aa-old.service", "llm-zz-old.service"]
    # Nothing found (a fresh host): nothing to stop.
    read = {"files": [], "matched": 0}
    assert role.evaluate("__llm_serving_stale_units", host_vars=HOST_VARS, extra={"__llm_serving_unit_files": read}) == []
