"""Monitoring of the reference design: Prometheus and Alertmanager on the controller's node (ctrl1),
node_exporter and the collectors on every node; the Slurm collector runs scontrol and squeue in the
slurmctld container (`docker exec ctrl1`), and cn2's collector has the GPU plan of its planned vLLM model.

Runs after test_accounting.py and test_docker_macvlan_input.py (file order), before test_slurm.py: the
healthy checks wait until the controller container test_accounting.py recreated is seen again. Then a
real fault: cn1's slurmd container stopped, followed until SlurmNodeDown fires in Alertmanager's API
(/api/v2/alerts) and its mail in root's mailbox on ctrl1 (the role's Postfix; monitoring_admin_email is empty here),
started again until the alert has resolved, the resolved mail arrived and both workers are idle (as test_slurm.py
expects them); a webhook listener on ctrl1 receives the same alerts. Then a power cut: cn1's node container stopped
(its systemd, every daemon and its network gone), one mail naming cn1 within 120 s with its layer alerts held back,
and a resolved mail after it is started again. The measured times are printed (pytest -rA shows them in the log)."""

from __future__ import annotations

import json
import shlex
import subprocess
import time

import pytest
from helpers import case_key, get_host, inventory_hosts, journal_on_failure, run_playbooks_side_by_side
from monitoring_checks import (
    MAILBOX, NODE_UNITS, SERVER_UNITS, alerts, assert_units_running, converge_monitoring_twice, firing, follow_fault,
    follow_mail, follow_repair, inhibited_alerts, mails, mails_about, prometheus, query,
    start_webhook_listener, value, wait_for, webhook_alerts, webhook_posts,
)

SERVER = inventory_hosts("monitoring")[0]
NODES = inventory_hosts("all")
CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
GPU_NODE = inventory_hosts("llm")[0]
testinfra_hosts = [SERVER]
COLLECTOR_CONFIG = "/etc/hpclab-monitoring/collectors.json"
SLURM_PROM = "/var/lib/prometheus/node-exporter/hpclab_slurm.prom"
# cn2's one planned model (molecule.yml): planned on GPU 0, never deployed in this scenario.
MODEL, MODEL_PORT = "stablelm-2", 8000
# What is firing on the healthy cluster: the planned model nothing serves, seen by the llm collector's health
# probe (vLLM's own gauges are relayed by that collector too, so there is no target of its own to be down).
EXPECTED_ALERTS = [("LlmModelServerDown", GPU_NODE, MODEL, "node")]
# The webhook of molecule.yml (monitoring_webhook_urls): a listener on the monitoring host.
WEBHOOK_PORT, WEBHOOK_PATH = 9199, "/hpclab?token=molecule-not-secret"
# A node that loses power is named in a mail within this many seconds (the role's defaults, README).
MAIL_WITHIN = 120


def collector_config(name: str) -> dict:
    return json.loads(get_host(name).file(COLLECTOR_CONFIG).content_string)


def active_alerts() -> list[tuple]:
    return sorted((a.get("alertname"), a.get("host"), a.get("model", ""), a.get("job", "")) for a in alerts())


def ctl(command: str) -> str:
    """A command in the slurmctld container."""
    return get_host(CONTROLLER).check_output(f"docker exec {CONTROLLER} bash -c {shlex.quote(command)}")


def node_state(name: str) -> str:
    return ctl(f"sinfo --noheader --Node --nodes={name} --format=%t")


# --- the layer itself --------------------------------------------------------------------------------


def test_monitoring_layer_converges_then_a_second_run_changes_and_restarts_nothing():
    """playbooks/monitoring.yml alone over the converged cluster (the other layers' results are not in this run: the
    playbook reads them through their roles' read-only entry points), then once more: changed=0."""
    converge_monitoring_twice()


# Who is told: each bad input fails the run before any change, naming the host, the variable and the fix (filter
# monitoring_problems, rules 17 to 20; every case in tests/unit/plugins/filter/test_monitoring_problems.py).
BAD_NOTIFICATIONS = [
    ({"monitoring_admin_email": ["hpc-admins"]}, "monitoring_admin_email has 'hpc-admins', which is not an e-mail address. Fix:"),
    ({"monitoring_mail_smarthost": {"host": "smtp.example.org"}}, "monitoring_mail_smarthost has no port. Fix:"),
    ({"monitoring_webhook_urls": ["ftp://chat.example.org/hooks/Zq7token"]},
     "monitoring_webhook_urls[0] (value not shown: it may hold a token) is not an http or https URL with a host (scheme 'ftp'). Fix:"),
    ({"monitoring_alertmanager_config": {"route": {"receiver": "oncall"}}},
     "monitoring_alertmanager_config route names the receiver 'oncall', which is not one of its receivers (default). Fix:"),
]


