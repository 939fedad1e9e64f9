"""Monitoring on a real cluster: Prometheus and Alertmanager on mon1 (Debian's packages), node_exporter and
the layer collectors on mon1..mon3 (replica-3 GlusterFS, MUNGE, native Slurm with workers mon2 and mon3).

The tests run in file order: the configuration and healthy values first, then real faults, each followed
until its alert is firing in Alertmanager's API (/api/v2/alerts), then repaired until the alert has
resolved; the measured times are printed (pytest -rA shows them in the log). Bad input last."""

from __future__ import annotations

import json
import re
import shlex
import time

import pytest
from helpers import get_host, gluster_xml, inventory_hosts, journal_on_failure, run_playbook

SERVER = inventory_hosts("monitoring")[0]
NODES = inventory_hosts("all")
CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
VOLUME = "gv0"
testinfra_hosts = [SERVER]
# Measured times, printed at the end.
NUMBERS: dict[str, float] = {}


def server():
    return get_host(SERVER)


def listen_address(name: str = SERVER, default_file: str = "/etc/default/prometheus") -> str:
    """HOST:PORT of --web.listen-address in a daemon's EnvironmentFile (ARGS="...")."""
    args = get_host(name).file(default_file).content_string
    return re.search(r"--web\.listen-address=([^\s\"]+)", args).group(1)


def http_json(url: str):
    """GET url from the monitoring host (the services listen on its cluster address only)."""
    code = "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1],timeout=10).read().decode())"
    return json.loads(server().check_output(f"python3 -c {shlex.quote(code)} {shlex.quote(url)}"))


def prometheus(path: str):
    return http_json(f"http://{listen_address()}{path}")


def query(expr: str) -> list:
    """[(labels, value)] of an instant PromQL query."""
    from urllib.parse import quote

    data = prometheus(f"/api/v1/query?query={quote(expr)}")
    assert data["status"] == "success", data
    return [(r["metric"], float(r["value"][1])) for r in data["data"]["result"]]


def alerts() -> list:
    """Active alerts in Alertmanager: [{labels}] (a resolved alert is no longer listed)."""
    url = f"http://{listen_address(default_file='/etc/default/prometheus-alertmanager')}/api/v2/alerts?active=true&silenced=false&inhibited=false"
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


def value(expr: str) -> float | None:
    result = query(expr)
    return result[0][1] if result else None


def follow_fault(name: str, alert: str, labels: dict, timeout: float = 180) -> float:
    took = wait_for(lambda: firing(alert, **labels), timeout, f"{alert} {labels} firing")
    NUMBERS[f"{name}: time to alert"] = round(took, 1)
    print(f"{name}: {alert} {labels} firing in Alertmanager after {took:.1f} s")
    return took


def follow_repair(name: str, alert: str, labels: dict, timeout: float = 240) -> float:
    took = wait_for(lambda: not firing(alert, **labels), timeout, f"{alert} {labels} resolved")
    NUMBERS[f"{name}: time to resolve"] = round(took, 1)
    print(f"{name}: {alert} {labels} resolved after {took:.1f} s")
    return took


# --- configuration ---------------------------------------------------------------------------------


def test_prometheus_and_alertmanager_running_and_enabled():
    host = server()
    for unit in ("prometheus", "prometheus-alertmanager"):
        with journal_on_failure(host, unit):
            assert host.service(unit).is_running and host.service(unit).is_enabled


@pytest.mark.parametrize("node", NODES)
def test_node_exporter_and_collectors_timer_running(node):
    host = get_host(node)
    with journal_on_failure(host, "prometheus-node-exporter"):
        assert host.service("prometheus-node-exporter").is_running and host.service("prometheus-node-exporter").is_enabled
    with journal_on_failure(host, "hpclab-metrics"):
        assert host.service("hpclab-metrics.timer").is_running and host.service("hpclab-metrics.timer").is_enabled


