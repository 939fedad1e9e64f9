"""Reading Prometheus and Alertmanager from the monitoring host, and following a real fault until its
alert fires in Alertmanager's API (/api/v2/alerts) and until it resolves, for every scenario that runs
the monitoring layer. Each measured time is printed by the test that measures it (pytest -rA shows it in the log)."""

from __future__ import annotations

import json
import re
import shlex
import time
from urllib.parse import quote

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook


def monitoring_server() -> str:
    return inventory_hosts("monitoring")[0]


def listen_address(name: str | None = None, default_file: str = "/etc/default/prometheus") -> str:
    """HOST:PORT of --web.listen-address in a daemon's EnvironmentFile (ARGS="...")."""
    args = get_host(name or monitoring_server()).file(default_file).content_string
    return re.search(r"--web\.listen-address=([^\s\"]+)", args).group(1)


PASSWORD_FILE = "/etc/prometheus/hpclab-web-password"
USERNAME = "hpclab"
# GET with basic auth, the password read on the monitoring host from the file the role keeps it in (never shown here).
HTTP_GET = """
import base64, sys, urllib.request
password = open(sys.argv[3]).read().strip()
request = urllib.request.Request(sys.argv[1])
request.add_header("Authorization", "Basic " + base64.b64encode(f"{sys.argv[2]}:{password}".encode()).decode())
print(urllib.request.urlopen(request, timeout=10).read().decode())
"""


def http_json(url: str):
    """GET url from the monitoring host (the services listen on its cluster address only), logged in as the role's
    web user."""
    command = f"python3 -c {shlex.quote(HTTP_GET)} {shlex.quote(url)} {USERNAME} {PASSWORD_FILE}"
    return json.loads(get_host(monitoring_server()).check_output(command))


def prometheus(path: str):
    return http_json(f"http://{listen_address()}{path}")


def query(expr: str) -> list:
    """[(labels, value)] of an instant PromQL query."""
    data = prometheus(f"/api/v1/query?query={quote(expr)}")
    assert data["status"] == "success", data
    return [(r["metric"], float(r["value"][1])) for r in data["data"]["result"]]


def value(expr: str) -> float | None:
    result = query(expr)
    return result[0][1] if result else None


def alerts() -> list:
    """Active alerts in Alertmanager: [{labels}] (a resolved alert is no longer listed)."""
    address = listen_address(default_file="/etc/default/prometheus-alertmanager")
    url = f"http://{address}/api/v2/alerts?active=true&silenced=false&inhibited=false"
    return [a["labels"] for a in http_json(url) if a["status"]["state"] == "active"]


def firing(name: str, **labels) -> bool:
    return any(a.get("alertname") == name and all(a.get(k) == v for k, v in labels.items()) for a in alerts())


def wait_for(predicate, timeout: float, what: str, interval: float = 2.0) -> float:
    """Seconds until predicate() was true; fails naming `what` after timeout."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            pytest.fail(f"{what}: not within {timeout} s (alerts now: {alerts()})")
        time.sleep(interval)


def follow_fault(name: str, alert: str, labels: dict, timeout: float = 180) -> float:
    took = wait_for(lambda: firing(alert, **labels), timeout, f"{alert} {labels} firing")
    print(f"{name}: {alert} {labels} firing in Alertmanager after {took:.1f} s")
    return took


def follow_repair(name: str, alert: str, labels: dict, timeout: float = 240) -> float:
    took = wait_for(lambda: not firing(alert, **labels), timeout, f"{alert} {labels} resolved")
    print(f"{name}: {alert} {labels} resolved after {took:.1f} s")
    return took


def converge_monitoring_twice(playbook: str = "monitoring_only.yml") -> None:
    """playbooks/monitoring.yml alone over the converged cluster (through the scenario's PLAYBOOK), then once more:
    the second run changes nothing and restarts no node_exporter."""
    nodes = inventory_hosts("all")
    first = run_playbook(playbook)
    assert first.rc == 0, first
    pids = {n: get_host(n).check_output("systemctl show -p MainPID --value prometheus-node-exporter") for n in nodes}
    second = run_playbook(playbook)
    assert second.rc == 0 and second.total_changed == 0, second
    assert {n: get_host(n).check_output("systemctl show -p MainPID --value prometheus-node-exporter") for n in nodes} == pids


# The units of the monitoring role: on the server, and on every node.
SERVER_UNITS = ("prometheus", "prometheus-alertmanager")
NODE_UNITS = ("prometheus-node-exporter", "hpclab-metrics.timer")


def assert_units_running(node: str, units) -> None:
    """Each unit running and enabled on NODE; the journal of the failing one is shown."""
    host = get_host(node)
    for unit in units:
        with journal_on_failure(host, unit.removesuffix(".timer")):
            assert host.service(unit).is_running and host.service(unit).is_enabled, unit
