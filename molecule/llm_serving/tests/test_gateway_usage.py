"""Usage per user and fair limits at the LLM gateway (roles/llm_gateway, issue 56), on llm1's two llama.cpp servers:
hpclab-llm-usage counts per user and model exactly the tokens the answers reported and writes them for node_exporter
(test_monitoring_llm.py finds them in Prometheus); a user over the daily token budget gets 429 with the reset time
while another user is served, and stays refused after nginx and the usage service restart (the counts survive); a user
with one request at a time gets 429 for a second at once. Runs after test_gateway.py (file order)."""

from __future__ import annotations

import datetime
import json
import re
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from helpers import get_host, inventory_hosts, run_playbook

testinfra_hosts = inventory_hosts("llm")
NODE = testinfra_hosts[0]
GATEWAY_PLAYBOOK = "../../playbooks/llm_gateway.yml"
PORT = 4000
PROM_FILE = "/var/lib/prometheus/node-exporter/hpclab_llm_usage.prom"
USAGE_LOG = "/var/log/nginx/hpclab-llm-gateway.usage.log"


def node():
    return get_host(NODE)


def key(user: str) -> str:
    text = node().check_output(f"cat /home/{user}/.config/hpclab/llm.env")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)["OPENAI_API_KEY"]


def chat(user: str, model: str, stream: bool = False, max_tokens: int = 8, start=None) -> tuple[int, dict, bytes]:
    """One chat completion through the gateway from the test machine: (status, headers, body). START: a barrier to wait
    at, once everything is ready, so that several requests leave at once."""
    body = {"model": model, "messages": [{"role": "user", "content": "Count to five."}], "max_tokens": max_tokens,
            "stream": stream}
    address = node().interface("eth0").addresses[0]
    request = urllib.request.Request(f"http://{address}:{PORT}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key(user)}"})
    if start is not None:
        start.wait()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(1)


def counters() -> dict:
    """{(metric, user, model): value} of the usage file node_exporter reads."""
    text = node().check_output(f"cat {PROM_FILE}")
    found = {}
    for name, labels, number in re.findall(r"^(hpclab_llm_\w+)\{(.*?)\} (\S+)$", text, re.M):
        label = dict(re.findall(r'(\w+)="(.*?)"', labels))
        found[(name, label.get("user"), label.get("model"))] = float(number)
    return found


def test_the_usage_per_user_and_model_is_the_tokens_the_answers_reported_and_prometheus_has_it():
    before = counters()
    prompt = completion = 0
    for _turn in range(2):
        status, _headers, body = chat("alice", "tiny-a")
        assert status == 200, body
        usage = json.loads(body)["usage"]
        prompt, completion = prompt + usage["prompt_tokens"], completion + usage["completion_tokens"]
    status, _headers, body = chat("alice", "tiny-b", stream=True)  # llama.cpp's stream: no usage chunk
    assert status == 200 and body.decode().rstrip().endswith("data: [DONE]"), body

    def grown(metric, model, by):
        return counters().get((metric, "alice", model), 0) - before.get((metric, "alice", model), 0) == by

    wait_for(lambda: grown("hpclab_llm_requests_total", "tiny-a", 2) and grown("hpclab_llm_requests_total", "tiny-b", 1),
             15, "alice's three requests counted")
    assert grown("hpclab_llm_prompt_tokens_total", "tiny-a", prompt), (counters(), before, prompt)
    assert grown("hpclab_llm_completion_tokens_total", "tiny-a", completion), (counters(), before, completion)
    assert grown("hpclab_llm_requests_without_usage_total", "tiny-b", 1)
    assert grown("hpclab_llm_prompt_tokens_total", "tiny-b", 0) and grown("hpclab_llm_completion_tokens_total", "tiny-b", 0)
    month = datetime.date.today().strftime("%Y-%m")
    assert f'hpclab_llm_user_tokens_this_month{{user="alice",month="{month}"}}' in node().check_output(f"cat {PROM_FILE}")
    # Prometheus scrapes this file through node_exporter: test_monitoring_llm.py, once the monitoring layer is there.
    # No key, no prompt in the usage log or the metrics.
    written = node().check_output(f"cat {USAGE_LOG} {PROM_FILE}")
    assert key("alice") not in written and key("bob") not in written and "Count to five" not in written


