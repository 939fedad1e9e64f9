"""The llm_serving role on a real CPU node: two llama.cpp servers and the FastChat web UIs over them."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
import yaml
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


def task_output(run, name: str) -> str:
    """What a run printed under one of the role's tasks (up to the next task or the recap)."""
    after = run.output.split(f"TASK [hpclab.cluster.llm_serving : {name}]", 1)
    assert len(after) == 2, run
    return re.split(r"TASK \[|PLAY RECAP", after[1], maxsplit=1)[0]


def role_default(name: str):
    """A variable of the role's defaults/main.yml, as the scenario uses it (its inventory does not set the pins)."""
    defaults = Path(__file__).resolve().parents[3] / "roles" / "llm_serving" / "defaults" / "main.yml"
    return yaml.safe_load(defaults.read_text(encoding="utf-8"))[name]


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


# A streamed answer read slowly (as a browser over a slow link does), and a second request to the same server while
# it streams: the monitoring collector's health probe (/v1/models), or another user. llama-cpp-python's default
# (interrupt_requests) ends the first answer with [DONE] as soon as another request waits: the web UI's empty
# answer in CI on 2026-12-05, where the gateway logged 265 bytes out (the first chunk, naming the role, and
# [DONE]). The role turns that off, so the second request waits its turn.
STREAM_WHILE_ANOTHER_WAITS = r"""
import http.client, json, sys, threading, time
port, key = int(sys.argv[1]), sys.argv[2]
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
body = {"model": sys.argv[3], "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 64, "stream": True}
stream = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
stream.request("POST", "/v1/chat/completions", json.dumps(body), headers)
response = stream.getresponse()
first = response.readline()
probe = {}
def ask():
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/v1/models", headers=headers)
    probe["status"] = conn.getresponse().status
waiting = threading.Thread(target=ask)
waiting.start()
time.sleep(1)
try:
    rest = response.read()
except http.client.IncompleteRead as cut:  # the answer cut off without its last chunk
    rest = cut.partial
events = [first] + rest.splitlines()
waiting.join()
chunks = [json.loads(e[6:]) for e in events if e.startswith(b"data: {")]
print(json.dumps({"probe": probe.get("status"), "done": b"data: [DONE]" in events,
                  "content_chunks": sum(1 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")),
                  "finish": [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1:]}))
"""


@pytest.mark.parametrize("name,port", MODELS.items())
def test_a_request_while_an_answer_streams_waits_and_does_not_cut_the_answer(host, name, port):
    with journal_on_failure(host, f"llm-{name}"):
        out = host.check_output("python3 -c %s %s %s %s", STREAM_WHILE_ANOTHER_WAITS, str(port), KEY, name)
    result = json.loads(out)
    # All 64 tokens, ended by the length limit, and then the probe's answer.
    assert result == {"probe": 200, "done": True, "content_chunks": 64, "finish": ["length"]}, result


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
    # Not ready_a <= started_a: journald stamps the wait's stdout line when it reads the stream, which can be some
    # milliseconds after systemd's own "Started" message (seen: 47 ms), though the wait printed it first.
    assert ready_a[0] <= starting_b[0] and started_a[0] <= starting_b[0], journal


def test_unit_b_is_ordered_after_a(host):
    assert "llm-tiny-a.service" in host.check_output("systemctl show -p After llm-tiny-b")


def test_api_key_not_in_unit_files(host):
    assert host.run(f"grep -rl {KEY} /etc/systemd/system").stdout == ""


def test_api_key_not_on_any_command_line(host):
    """Every local user reads every process's command line (ps, /proc/PID/cmdline): the servers get the key from
    their environment only."""
    assert KEY not in host.check_output("ps -eo args")


def test_api_key_file_mode(host):
    key_file = host.file("/etc/llm/api-key.env")
    assert (key_file.mode, key_file.user, key_file.group) == (0o640, "root", "llm")


