"""The llm_serving role on a real CPU node: two llama.cpp servers and the FastChat web UIs over them."""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook

testinfra_hosts = inventory_hosts("llm")
NODE = testinfra_hosts[0]
MODELS = {"tiny-a": 8101, "tiny-b": 8102}
KEY = "molecule-not-secret"
WEB_UIS = {"fastchat-web": 7860, "fastchat-arena": 7861}
UNITS = [f"llm-{name}" for name in MODELS] + list(WEB_UIS)


def api(host, port: int, path: str, body: dict | None = None) -> dict:
    """An OpenAI API call from the node itself (the servers listen on 127.0.0.1)."""
    cmd = f"curl -fsS --max-time 120 -H 'Authorization: Bearer {KEY}' http://127.0.0.1:{port}{path}"
    if body is not None:
        cmd += " -H 'Content-Type: application/json' -d '%s'" % json.dumps(body)
    return json.loads(host.check_output(cmd))


def node_address() -> str:
    return get_host(NODE).interface("eth0").addresses[0]


def http_get(port: int, wait: float = 180) -> tuple[int, str]:
    """A real HTTP client from the test machine to the node's web UI (which takes a while to import torch)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(f"http://{node_address()}:{port}/", timeout=30) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(3)


def unit_state(host, unit: str) -> tuple[str, str]:
    out = host.check_output(f"systemctl show -p MainPID -p ActiveEnterTimestamp {unit}")
    props = dict(line.split("=", 1) for line in out.splitlines())
    return props["MainPID"], props["ActiveEnterTimestamp"]


@pytest.mark.parametrize("unit", UNITS)
def test_service_running(host, unit):
    with journal_on_failure(host, unit):
        assert host.service(unit).is_running


@pytest.mark.parametrize("unit", UNITS)
def test_service_enabled(host, unit):
    assert host.service(unit).is_enabled


@pytest.mark.parametrize("name,port", MODELS.items())
def test_models_endpoint_lists_the_model(host, name, port):
    with journal_on_failure(host, f"llm-{name}"):
        assert [m["id"] for m in api(host, port, "/v1/models")["data"]] == [name]


@pytest.mark.parametrize("name,port", MODELS.items())
def test_chat_completion_generates_tokens(host, name, port):
    body = {"model": name, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, "temperature": 1.0}
    with journal_on_failure(host, f"llm-{name}"):
        reply = api(host, port, "/v1/chat/completions", body)
        assert reply["usage"]["completion_tokens"] > 0, reply
        assert reply["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.parametrize("name,port", MODELS.items())
def test_server_requires_the_api_key(host, name, port):
    assert host.run(f"curl -fsS -o /dev/null http://127.0.0.1:{port}/v1/models").rc != 0


def test_servers_started_one_after_another(host):
    """tiny-b's start began only after tiny-a's readiness wait had seen it answer."""
    journal = host.check_output("journalctl -o short-unix --no-pager -u llm-tiny-a -u llm-tiny-b")
    started_a = [float(m.group(1)) for m in re.finditer(r"^(\d+\.\d+) \S+ systemd\[1\]: Started llm-tiny-a\.service", journal, re.M)]
    starting_b = [float(m.group(1)) for m in re.finditer(r"^(\d+\.\d+) \S+ systemd\[1\]: Starting llm-tiny-b\.service", journal, re.M)]
    ready_a = [float(m.group(1)) for m in re.finditer(r"^(\d+\.\d+) .*ready: http://127\.0\.0\.1:8101/", journal, re.M)]
    assert started_a and starting_b and ready_a, journal
    assert ready_a[0] <= started_a[0] <= starting_b[0], journal


def test_unit_b_is_ordered_after_a(host):
    assert "llm-tiny-a.service" in host.check_output("systemctl show -p After llm-tiny-b")


def test_api_key_not_in_unit_files(host):
    assert host.run(f"grep -rl {KEY} /etc/systemd/system").stdout == ""


def test_api_key_file_mode(host):
    key_file = host.file("/etc/llm/api-key.env")
    assert (key_file.mode, key_file.user, key_file.group) == (0o640, "root", "llm")


def test_api_endpoints_hold_both_models(host):
    endpoints = json.loads(host.file("/etc/llm/api_endpoints.json").content_string)
    assert set(endpoints) == set(MODELS)
    for name, port in MODELS.items():
        entry = endpoints[name]
        assert entry["model_name"] == name
        assert entry["api_type"] == "openai"
        assert entry["api_base"] == f"http://127.0.0.1:{port}/v1"
        assert entry["api_key"] == KEY
        assert entry["anony_only"] is False


@pytest.mark.parametrize("unit,port", WEB_UIS.items())
def test_web_ui_lists_both_models(unit, port):
    with journal_on_failure(get_host(NODE), unit):
        status, page = http_get(port)
        assert status == 200
        for name in MODELS:
            assert name in page


def test_wheelhouse_only(host):
    """Every venv was installed from the wheelhouse: CPU torch, no CUDA libraries."""
    torch = host.check_output("/opt/llm/venv-fastchat/bin/python -c 'import torch; print(torch.__version__)'")
    assert torch.endswith("+cpu"), torch
    assert host.run("ls /opt/llm/venv-fastchat/lib/python3*/site-packages | grep -i '^nvidia'").stdout == ""


# Runs once (no `host` argument): whole-play properties through ansible-playbook.


def test_second_converge_changes_and_restarts_nothing():
    node = get_host(NODE)
    before = {unit: unit_state(node, unit) for unit in UNITS}
    run = run_playbook()
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert {unit: unit_state(node, unit) for unit in UNITS} == before


def test_check_mode_changes_nothing():
    run = run_playbook(check=True)
    assert run.rc == 0, run
    assert run.total_changed == 0, run


VLLM_MODEL = {"name": "llama-3-8b", "port": 8000, "engine": "vllm", "model": "meta-llama/Meta-Llama-3-8B-Instruct",
              "dtype": "bfloat16", "max_model_len": 8192}


@pytest.mark.parametrize("check", [True, False], ids=["check-mode", "real-run"])
def test_vllm_on_a_cpu_node_fails_preflight_before_any_change(check):
    run = run_playbook(check=check, extra_vars={"llm_serving_models": [VLLM_MODEL]})
    assert run.rc != 0, run
    assert "llm1 has no GPU" in run.output, run
    assert run.total_changed == 0, run
    assert not get_host(NODE).file("/opt/llm/venv-vllm").exists


@pytest.mark.parametrize(
    "models,message",
    [
        ([{"name": "a", "port": 8101, "gguf_path": "/x.gguf"}, {"name": "b", "port": 8101, "gguf_path": "/y.gguf"}],
         "port 8101 is used more than once"),
        ([{"name": "a", "port": 6817, "gguf_path": "/x.gguf"}], "port 6817 (model a) is slurmctld (slurm_master)'s"),
        ([{"name": "a", "port": 9090, "gguf_path": "/x.gguf"}], "FastChat's hard-coded rate-limit monitor"),
        ([dict(VLLM_MODEL, max_model_len=32768, max_position_embeddings=8192)], "above the model's own limit"),
        ([dict(VLLM_MODEL, dtype="bf16")], "dtype 'bf16' is not one of"),
        ([{"name": "a", "port": 8101, "n_ctx": 4096, "max_position_embeddings": 2048, "gguf_path": "/x.gguf"}],
         "n_ctx (4096) a number not above the model's max_position_embeddings (2048)"),
    ],
    ids=["duplicate-port", "slurmctld-port", "port-9090", "max-model-len", "unknown-dtype", "n-ctx"],
)
def test_bad_input_fails_before_any_change(models, message):
    node = get_host(NODE)
    before = {unit: unit_state(node, unit) for unit in UNITS}
    run = run_playbook(extra_vars={"llm_serving_models": models})
    assert run.rc != 0, run
    assert message in run.output, run
    assert run.total_changed == 0, run
    assert {unit: unit_state(node, unit) for unit in UNITS} == before