@pytest.mark.parametrize("node", NODES)
def test_nothing_listens_on_every_interface(node):
    """Prometheus, Alertmanager and node_exporter listen on the node's cluster address only; no gossip port."""
    listening = get_host(node).check_output("ss -Hltn")
    sockets = [line.split()[3] for line in listening.splitlines()]
    for port in ("9090", "9093", "9094", "9100"):
        wild = [s for s in sockets if s.endswith(f":{port}") and (s.startswith("0.0.0.0:") or s.startswith("*:") or s.startswith("[::]:"))]
        assert not wild, f"{node} listens on every interface: {wild}"
    assert any(s.endswith(":9100") for s in sockets)
    if node == SERVER:
        assert listen_address() in sockets
        assert not any(s.endswith(":9094") for s in sockets)


def test_rendered_rules_and_configuration_pass_promtool_and_amtool():
    host = server()
    for command in ("promtool check rules /etc/prometheus/rules/hpclab.rules.yml", "promtool check config /etc/prometheus/prometheus.yml",
                    "amtool check-config /etc/prometheus/alertmanager.yml"):
        result = host.run(command)
        assert result.rc == 0, f"{command}: {result.stdout}{result.stderr}"
    assert "SUCCESS" in host.check_output("promtool check rules /etc/prometheus/rules/hpclab.rules.yml")


def test_every_target_is_up():
    expected = len(NODES) + 2  # node_exporter on every node, Prometheus and Alertmanager themselves

    def all_up():
        targets = prometheus("/api/v1/targets")["data"]["activeTargets"]
        return len(targets) == expected and all(t["health"] == "up" for t in targets)

    wait_for(all_up, 90, "every target up")
    targets = prometheus("/api/v1/targets")["data"]["activeTargets"]
    assert sorted(t["labels"]["host"] for t in targets if t["labels"]["job"] == "node") == NODES


# --- healthy values ---------------------------------------------------------------------------------


def test_healthy_values():
    """What an admin reads on a healthy cluster: 2 idle Slurm nodes, 3 bricks online, 0 heal entries, MUNGE ok."""
    checks = {
        'hpclab_slurm_nodes{state="idle"}': [2.0],
        "hpclab_slurm_controller_up": [1.0],
        'sum(hpclab_slurm_nodes{state!="idle"})': [0.0],
        f'hpclab_gluster_volume_bricks_online{{volume="{VOLUME}"}}': [3.0] * len(NODES),
        f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})': [0.0],
        f'max(hpclab_gluster_split_brain_entries{{volume="{VOLUME}"}})': [0.0],
        "min(hpclab_gluster_peer_connected)": [1.0],
        "hpclab_munge_up": [1.0] * len(NODES),
        'hpclab_munge_credential_ok{source="local"}': [1.0] * len(NODES),
        'hpclab_munge_credential_ok{source="controller"}': [1.0] * len(NODES),
        "min(hpclab_collector_success)": [1.0],
    }

    def healthy():
        return all(sorted(v for _l, v in query(expr)) == want for expr, want in checks.items())

    wait_for(healthy, 120, "healthy values " + ", ".join(checks))
    assert alerts() == []


def test_no_change_run_restarts_nothing():
    def pids():
        return {
            (n, u): get_host(n).check_output(f"systemctl show -p MainPID -p ActiveEnterTimestampMonotonic {u}")
            for n in NODES
            for u in (["prometheus", "prometheus-alertmanager"] if n == SERVER else []) + ["prometheus-node-exporter"]
        }

    before = pids()
    run = run_playbook("monitoring_only.yml")
    assert run.rc == 0 and run.total_changed == 0, run
    assert pids() == before


# --- real faults ----------------------------------------------------------------------------------


def test_fault_slurmd_stopped_fires_node_down_and_resolves():
    worker = get_host(WORKERS[0])
    node = WORKERS[0]
    worker.check_output("systemctl stop slurmd")
    try:
        follow_fault("slurmd stopped", "SlurmNodeDown", {"node": node})
    finally:
        worker.check_output("systemctl start slurmd")
    follow_repair("slurmd stopped", "SlurmNodeDown", {"node": node})
    wait_for(lambda: value('hpclab_slurm_nodes{state="idle"}') == 2.0, 120, "both workers idle again")


def brick_pid(host_name: str) -> str:
    root = gluster_xml(server(), "volume", "status", VOLUME)
    for node in root.iter("node"):
        if node.findtext("hostname") == host_name and node.findtext("path", "").startswith("/"):
            return node.findtext("pid")
    pytest.fail(f"no brick of {host_name} in volume status")