# Where the web UIs ask the models (the gateway, with their own key), their logins and what they show after one:
# test_web_login.py.
def test_api_endpoints_hold_both_models(host):
    endpoints = json.loads(host.file("/etc/llm/api_endpoints.json").content_string)
    assert set(endpoints) == set(MODELS)
    for name in MODELS:
        entry = endpoints[name]
        assert entry["model_name"] == name
        assert entry["api_type"] == "openai"
        assert entry["anony_only"] is False


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
    # Nor does it run pip, which takes seconds per virtualenv: the requirements are those install.yml recorded.
    pip = task_output(run, "install | Virtualenvs that are new or whose requirements changed")
    assert f"skipping: [{NODE}] => (item=llama_cpp)" in pip and f"skipping: [{NODE}] => (item=fastchat)" in pip, run


@pytest.mark.parametrize("venv,variable", [("venv-llama-cpp", "llm_serving_llamacpp_packages"),
                                           ("venv-fastchat", "llm_serving_fastchat_packages")])
def test_each_virtualenv_records_its_requirements(host, venv, variable):
    record = host.file(f"/opt/llm/{venv}/requirements.txt")
    assert (record.mode, record.user, record.group) == (0o644, "root", "root")
    assert record.content_string.splitlines() == role_default(variable)


def test_changed_requirements_run_pip_again_and_restart_nothing():
    """A requirement added to one virtualenv (diskcache, already there as llama-cpp-python's): pip runs for that one
    only, installs nothing, so nothing restarts; the record follows the requirements both ways."""
    node = get_host(NODE)
    before = {unit: unit_state(node, unit) for unit in UNITS}
    packages = role_default("llm_serving_llamacpp_packages")
    record = "/opt/llm/venv-llama-cpp/requirements.txt"
    run = run_playbook(extra_vars={"llm_serving_llamacpp_packages": packages + ["diskcache"]})
    try:
        assert run.rc == 0, run
        pip = task_output(run, "install | Virtualenvs that are new or whose requirements changed")
        assert f"ok: [{NODE}] => (item=llama_cpp)" in pip and f"skipping: [{NODE}] => (item=fastchat)" in pip, run
        assert run.total_changed == 1, run  # the record
        assert node.file(record).content_string.splitlines() == packages + ["diskcache"]
    finally:
        restored = run_playbook()
    assert restored.rc == 0, restored
    assert restored.total_changed == 1, restored
    assert node.file(record).content_string.splitlines() == packages
    assert {unit: unit_state(node, unit) for unit in UNITS} == before
    still_serving(node)


def test_check_mode_changes_nothing():
    run = run_playbook(check=True)
    assert run.rc == 0, run
    assert run.total_changed == 0, run


VLLM_MODEL = {"name": "llama-3-8b", "port": 8000, "engine": "vllm", "model": "meta-llama/Meta-Llama-3-8B-Instruct",
              "dtype": "bfloat16", "max_model_len": 8192}


ONE_GPU = [{"index": 0, "memory_total": "81920 MiB"}]
THREE_GPUS = [{"index": i, "memory_total": "81920 MiB"} for i in range(3)]


def tiny(name: str = "tiny-a", port: int = 8101, **overrides) -> dict:
    """A model entry as the scenario's inventory gives it (the GGUF file of the converge)."""
    return {"name": name, "port": port, "gguf_src": f"{os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY', '')}/models/{name}.gguf",
            "n_ctx": 512, "extra_args": ["--n_threads", "1"], **overrides}


def still_serving(node) -> None:
    """What a user checks after a failed run: the same processes, the same unit files, both models answering."""
    for name, port in MODELS.items():
        assert [m["id"] for m in api(node, port, "/v1/models")["data"]] == [name]


def unit_files(node) -> dict:
    return {unit: node.file(f"/etc/systemd/system/{unit}.service").sha256sum for unit in UNITS}