def test_bad_notification_input_fails_before_any_change():
    config = "/etc/prometheus/alertmanager.yml"
    before = get_host(SERVER).check_output(f"sha256sum {config} /etc/postfix/main.cf")
    runs = run_playbooks_side_by_side("monitoring_only.yml", [case for case, _message in BAD_NOTIFICATIONS], workers=4)
    for case, message in BAD_NOTIFICATIONS:
        run = runs[case_key(case)]
        assert run.rc != 0 and run.total_changed == 0, (case, run)
        assert f"{SERVER}: {message}" in run.output, (case, run)
        assert "Zq7token" not in run.output
    assert get_host(SERVER).check_output(f"sha256sum {config} /etc/postfix/main.cf") == before


# --- configuration ---------------------------------------------------------------------------------


def test_prometheus_and_alertmanager_running_and_enabled():
    assert_units_running(SERVER, SERVER_UNITS)


@pytest.mark.parametrize("node", NODES)
def test_node_exporter_and_collectors_timer_running(node):
    assert_units_running(node, NODE_UNITS)


def test_slurm_collector_runs_scontrol_in_the_controller_container():
    """Only the controller's node reads Slurm, through `docker exec ctrl1` (slurm_master_result.exec)."""
    config = collector_config(CONTROLLER)
    assert "slurm" in config["collectors"] and config["slurm_exec"] == ["docker", "exec", CONTROLLER], config
    for worker in WORKERS:
        assert "slurm" not in collector_config(worker)["collectors"]
    host = get_host(CONTROLLER)

    def written():
        prom = host.file(SLURM_PROM)
        return prom.exists and "hpclab_slurm_controller_up 1" in prom.content_string

    with journal_on_failure(host, "hpclab-metrics"):
        wait_for(written, 60, f"{SLURM_PROM} on {CONTROLLER} with hpclab_slurm_controller_up 1")


def test_gpu_plan_reaches_the_collector_of_the_gpu_node():
    """llm_gpu_plan -> monitoring_gpu_planned_gib -> the GpuMemoryOverPlan alert's planned side: GPU 0 only (the
    one stablelm-2 takes; GPU 1 is Slurm's), its share of 16 GiB."""
    config = collector_config(GPU_NODE)
    assert config["gpu_planned_gib"] == {"0": pytest.approx(14.98, abs=0.01)}, config["gpu_planned_gib"]
    assert [(m["name"], m["port"], m["engine"]) for m in config["llm_models"]] == [(MODEL, MODEL_PORT, "vllm")], config["llm_models"]
    # No nvidia-smi here: the planned bytes are published, the used ones are not (so the alert cannot fire).
    wait_for(lambda: query(f'hpclab_gpu_memory_planned_bytes{{host="{GPU_NODE}"}}') != [], 60, "planned GPU memory in Prometheus")
    planned = {labels["gpu"]: v for labels, v in query(f'hpclab_gpu_memory_planned_bytes{{host="{GPU_NODE}"}}')}
    assert planned == {"0": pytest.approx(config["gpu_planned_gib"]["0"] * 1024**3)}, planned
    assert query("hpclab_gpu_memory_used_bytes") == []


def test_every_target_is_up():
    """node_exporter of every node, Prometheus and Alertmanager: all up (the model servers are not targets: the
    collector on their node probes them and relays vLLM's gauges)."""
    targets = []

    def settled():
        targets[:] = prometheus("/api/v1/targets")["data"]["activeTargets"]
        return len(targets) == len(NODES) + 2 and all(t["health"] == "up" for t in targets)

    wait_for(settled, 90, "every target up")
    assert sorted(t["labels"]["job"] for t in targets) == ["alertmanager"] + ["node"] * len(NODES) + ["prometheus"]
    assert sorted(t["labels"]["host"] for t in targets if t["labels"]["job"] == "node") == NODES


# --- healthy values ---------------------------------------------------------------------------------