def test_fault_brick_killed_fires_brick_offline_and_heal_pending_then_resolves():
    victim = WORKERS[0]
    brick = next(b.findtext("name") for b in gluster_xml(server(), "volume", "info", VOLUME).iter("brick") if b.findtext("name").startswith(f"{victim}:"))
    get_host(victim).check_output(f"kill -9 {brick_pid(victim)}")
    host = server()
    writes = 0

    def write_some():
        nonlocal writes
        # Writes through the FUSE mount go on while the brick is away: each needs a heal later.
        host.check_output(f"mkdir -p /gfsv/montest && for i in $(seq {writes} {writes + 9}); do echo $i > /gfsv/montest/f$i; done")
        writes += 10

    write_some()
    try:
        follow_fault("brick killed", "GlusterBrickOffline", {"volume": VOLUME, "brick": brick})
        took = wait_for(lambda: (write_some(), (value(f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})') or 0) > 0)[1],
                        120, "heal entries pending while writes go on")
        pending = value(f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})')
        print(f"brick killed: {pending:.0f} heal entries pending, {took:.1f} s after the alert fired")
        follow_fault("brick killed (heal)", "GlusterHealPending", {"volume": VOLUME})
    finally:
        # The repair the alert's description gives: restart the brick process, then heal.
        host.check_output(f"gluster --mode=script volume start {VOLUME} force")
        host.run(f"gluster --mode=script volume heal {VOLUME}")
    follow_repair("brick killed", "GlusterBrickOffline", {"volume": VOLUME, "brick": brick})
    follow_repair("brick killed (heal)", "GlusterHealPending", {"volume": VOLUME}, timeout=300)
    assert value(f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})') == 0.0
    host.check_output("rm -rf /gfsv/montest")


def test_fault_munged_stopped_fires_munge_down_and_resolves():
    victim = WORKERS[-1]
    host = get_host(victim)
    host.check_output("systemctl stop munge")
    try:
        follow_fault("munged stopped", "MungeDown", {"host": victim})
        follow_fault("munged stopped (credential)", "MungeCredentialFailing", {"host": victim, "source": "controller"})
    finally:
        host.check_output("systemctl start munge")
    follow_repair("munged stopped", "MungeDown", {"host": victim})
    follow_repair("munged stopped (credential)", "MungeCredentialFailing", {"host": victim, "source": "controller"})
    # Its slurmd could not authenticate meanwhile: the cluster is back when both workers are idle.
    wait_for(lambda: value('hpclab_slurm_nodes{state="idle"}') == 2.0, 180, "both workers idle again")
    wait_for(lambda: alerts() == [], 180, "no alert left")


# --- bad input -------------------------------------------------------------------------------------


def test_bad_input_fails_before_any_change_naming_host_variable_and_fix():
    """An empty monitoring group, a retention Prometheus would refuse and a port of slurmd, in one run: every
    node's preflight names all three, and nothing changes (the exporters still listen where they did)."""
    exporter = listen_address(SERVER, "/etc/default/prometheus-node-exporter")
    run = run_playbook("monitoring_only.yml", extra_vars={
        "monitoring_group": "no_such_group", "monitoring_prometheus_retention": "15days", "monitoring_node_exporter_port": 6818})
    assert run.rc != 0 and run.total_changed == 0, run
    for node in NODES:
        assert f"{node}: the inventory group 'no_such_group' (variable monitoring_group) has no host" in run.output, run
    assert "Fix: add the monitoring host (the controller in the reference design) to the group 'no_such_group'" in run.output, run
    assert f"{SERVER}: monitoring_prometheus_retention '15days' is not a non-zero duration Prometheus accepts" in run.output, run
    assert "Fix: write e.g. '15d'" in run.output, run
    assert "monitoring_node_exporter_port 6818 is the port of slurmd (slurm_worker) in this collection" in run.output, run
    assert "Fix: choose a free port" in run.output, run
    assert get_host(SERVER).socket(f"tcp://{exporter}").is_listening
    assert listen_address(SERVER, "/etc/default/prometheus-node-exporter") == exporter


def test_zz_print_measured_times():
    for name, seconds in NUMBERS.items():
        print(f"{name}: {seconds} s")