@pytest.mark.parametrize("check", [True, False], ids=["check-mode", "real-run"])
def test_vllm_on_a_cpu_node_fails_preflight_before_any_change(check):
    run = run_playbook(check=check, extra_vars={"llm_serving_models": [VLLM_MODEL]})
    assert run.rc != 0, run
    assert f"{NODE}: has no GPU" in run.output and "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert not get_host(NODE).file("/opt/llm/venv-vllm").exists


# Each message names the host and the variable; the filter llm_serving_problems adds the fix. Every rule
# is unit-tested (tests/unit/plugins/filter/test_llm_serving_problems.py); these prove, on the converged
# node, that the one assertion stops the run before any change, for models, ports, keys, host files,
# addresses, the user and the installs.
BAD_INPUT = [
    pytest.param({"llm_serving_models": [tiny("a"), tiny("b")]},
                 f"{NODE}: llm_serving_models[1] (b): port 8101 is also the port of llm_serving_models[0] (a)", id="duplicate-port"),
    pytest.param({"llm_serving_models": [tiny(port=6817)]},
                 f"{NODE}: llm_serving_models[0] (tiny-a): port 6817 is slurmctld (slurm_master)'s", id="slurmctld-port"),
    pytest.param({"llm_serving_models": [tiny(port=9090)]}, "is Prometheus / FastChat's hard-coded rate-limit monitor's",
                 id="port-9090"),
    pytest.param({"llm_serving_models": [dict(VLLM_MODEL, max_model_len=32768, max_position_embeddings=8192)]},
                 f"{NODE}: llm_serving_models[0] (llama-3-8b): max_model_len 32768 is above the model's own limit", id="max-model-len"),
    pytest.param({"llm_serving_models": [dict(VLLM_MODEL, dtype="bf16")]},
                 f"{NODE}: llm_serving_models[0] (llama-3-8b): dtype 'bf16' is not one of", id="unknown-dtype"),
    pytest.param({"llm_serving_models": [tiny(n_ctx=4096, max_position_embeddings=2048)]},
                 "n_ctx 4096 is above the model's max_position_embeddings (2048)", id="n-ctx"),
    pytest.param({"llm_serving_models": [tiny(name="tiny a")]},
                 f"{NODE}: llm_serving_models[0] (tiny a): name 'tiny a' cannot name the systemd unit", id="name-with-a-blank"),
    pytest.param({"llm_serving_models": [tiny(n_ctxt=512)]}, f"{NODE}: llm_serving_models[0] (tiny-a): unknown key 'n_ctxt'",
                 id="misspelt-key"),
    pytest.param({"llm_serving_models": [tiny(extra_args=["--port", "9000"])]},
                 f"{NODE}: llm_serving_models[0] (tiny-a): extra_args sets --port", id="extra-args-port"),
    pytest.param({"llm_serving_models": [{"name": "tiny-a", "port": 8101, "gguf_path": "/srv/none.gguf"}]},
                 f"{NODE}: llm_serving_models[0] (tiny-a): gguf_path /srv/none.gguf is missing on the host", id="gguf-path-missing"),
    # tiny-b left out: before, the run removed its server, then failed at the copy (issue 56).
    pytest.param({"llm_serving_models": [{"name": "tiny-a", "port": 8101, "gguf_src": "/nonexistent/model.gguf", "n_ctx": 512}]},
                 f"{NODE}: llm_serving_models[0] (tiny-a): gguf_src /nonexistent/model.gguf is not a file on the Ansible "
                 "controller", id="gguf-src-missing"),
    pytest.param({"llm_serving_models": [{"name": "tiny-c", "port": 8103, "gguf_url": "http://127.0.0.1:9/tiny-c.gguf",
                                          "gguf_checksum": "sha256:" + "0" * 64, "n_ctx": 512}]},
                 f"{NODE}: llm_serving_models[0] (tiny-c): gguf_url http://127.0.0.1:9/tiny-c.gguf does not answer from this "
                 "host", id="gguf-url-unreachable"),
    pytest.param({"llm_serving_bind_address": "127.0.0.300"},
                 f"{NODE}: llm_serving_bind_address '127.0.0.300' is not an IP address", id="bind-address-typo"),
    pytest.param({"llm_serving_client_address": "10.0.0.5"},
                 f"{NODE}: llm_serving_client_address 10.0.0.5 does not reach the servers", id="client-address"),
    pytest.param({"llm_serving_user": "root"}, f"{NODE}: llm_serving_user is root", id="user-root"),
    # The GPU plan's rules (39-43), with GPUs given as the inventory gives them (this node has none).
    pytest.param({"llm_serving_gpus": ONE_GPU, "llm_serving_models": [dict(VLLM_MODEL, tensor_parallel_size=2)]},
                 f"{NODE}: llm_serving_models[0] (llama-3-8b): tensor_parallel_size 2 is more than this host's 1 GPU(s) "
                 "(llm_serving_gpus)", id="tensor-parallel-over-the-gpus"),
    pytest.param({"llm_serving_gpus": THREE_GPUS, "llm_serving_models": [dict(VLLM_MODEL, tensor_parallel_size=3)]},
                 f"{NODE}: llm_serving_models[0] (llama-3-8b): tensor_parallel_size 3 does not divide the model's 8 KV heads",
                 id="kv-heads-not-divisible"),
    pytest.param({"llm_serving_gpus": ONE_GPU, "llm_serving_models": [dict(VLLM_MODEL, gpu=1)]},
                 f"{NODE}: llm_serving_models[0] (llama-3-8b): gpu 1: it is pinned to GPU 1, which is not among the GPUs of "
                 "this host (0; llm_serving_gpus)", id="pinned-to-a-missing-gpu"),
    pytest.param({"llm_serving_pip_find_links": []},
                 f"{NODE}: llm_serving_pip_no_index is true but llm_serving_pip_find_links is empty", id="no-wheelhouse"),
]