def test_over_the_daily_budget_429_until_midnight_while_another_user_is_served_and_a_second_request_at_once_429():
    limits = {"bob": {"daily_tokens": 1}, "alice": {"concurrent_requests": 1}}
    run = run_playbook(GATEWAY_PLAYBOOK, extra_vars={"llm_gateway_user_limits_by_user": limits})
    try:
        assert run.rc == 0, run
        # Bob's first answer of the day may pass (the budget is checked before each request); then he is over it.
        chat("bob", "tiny-a")

        def refused():
            return chat("bob", "tiny-a")[0] == 429

        wait_for(refused, 15, "bob over his daily budget")
        status, headers, body = chat("bob", "tiny-a")
        error = json.loads(body)["error"]
        assert status == 429 and error["code"] == "daily_token_budget_exceeded", body
        resets = datetime.datetime.fromisoformat(re.search(r"It resets at (\S+)\.$", error["message"]).group(1))
        assert resets.time() == datetime.time() and resets.tzinfo is not None, error  # the gateway host's next midnight
        assert 0 < (resets - datetime.datetime.now(datetime.timezone.utc)).total_seconds() <= 86400, error
        assert 0 < int(headers["Retry-After"]) <= 86400
        served = ("hpclab_llm_requests_total", "alice", "tiny-a")
        alice_before = counters().get(served, 0)
        status, _headers, body = chat("alice", "tiny-a")
        assert status == 200, body  # another user is served
        wait_for(lambda: counters().get(served, 0) == alice_before + 1, 15, "alice's request counted")
        # The counts survive a restart of nginx and of the usage service: bob stays refused, the counters stay.
        before = counters()
        node().check_output("systemctl restart nginx hpclab-llm-usage")
        time.sleep(2)
        assert chat("bob", "tiny-a")[0] == 429
        after = counters()
        assert {k: v for k, v in after.items() if k[0].endswith("_total")} == {k: v for k, v in before.items() if k[0].endswith("_total")}
        # Alice may have one request at a time: of four that leave at once (the server answers one after another), the
        # others get 429.
        start = threading.Barrier(4)
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda _turn: chat("alice", "tiny-b", max_tokens=128, start=start), range(4)))
        codes = sorted(answer[0] for answer in answers)
        assert 200 in codes and 429 in codes, answers
        assert all(json.loads(body)["error"]["code"] == "concurrent_requests_exceeded" for status, _headers, body in answers if status == 429)
    finally:
        back = run_playbook(GATEWAY_PLAYBOOK)
    assert back.rc == 0, back
    wait_for(lambda: chat("bob", "tiny-a")[0] == 200, 15, "bob served again without a budget")


# The usage service stopped (an admin, or a crash past systemd's restarts): requests go on being answered and logged, and
# a run that changes no input starts it again; it counts from where it stopped reading, so nothing answered meanwhile
# is lost.
def test_a_stopped_usage_service_is_started_by_a_run_that_changes_no_input_and_loses_no_request():
    served = ("hpclab_llm_requests_total", "alice", "tiny-a")
    node().check_output("systemctl stop hpclab-llm-usage")
    before = counters().get(served, 0)
    try:
        status, _headers, body = chat("alice", "tiny-a")
        assert status == 200, body
        time.sleep(2)
        assert counters().get(served, 0) == before  # not counted while stopped
    finally:
        run = run_playbook(GATEWAY_PLAYBOOK)
    assert run.rc == 0, run
    assert f"changed: [{NODE}]" in run.output.split("usage | Start it at boot and now]", 1)[1].split("TASK [", 1)[0], run
    assert run.total_changed == 1, run
    wait_for(lambda: counters().get(served, 0) == before + 1, 15, "alice's request of the stop counted")