def test_healthy_values_and_only_the_planned_model_alerted():
    """Controller up, both workers idle, the collectors succeeding; the one thing alerted is the model planned on
    cn2 that nothing serves (its health probe)."""
    checks = {
        "hpclab_slurm_controller_up": [1.0],
        'hpclab_slurm_nodes{state="idle"}': [2.0],
        'sum(hpclab_slurm_nodes{state!="idle"})': [0.0],
        "max(hpclab_slurm_node_down)": [0.0],
        'hpclab_gluster_volume_bricks_online{volume="gv0"}': [3.0] * len(NODES),
        "hpclab_munge_up": [1.0] * len(NODES),
        f'hpclab_llm_model_up{{host="{GPU_NODE}",model="{MODEL}",port="{MODEL_PORT}",engine="vllm"}}': [0.0],
        "min(hpclab_collector_success)": [1.0],
    }

    def healthy():
        return all(sorted(v for _l, v in query(expr)) == want for expr, want in checks.items())

    wait_for(healthy, 180, "healthy values " + ", ".join(checks))
    # test_accounting.py recreated the controller container: any alert of that resolves first.
    wait_for(lambda: active_alerts() == EXPECTED_ALERTS, 180, f"only {EXPECTED_ALERTS} active")
    assert firing("LlmModelServerDown", model=MODEL, host=GPU_NODE, port=str(MODEL_PORT))


# --- a real fault ----------------------------------------------------------------------------------


def test_alerts_reach_roots_mailbox_through_postfix_on_the_loopback():
    """No monitoring_admin_email here: the planned model nothing serves (firing since the layer started) is mailed to
    root on the monitoring host, one message for its node, saying what to check first; Postfix accepts mail on the
    loopback only, and the mailbox and Alertmanager's configuration are not world-readable."""
    host = get_host(SERVER)
    assert_units_running(SERVER, ["postfix"])
    listening = host.check_output("ss -Hltn sport = :25")
    assert "127.0.0.1:25" in listening and "0.0.0.0:25" not in listening and "*:25" not in listening, listening
    found = []

    def arrived():
        found[:] = mails_about(GPU_NODE, "FIRING")
        return bool(found)

    with journal_on_failure(host, "postfix@-"):
        wait_for(arrived, 180, f"a FIRING mail about {GPU_NODE} in {MAILBOX}")
    mail = found[0]
    assert "LlmModelServerDown" in mail["subject"] and mail["to"] == "root@localhost", mail
    assert f"{GPU_NODE}: LLM model server {MODEL}" in mail["body"] and "First check, on" in mail["body"], mail["body"]
    for path, owner, group, mode in ((MAILBOX, "root", "mail", 0o600), ("/etc/prometheus/alertmanager.yml", "root", "prometheus", 0o640)):
        f = host.file(path)
        assert (f.user, f.mode) == (owner, mode), (path, f.user, f.group, oct(f.mode))


def test_webhook_receives_the_alerts():
    """The listener, started after the planned model's alert fired, gets it at Alertmanager's next try (within
    group_interval), with the URL's token; the fault tests below assert the posts of their alerts. On nodes where
    Alertmanager posted to the webhook before (this file run again), that alert is not posted again (its notification
    log): only the listener is checked here."""
    posted_before = value('sum(alertmanager_notifications_total{integration="webhook"})'
                          ' - sum(alertmanager_notifications_failed_total{integration="webhook"})') or 0.0
    start_webhook_listener(WEBHOOK_PORT)
    if posted_before > 0:
        print(f"webhook: Alertmanager posted {posted_before:.0f} times before; the fault tests check the posts")
        return
    took = wait_for(lambda: webhook_alerts("firing", "LlmModelServerDown", GPU_NODE), 200, f"LlmModelServerDown about {GPU_NODE} posted")
    print(f"webhook: the firing LlmModelServerDown posted {took:.1f} s after the listener started")
    post = next(p for p in webhook_posts() if p["body"]["groupLabels"].get("host") == GPU_NODE)
    assert post["path"] == WEBHOOK_PATH and post["body"]["receiver"] == "default", post