@pytest.mark.parametrize("extra_vars,message", BAD_INPUT)
def test_bad_input_fails_before_any_change_and_the_models_still_answer(extra_vars, message):
    node = get_host(NODE)
    before, files = {unit: unit_state(node, unit) for unit in UNITS}, unit_files(node)
    run = run_playbook(extra_vars=extra_vars)
    assert run.rc != 0, run
    assert message in run.output and "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert unit_files(node) == files
    assert {unit: unit_state(node, unit) for unit in UNITS} == before  # nothing restarted
    still_serving(node)


# A run limited by --tags to one step (the llm_serving and llm_gateway roles', through playbooks/llm.yml) checks the
# whole input first and does that step. Before, every such run failed at once: the web UIs' play read the gateway's
# llm_gateway_result, which no gateway task under those tags published (and the gateway's own steps were never
# selected: its role was included untagged).
TAG_RUNS = ["llm_serving_service", "llm_serving_configure", "llm_serving_install,llm_serving_models", "llm_gateway_configure",
            "llm_gateway_keys,llm_gateway_web,llm_gateway_homes,llm_gateway_service"]


def test_runs_limited_by_tags_to_steps_change_nothing_and_restart_nothing():
    node = get_host(NODE)
    before, files = {unit: unit_state(node, unit) for unit in UNITS}, unit_files(node)
    for tags in TAG_RUNS:
        run = run_playbook("converge.yml", "--tags", tags)
        assert run.rc == 0 and run.total_changed == 0, (tags, run)
        assert "preflight | Check the models" in run.output, (tags, run)
    assert unit_files(node) == files
    assert {unit: unit_state(node, unit) for unit in UNITS} == before
    still_serving(node)


