"""The monitoring layer over the LLM serving node: Prometheus, Alertmanager, node_exporter and the llm collector
on llm1 (playbooks/monitoring.yml after llm.yml in the converge).

Runs after test_llm_serving.py (file order), whose last test restarted tiny-b: the healthy checks wait until
any alert of that has resolved. Then a real fault: tiny-a's server stopped, followed until LlmModelServerDown
fires in Alertmanager's API (/api/v2/alerts) and its mail is in root's mailbox on llm1 (the role's Postfix), started
again until the alert has resolved, the resolved mail arrived and the model answers; the measured times are printed
(pytest -rA shows them in the log)."""

from __future__ import annotations

import json
import re
import time

from helpers import get_host, inventory_hosts, journal_on_failure
from monitoring_checks import (
    NODE_UNITS, SERVER_UNITS, alerts, assert_units_running, converge_monitoring_twice, firing, follow_fault,
    follow_mail, follow_repair, mails, prometheus, query, value, wait_for,
)

SERVER = inventory_hosts("monitoring")[0]
NODES = inventory_hosts("all")
LLM_NODE = inventory_hosts("llm")[0]
testinfra_hosts = [SERVER]
MODELS = {"tiny-a": 8101, "tiny-b": 8102}
KEY = "molecule-not-secret"


def answers(node, name: str, port: int) -> bool:
    """The model server lists its model to a client with the key (as test_llm_serving.py asks it)."""
    result = node.run(f"curl -fsS --max-time 30 -H 'Authorization: Bearer {KEY}' http://127.0.0.1:{port}/v1/models")
    return result.rc == 0 and [m["id"] for m in json.loads(result.stdout)["data"]] == [name]


def model_up(name: str) -> float | None:
    return value(f'hpclab_llm_model_up{{host="{LLM_NODE}",model="{name}"}}')


# --- the layer itself --------------------------------------------------------------------------------


def test_monitoring_layer_converges_then_a_second_run_changes_and_restarts_nothing():
    """playbooks/monitoring.yml alone over the converged cluster (the other layers' results are not in this run: the
    playbook reads them through their roles' read-only entry points), then once more: changed=0."""
    converge_monitoring_twice()


# --- configuration ---------------------------------------------------------------------------------


def test_the_gateways_usage_per_user_is_scraped_behind_the_monitoring_login():
    """hpclab-llm-usage's file on llm1 (alice's requests of test_gateway.py and test_gateway_usage.py) through
    node_exporter, which Prometheus scrapes with the monitoring login, into Prometheus (issue 56)."""
    text = get_host(LLM_NODE).check_output("cat /var/lib/prometheus/node-exporter/hpclab_llm_usage.prom")
    expected = float(re.search(r'^hpclab_llm_completion_tokens_total\{user="alice",model="tiny-a"\} (\S+)$', text, re.M).group(1))
    assert expected > 0
    wait_for(lambda: value(f'hpclab_llm_completion_tokens_total{{user="alice",model="tiny-a",host="{LLM_NODE}"}}') == expected,
             90, "alice's completion tokens in Prometheus")
    assert value(f'hpclab_llm_user_tokens_this_month{{user="alice",host="{LLM_NODE}"}}') > 0


def test_monitoring_daemons_and_collectors_running():
    assert_units_running(SERVER, SERVER_UNITS + NODE_UNITS)


def test_every_target_is_up():
    """node_exporter of every node, Prometheus and Alertmanager themselves (no vllm job: the engine is llama_cpp)."""
    expected = len(NODES) + 2

    def all_up():
        targets = prometheus("/api/v1/targets")["data"]["activeTargets"]
        return len(targets) == expected and all(t["health"] == "up" for t in targets)

    wait_for(all_up, 90, "every target up")
    targets = prometheus("/api/v1/targets")["data"]["activeTargets"]
    assert sorted(t["labels"]["job"] for t in targets) == ["alertmanager"] + ["node"] * len(NODES) + ["prometheus"]
    assert sorted(t["labels"]["host"] for t in targets if t["labels"]["job"] == "node") == NODES


# --- healthy values ---------------------------------------------------------------------------------


def test_both_models_up_and_no_alert():
    def healthy():
        ups = {labels["model"]: (labels["port"], up) for labels, up in query(f'hpclab_llm_model_up{{host="{LLM_NODE}"}}')}
        return ups == {name: (str(port), 1.0) for name, port in MODELS.items()}

    wait_for(healthy, 120, f"hpclab_llm_model_up 1 for {', '.join(MODELS)} (at the start of the wait: {query('hpclab_llm_model_up')})")
    assert value('min(hpclab_collector_success{collector="llm"})') == 1.0
    # The previous file's last test restarted tiny-b: any alert of that resolves first.
    wait_for(lambda: alerts() == [], 120, "no alert on the healthy node")


# --- a real fault ----------------------------------------------------------------------------------


def test_fault_model_server_stopped_fires_model_down_and_resolves():
    name, port = "tiny-a", MODELS["tiny-a"]
    node = get_host(LLM_NODE)
    unit = f"llm-{name}"
    labels = {"model": name, "host": LLM_NODE, "port": str(port)}
    assert answers(node, name, port) and not firing("LlmModelServerDown")
    since, start = len(mails()), time.monotonic()
    node.check_output(f"systemctl stop {unit}")
    try:
        follow_fault("model server stopped", "LlmModelServerDown", labels)
        mail = follow_mail("model server stopped", "FIRING", LLM_NODE, since, start)
        assert "LlmModelServerDown" in mail["subject"] and f"{LLM_NODE}: LLM model server {name}" in mail["body"], mail
        assert model_up(name) == 0.0
        assert model_up("tiny-b") == 1.0  # the other server goes on answering
        assert not firing("LlmModelServerDown", model="tiny-b")
    finally:
        # Its unit returns from start once the server answers (ExecStartPost waits for it).
        node.check_output(f"systemctl start {unit}")
    repaired = time.monotonic()
    follow_repair("model server stopped", "LlmModelServerDown", labels)
    follow_mail("model server stopped", "RESOLVED", LLM_NODE, since, repaired, timeout=300)
    wait_for(lambda: model_up(name) == 1.0, 60, f"hpclab_llm_model_up of {name} 1 again")
    with journal_on_failure(node, unit):
        assert node.service(unit).is_running
        assert answers(node, name, port) and answers(node, "tiny-b", MODELS["tiny-b"])
    wait_for(lambda: alerts() == [], 120, "no alert left")
