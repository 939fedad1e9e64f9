"""A power cut of the LLM host (issue 53): llm1 stopped at once (docker stop -t 0: no shutdown) and started again, with
no Ansible run. Within power_cut.BOUND s of its start, each model answers a chat completion through the gateway with
alice's key from her home (the gateway's key check, the model server behind it), each web UI answers its login page
on the cluster address, Prometheus (installed by test_monitoring_llm.py, which runs before this file) sees every
target up, and hpclab-llm-usage counts the requests answered after the start (the gateway's usage per user). A run
of the converge then changes nothing. The measured times are printed (pytest -rA shows them in the log)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from helpers import get_host, inventory_hosts, run_playbook
from power_cut import docker, follow, prometheus_targets

testinfra_hosts = inventory_hosts("llm")
NODE = testinfra_hosts[0]
MODELS = ["tiny-a", "tiny-b"]
WEB_UIS = {"fastchat-web": 7860, "fastchat-arena": 7861}
GATEWAY_PORT = 4000


def _get(url: str, key: str | None = None, body: dict | None = None) -> tuple[int, str]:
    """One request from the test machine: (status, body); (0, why) where nothing answers."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=60) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")
    except OSError as error:
        return 0, str(error)


def _address_and_key() -> tuple[str, str]:
    node = get_host(NODE)
    env = dict(line.split("=", 1) for line in node.check_output("cat /home/alice/.config/hpclab/llm.env").splitlines()
               if "=" in line and not line.startswith("#"))
    return node.interface("eth0").addresses[0], env["OPENAI_API_KEY"]


def _checks() -> dict:
    address, key = _address_and_key()
    checks = {}
    for model in MODELS:
        def answers(model=model) -> str:
            body = {"model": model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}
            status, text = _get(f"http://{address}:{GATEWAY_PORT}/v1/chat/completions", key, body)
            if status != 200:
                return f"{status}: {text[-200:]}"
            return "" if json.loads(text)["usage"]["completion_tokens"] > 0 else text[-200:]
        checks[f"{model} through the gateway"] = answers
    for unit, port in WEB_UIS.items():
        def login_page(port=port) -> str:
            status, text = _get(f"http://{address}:{port}/")
            return "" if status == 200 and "auth_required" in text else f"{status}: {text[-200:]}"
        checks[f"{unit} login page"] = login_page
    checks["Prometheus targets up"] = prometheus_targets
    return checks


USAGE_FILE = "/var/lib/prometheus/node-exporter/hpclab_llm_usage.prom"


def _requests_counted() -> float:
    """Every user's requests counted by hpclab-llm-usage, as node_exporter reads them; -1 where the file is not there."""
    read = docker("exec", NODE, "cat", USAGE_FILE)
    if read.returncode != 0:
        return -1
    return sum(float(line.rsplit(" ", 1)[1]) for line in read.stdout.splitlines() if line.startswith("hpclab_llm_requests_total{"))


def test_after_a_power_cut_the_models_answer_through_the_gateway_by_themselves():
    checks = _checks()
    before = {layer: check() for layer, check in checks.items()}
    assert not any(before.values()), f"not serving before the cut: {before}"
    time.sleep(3)  # hpclab-llm-usage reads its log every second: the requests above are counted by now
    counted = _requests_counted()
    assert counted > 0
    # The answers' checks send requests on every try: counted again once the service follows the log after the boot.
    checks["usage counted"] = lambda: "" if _requests_counted() > counted else f"{_requests_counted()} requests, {counted} before"
    assert docker("stop", "-t", "0", NODE).returncode == 0
    assert docker("start", NODE).returncode == 0
    back = follow(checks, time.monotonic())
    print(f"power cut of {NODE}: back after {back} s")
    run = run_playbook()
    assert run.rc == 0, run
    assert run.total_changed == 0, run