def test_a_run_limited_by_tags_to_the_service_step_starts_a_stopped_server_and_nothing_else():
    node = get_host(NODE)
    stopped = "llm-tiny-b"
    others = [unit for unit in UNITS if unit != stopped]
    node.check_output(f"systemctl stop {stopped}")
    before = {unit: unit_state(node, unit) for unit in others}
    run = run_playbook("converge.yml", "--tags", "llm_serving_service")
    assert run.rc == 0 and run.total_changed == 1, run
    assert node.service(stopped).is_running, journal_on_failure(node, stopped)
    assert {unit: unit_state(node, unit) for unit in others} == before
    still_serving(node)


@pytest.mark.parametrize("tags,extra_vars,message", [
    pytest.param("llm_serving_configure", {"llm_serving_bind_address": "127.0.0.300"},
                 f"{NODE}: llm_serving_bind_address '127.0.0.300' is not an IP address", id="llm_serving_configure"),
    pytest.param("llm_gateway_configure", {"llm_gateway_port": 8101},
                 f"{NODE}: llm_gateway_port 8101 is the port of the model server tiny-a", id="llm_gateway_configure"),
])
def test_bad_input_in_a_run_limited_by_tags_fails_before_any_change(tags, extra_vars, message):
    node = get_host(NODE)
    before, files = {unit: unit_state(node, unit) for unit in UNITS}, unit_files(node)
    run = run_playbook("converge.yml", "--tags", tags, extra_vars=extra_vars)
    assert run.rc != 0, run
    assert message in run.output and "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert unit_files(node) == files
    assert {unit: unit_state(node, unit) for unit in UNITS} == before
    still_serving(node)


def test_a_bad_api_key_is_refused_without_showing_it():
    node = get_host(NODE)
    before = {unit: unit_state(node, unit) for unit in UNITS}
    run = run_playbook(extra_vars={"llm_serving_api_key": 'XYZZY"quoted'})
    assert run.rc != 0, run
    assert f"{NODE}: llm_serving_api_key (value not shown) is not a bearer token" in run.output and "Fix:" in run.output, run
    assert "XYZZY" not in run.output, run
    assert run.total_changed == 0, run
    assert {unit: unit_state(node, unit) for unit in UNITS} == before
    still_serving(node)


def test_a_changed_model_file_is_copied_again_and_restarts_its_server_only():
    """tiny-a's entry names tiny-b's GGUF file (another valid model): copy finds tiny-a's copy different and writes
    it, and tiny-a alone restarts; the next plain run puts tiny-a's own file back."""
    node = get_host(NODE)
    before = {unit: unit_state(node, unit) for unit in UNITS}
    wanted = hashlib.sha256(Path(tiny("tiny-b")["gguf_src"]).read_bytes()).hexdigest()
    swapped = run_playbook(extra_vars={"llm_serving_models": [tiny(gguf_src=tiny("tiny-b")["gguf_src"]), tiny("tiny-b", 8102)]})
    try:
        assert swapped.rc == 0, swapped
        copied = task_output(swapped, "models | GGUF files from the controller")
        assert f"changed: [{NODE}] => (item=tiny-a)" in copied and f"ok: [{NODE}] => (item=tiny-b)" in copied, swapped
        assert node.file("/var/lib/llm/models/tiny-a.gguf").sha256sum == wanted
        after = {unit: unit_state(node, unit) for unit in UNITS}
        assert after["llm-tiny-a"] != before["llm-tiny-a"]
        assert {u: after[u] for u in UNITS if u != "llm-tiny-a"} == {u: before[u] for u in UNITS if u != "llm-tiny-a"}
    finally:
        restored = run_playbook()
    assert restored.rc == 0, restored
    assert f"changed: [{NODE}] => (item=tiny-a)" in task_output(restored, "models | GGUF files from the controller"), restored
    assert node.file("/var/lib/llm/models/tiny-a.gguf").sha256sum == hashlib.sha256(Path(tiny()["gguf_src"]).read_bytes()).hexdigest()
    still_serving(node)