def test_fault_worker_container_stopped_fires_node_down_and_resolves():
    victim = WORKERS[0]
    host = get_host(victim)
    # The slurm_worker role names the slurmd container after its node.
    info = json.loads(host.check_output(f"docker inspect {victim}"))[0]
    assert info["State"]["Running"] and info["Config"]["Cmd"] == ["slurmd", "-D"], info["Config"]
    assert node_state(victim) == "idle" and not firing("SlurmNodeDown")
    since = len(mails())
    start = time.monotonic()
    host.check_output(f"docker stop {victim}")
    try:
        follow_fault("worker container stopped", "SlurmNodeDown", {"node": victim})
        assert value(f'hpclab_slurm_node_down{{node="{victim}"}}') == 1.0
        assert value(f'hpclab_slurm_node_down{{node="{WORKERS[-1]}"}}') == 0.0  # the other worker goes on
        assert not firing("SlurmNodeDown", node=WORKERS[-1])
        print(f"worker container stopped: sinfo shows {victim} {node_state(victim)}")
        mail = follow_mail("worker container stopped", "FIRING", victim, since, start)
        assert "SlurmNodeDown" in mail["subject"] and f"{victim}: Slurm node is DOWN" in mail["body"], mail
        assert "First check, on" in mail["body"] and "systemctl status slurmd munge" in mail["body"], mail["body"]
    finally:
        host.check_output(f"docker start {victim}")
    repaired = time.monotonic()
    follow_repair("worker container stopped", "SlurmNodeDown", {"node": victim})
    follow_mail("worker container stopped", "RESOLVED", victim, since, repaired, timeout=300)
    # The webhook got both too (its listener runs since the test before).
    wait_for(lambda: webhook_alerts("resolved", "SlurmNodeDown", victim), 60, f"the resolved SlurmNodeDown about {victim} posted")
    assert webhook_alerts("firing", "SlurmNodeDown", victim)
    # Back as test_slurm.py (next file) expects the cluster: both workers idle, nothing else alerted.
    wait_for(lambda: value('hpclab_slurm_nodes{state="idle"}') == 2.0, 120, "both workers idle again")
    wait_for(lambda: node_state(victim) == "idle", 60, f"sinfo shows {victim} idle")
    wait_for(lambda: active_alerts() == EXPECTED_ALERTS, 120, f"only {EXPECTED_ALERTS} active again")


def test_power_cut_of_a_worker_node_is_one_mail_within_120_s_then_a_resolved_one():
    """cn1's node container stopped, as a node that loses power (its glusterd, brick, munged, slurmd container and
    node_exporter go with it): one mail naming cn1 within MAIL_WITHIN s of the stop (TargetDown), its brick and Slurm
    alerts held back by the inhibition and no second mail about cn1 within group_interval; started again, a resolved mail."""
    victim = WORKERS[0]
    assert not any(a.get("host") == victim for a in alerts()), alerts()
    # The webhook listener runs (test_webhook_receives_the_alerts started it; again where this test runs alone): a
    # webhook that refuses keeps the node's last resolved alerts in Alertmanager, whose next alert then waits for
    # group_interval.
    start_webhook_listener(WEBHOOK_PORT)
    since = len(mails())
    start = time.monotonic()
    subprocess.run(["docker", "stop", victim], check=True, capture_output=True)
    try:
        mail = follow_mail("worker node powered off", "FIRING", victim, since, start, timeout=MAIL_WITHIN)
        mailed = time.monotonic()
        assert "TargetDown" in mail["subject"], mail
        assert f"{victim}: node down" in mail["body"] and f"ping {victim}" in mail["body"], mail["body"]
        # Slurm sets it NOT_RESPONDING after SlurmdTimeout, every brick host sees its brick offline: both alerts fire,
        # held back while TargetDown fires for the node.
        took = wait_for(lambda: {"SlurmNodeDown", "GlusterBrickOffline"} <= set(inhibited_alerts(victim)), 240,
                        f"SlurmNodeDown and GlusterBrickOffline about {victim} inhibited")
        print(f"worker node powered off: {inhibited_alerts(victim)} inhibited {took:.1f} s after the first mail")
        # Until group_interval (2m) has passed since the first mail, so that a second mail would have been sent.
        time.sleep(max(0.0, 135 - (time.monotonic() - mailed)))
        # No other mail names the node (a layer alert under another host name would, e.g. GlusterPeerDisconnected about
        # the peer's FQDN).
        subjects = [m["subject"] for m in mails()[since:] if m["subject"].startswith("[FIRING") and victim in m["subject"]]
        assert len(subjects) == 1, subjects
    finally:
        subprocess.run(["docker", "start", victim], check=True, capture_output=True)
    repaired = time.monotonic()
    follow_mail("worker node powered off", "RESOLVED", victim, since, repaired, timeout=480)
    # Back as test_slurm.py (next file) expects the cluster.
    wait_for(lambda: value(f'up{{job="node",host="{victim}"}}') == 1.0, 120, f"{victim}'s node_exporter up again")
    wait_for(lambda: node_state(victim) == "idle", 180, f"sinfo shows {victim} idle")
    wait_for(lambda: active_alerts() == EXPECTED_ALERTS, 300, f"only {EXPECTED_ALERTS} active again")
    assert webhook_alerts("firing", "TargetDown", victim) and webhook_alerts("resolved", "TargetDown", victim)