def test_servers_that_restart_together_all_stop_before_the_first_starts():
    """Both servers' units change (another n_ctx): with vLLM a new plan moves GPU memory between them, so neither may
    start while the other still holds its old share: tiny-b stops before tiny-a starts again, then tiny-a, then tiny-b
    start in order. The next plain run puts both back the same way."""
    node = get_host(NODE)

    def times(unit):
        out = node.check_output(
            f"systemctl show -p InactiveEnterTimestampMonotonic -p ActiveEnterTimestampMonotonic llm-{unit}")
        props = dict(line.split("=", 1) for line in out.splitlines())
        return int(props["InactiveEnterTimestampMonotonic"]), int(props["ActiveEnterTimestampMonotonic"])

    for models in ([tiny(n_ctx=256), tiny("tiny-b", 8102, n_ctx=256)], None):
        started = times("tiny-a")[1]
        run = run_playbook(extra_vars={"llm_serving_models": models} if models else None)
        assert run.rc == 0, run
        (a_stopped, a_started), (b_stopped, b_started) = times("tiny-a"), times("tiny-b")
        assert a_started > started, run  # both restarted
        assert b_stopped < a_started < b_started, (a_stopped, a_started, b_stopped, b_started)
        assert b_stopped <= a_stopped, "the last server stops first"
    still_serving(node)


# Last: it restarts a server. A flag llama.cpp's server does not know passes every input check (extra_args
# are the server's own); the server then exits at its restart, and the role's check after the restart
# must fail the run naming the unit. The next plain run restores it.
def test_a_server_that_does_not_come_back_fails_the_run():
    node = get_host(NODE)
    broken_models = [tiny(), tiny("tiny-b", 8102, extra_args=["--n_threads", "1", "--no_such_flag", "1"])]
    broken = run_playbook(extra_vars={"llm_serving_models": broken_models})
    try:
        assert broken.rc != 0, broken
        assert f"{NODE}: llm-tiny-b (llama_cpp, port 8102) is not serving after its (re)start: it did not start" in broken.output, broken
        assert "Fix: read why in journalctl -u llm-tiny-b" in broken.output, broken
        assert node.run("curl -fsS -o /dev/null -H 'Authorization: Bearer %s' http://127.0.0.1:8102/v1/models", KEY).rc != 0
    finally:
        restored = run_playbook()
    assert restored.rc == 0, restored
    # The restored server was asked, after its restart, which model it serves.
    asked = restored.output.split("Check that every model server started in this run serves its model", 1)
    assert len(asked) == 2 and "(item=tiny-b)" in asked[1], restored
    still_serving(node)


# Issue 53: a run that changes nothing still asks every model server whether it answers, and restarts one that runs but
# does not (here tiny-a's server stopped with SIGSTOP: its unit is active, its port accepts connections, nothing
# answers). The other server is left alone, and the next run changes nothing.
def test_a_server_that_runs_but_does_not_answer_is_restarted_by_a_run_that_changes_nothing():
    node = get_host(NODE)
    before = {unit: unit_state(node, unit) for unit in UNITS}
    node.check_output(f"kill -STOP {before['llm-tiny-a'][0]}")
    try:
        run = run_playbook()
    finally:
        node.run(f"kill -CONT {before['llm-tiny-a'][0]}")
    assert run.rc == 0, run
    assert run.total_changed == 1, run
    restarted = run.output.split("Restart the model servers that run but do not answer", 1)
    assert len(restarted) == 2 and f"changed: [{NODE}] => (item=tiny-a)" in restarted[1].split("TASK [", 1)[0], run
    after = {unit: unit_state(node, unit) for unit in UNITS}
    assert after["llm-tiny-a"][0] != before["llm-tiny-a"][0]
    assert {u: s for u, s in after.items() if u != "llm-tiny-a"} == {u: s for u, s in before.items() if u != "llm-tiny-a"}
    still_serving(node)
    again = run_playbook()
    assert again.rc == 0 and again.total_changed == 0, again
