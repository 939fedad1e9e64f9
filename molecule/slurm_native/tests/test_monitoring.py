"""Monitoring on this scenario's cluster: Prometheus and Alertmanager on the controller (Debian's packages),
node_exporter and the layer collectors on every node (replica-3 GlusterFS, NFS-Ganesha on the controller, MUNGE,
native Slurm with three workers).

The tests run in file order: the configuration and healthy values first, then real faults, each followed
until its alert is firing in Alertmanager's API (/api/v2/alerts) and its mail is in root's mailbox on the monitoring
host (the role's Postfix; monitoring_admin_email is empty here), then repaired until the alert has resolved (and,
for a stopped slurmd, a stopped NFS-Ganesha and a dropped export, until the resolved mail arrived: a node's next mail
waits for group_interval while its group holds an alert not yet told resolved). Then a flapping node (powered off
and on three times) sends no storm of mails. The measured times are printed (pytest -rA shows them in the log). Bad
input last."""

from __future__ import annotations

import subprocess
import time

import pytest
from helpers import get_host, gluster_xml, http_status, inventory_hosts, run_playbook
from monitoring_checks import (
    NODE_UNITS, PASSWORD_FILE, SERVER_UNITS, USERNAME, alerts, assert_units_running, follow_fault, follow_mail,
    follow_repair, listen_address, mails, prometheus, query, value, wait_for,
)

SERVER = inventory_hosts("monitoring")[0]
NODES = inventory_hosts("all")
BRICK_NODES = inventory_hosts("glusterfs")
CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
GANESHA = inventory_hosts("nfs_ganesha")[0]
VOLUME = "gv0"
testinfra_hosts = [SERVER]


def server():
    return get_host(SERVER)


def all_workers_idle():
    return value('hpclab_slurm_nodes{state="idle"}') == float(len(WORKERS))


SHOW_EXPORTS = ("dbus-send --system --print-reply --reply-timeout=60000 --dest=org.ganesha.nfsd /org/ganesha/nfsd/ExportMgr "
                "org.ganesha.nfsd.exportmgr.ShowExports")


# --- configuration ---------------------------------------------------------------------------------


def test_prometheus_and_alertmanager_running_and_enabled():
    assert_units_running(SERVER, SERVER_UNITS)


@pytest.mark.parametrize("node", NODES)
def test_node_exporter_and_collectors_timer_running(node):
    assert_units_running(node, NODE_UNITS)


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


@pytest.mark.parametrize("node", NODES)
def test_never_started_with_the_packages_configuration(node):
    """The packages are installed with policy_rc_d 101 (tasks/install.yml, exporter_install.yml): Debian's would start
    each daemon at once on every interface without a login. Every start in the node's journal listened on the cluster
    address: not one ran with its package's configuration."""
    host = get_host(node)
    units = ["prometheus-node-exporter"] + (["prometheus", "prometheus-alertmanager"] if node == SERVER else [])
    for unit in units:
        log = host.check_output(f"journalctl -u {unit} -o cat --no-pager")
        lines = [line for line in log.splitlines() if 'msg="Listening on"' in line or "Start listening" in line]
        assert lines, f"{unit} on {node} logged no address it listens on:\n{log[-2000:]}"
        wild = [line for line in lines if "address=[::]:" in line or "address=0.0.0.0:" in line]
        assert not wild, f"{unit} on {node} listened on every interface: {wild}"


def test_every_endpoint_asks_for_the_password():
    """Prometheus, Alertmanager and every node_exporter answer 401 without the role's user and password, and with a
    wrong one; the web configuration and the kept password are readable by root and the prometheus group only."""
    addresses = [listen_address(), listen_address(default_file="/etc/default/prometheus-alertmanager")]
    addresses += [listen_address(node, "/etc/default/prometheus-node-exporter") for node in NODES]
    for address in addresses:
        for path in ("/metrics", "/-/ready", "/api/v1/targets"):
            assert http_status(SERVER, f"http://{address}{path}") == "401", address + path
        assert http_status(SERVER, f"http://{address}/metrics", f"{USERNAME}:wrong-password-0123456789") == "401", address
    for node in NODES:
        web = get_host(node).file("/etc/hpclab-monitoring/web.yml")
        assert (web.user, web.group, web.mode) == ("root", "prometheus", 0o640), node
        assert "$2b$10$" in get_host(node).check_output("cat /etc/hpclab-monitoring/web.yml")
    kept = get_host(SERVER).file(PASSWORD_FILE)
    assert (kept.user, kept.group, kept.mode) == ("root", "prometheus", 0o640)
    assert len(kept.content_string.strip()) == 32  # generated: the scenario gives none


def test_secrets_are_not_world_readable():
    """alertmanager.yml may hold receivers' passwords: Alertmanager's user reads it, no one else. The MUNGE credential
    the controller shares on the volume is root's to read, and it is nobody's credential, decodable by root only."""
    config = server().file("/etc/prometheus/alertmanager.yml")
    assert (config.user, config.group, config.mode) == ("root", "prometheus", 0o640)
    controller = get_host(CONTROLLER)
    shared = "/gfsv/.hpclab-munge-credential"
    wait_for(lambda: controller.file(shared).exists, 120, "the controller's shared credential")
    credential = controller.file(shared)
    assert (credential.user, credential.mode) == ("root", 0o600)
    decoded = controller.run(f"unmunge < {shared}")
    assert decoded.rc in (0, 17), decoded.stderr  # 17: replayed, already decoded here by the collector
    assert "UID:" in decoded.stdout and "nobody" in decoded.stdout.split("UID:")[1].splitlines()[0], decoded.stdout
    as_user = controller.run(f"cat {shared} | setpriv --reuid=nobody --regid=nogroup --clear-groups unmunge")
    assert as_user.rc != 0


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
    """What an admin reads on a healthy cluster: 3 idle Slurm nodes, 3 bricks online, 0 heal entries, the NFS
    export answering, MUNGE ok."""
    checks = {
        'hpclab_slurm_nodes{state="idle"}': [float(len(WORKERS))],
        "hpclab_slurm_controller_up": [1.0],
        'sum(hpclab_slurm_nodes{state!="idle"})': [0.0],
        f'hpclab_gluster_volume_bricks_online{{volume="{VOLUME}"}}': [3.0] * len(BRICK_NODES),
        f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})': [0.0],
        f'max(hpclab_gluster_split_brain_entries{{volume="{VOLUME}"}})': [0.0],
        "min(hpclab_gluster_peer_connected)": [1.0],
        f'hpclab_service_up{{unit="nfs-ganesha",host="{GANESHA}"}}': [1.0],
        f'hpclab_nfs_export_up{{server="{GANESHA}",export="/{VOLUME}"}}': [1.0],
        "hpclab_munge_up": [1.0] * len(NODES),
        'hpclab_munge_credential_ok{source="local"}': [1.0] * len(NODES),
        'hpclab_munge_credential_ok{source="controller"}': [1.0] * len(NODES),
        "min(hpclab_collector_success)": [1.0],
    }

    def healthy():
        return all(sorted(v for _l, v in query(expr)) == want for expr, want in checks.items())

    wait_for(healthy, 120, "healthy values " + ", ".join(checks))
    assert alerts() == []


# A run that changes nothing restarts none of the monitoring daemons: test_slurm_native.py's no-change run of the
# whole converge (monitoring included) checks them with the other layers' daemons.


# --- real faults ----------------------------------------------------------------------------------


def test_fault_slurmd_stopped_fires_node_down_and_resolves():
    worker = get_host(WORKERS[0])
    node = WORKERS[0]
    since, start = len(mails()), time.monotonic()
    worker.check_output("systemctl stop slurmd")
    try:
        follow_fault("slurmd stopped", "SlurmNodeDown", {"node": node})
        mail = follow_mail("slurmd stopped", "FIRING", node, since, start)
        assert "SlurmNodeDown" in mail["subject"] and "systemctl status slurmd munge" in mail["body"], mail
    finally:
        worker.check_output("systemctl start slurmd")
    repaired = time.monotonic()
    follow_repair("slurmd stopped", "SlurmNodeDown", {"node": node})
    follow_mail("slurmd stopped", "RESOLVED", node, since, repaired, timeout=300)
    wait_for(all_workers_idle, 120, "every worker idle again")


def brick_pid(host_name: str) -> str:
    root = gluster_xml(server(), "volume", "status", VOLUME)
    for node in root.iter("node"):
        if node.findtext("hostname") == host_name and node.findtext("path", "").startswith("/"):
            return node.findtext("pid")
    pytest.fail(f"no brick of {host_name} in volume status")


def test_fault_brick_killed_fires_brick_offline_and_heal_pending_then_resolves():
    victim = WORKERS[0]
    brick = next(b.findtext("name") for b in gluster_xml(server(), "volume", "info", VOLUME).iter("brick") if b.findtext("name").startswith(f"{victim}:"))
    since, start = len(mails()), time.monotonic()
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
        mail = follow_mail("brick killed", "FIRING", victim, since, start)
        assert "GlusterBrickOffline" in mail["subject"] and f"gluster volume status {VOLUME}" in mail["body"], mail
        took = wait_for(lambda: (write_some(), (value(f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})') or 0) > 0)[1],
                        120, "heal entries pending while writes go on")
        pending = value(f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})')
        print(f"brick killed: {pending:.0f} heal entries pending, {took:.1f} s after the alert fired")
        follow_fault("brick killed (heal)", "GlusterHealPending", {"volume": VOLUME})
    finally:
        # The repair the alert's description gives: restart the brick process, then heal. glusterd refuses a
        # command while another holds its lock (the collectors' `volume status` every 5 s): try again, as an admin would.
        wait_for(lambda: host.run(f"gluster --mode=script volume start {VOLUME} force").rc == 0, 60, "volume start force accepted", interval=1)
        host.run(f"gluster --mode=script volume heal {VOLUME}")
    follow_repair("brick killed", "GlusterBrickOffline", {"volume": VOLUME, "brick": brick})
    follow_repair("brick killed (heal)", "GlusterHealPending", {"volume": VOLUME}, timeout=300)
    assert value(f'max(hpclab_gluster_heal_pending_entries{{volume="{VOLUME}"}})') == 0.0
    host.check_output("rm -rf /gfsv/montest")


def test_fault_ganesha_stopped_fires_ganesha_down_and_export_not_answering_then_resolves():
    host = get_host(GANESHA)
    since, start = len(mails()), time.monotonic()
    host.check_output("systemctl stop nfs-ganesha")
    try:
        follow_fault("NFS-Ganesha stopped", "NfsGaneshaDown", {"host": GANESHA})
        mail = follow_mail("NFS-Ganesha stopped", "FIRING", GANESHA, since, start)
        assert "NfsGaneshaDown" in mail["subject"], mail
        follow_fault("NFS-Ganesha stopped (export)", "NfsExportNotAnswering", {"server": GANESHA, "export": f"/{VOLUME}"})
    finally:
        host.check_output("systemctl start nfs-ganesha")
    repaired = time.monotonic()
    follow_repair("NFS-Ganesha stopped", "NfsGaneshaDown", {"host": GANESHA})
    follow_repair("NFS-Ganesha stopped (export)", "NfsExportNotAnswering", {"server": GANESHA, "export": f"/{VOLUME}"})
    # Told resolved, the node's group is gone: the next test's first mail is not held back by group_interval.
    follow_mail("NFS-Ganesha stopped", "RESOLVED", GANESHA, since, repaired, timeout=300)


def test_fault_export_dropped_fires_export_not_answering_mails_and_resolves():
    """Ganesha runs on but no longer serves the volume (its export removed over D-Bus, as after a start before the
    volume was up): NfsExportNotAnswering (the role's default for:, 60 s) is mailed naming the server; restarted, as
    the alert's first check leads to, the export answers and the resolved mail follows."""
    host = get_host(GANESHA)
    labels = {"server": GANESHA, "export": f"/{VOLUME}"}
    assert not firing_about(GANESHA), alerts()
    since, start = len(mails()), time.monotonic()
    host.check_output(f"{SHOW_EXPORTS.replace('ShowExports', 'RemoveExport')} uint16:1")
    try:
        assert f'"/{VOLUME}"' not in host.check_output(SHOW_EXPORTS)
        follow_fault("NFS export dropped", "NfsExportNotAnswering", labels)
        mail = follow_mail("NFS export dropped", "FIRING", GANESHA, since, start)
        assert "NfsExportNotAnswering" in mail["subject"] and f"nfs://{GANESHA}/{VOLUME}" in mail["body"], mail
    finally:
        host.check_output("systemctl restart nfs-ganesha")
    repaired = time.monotonic()
    follow_repair("NFS export dropped", "NfsExportNotAnswering", labels)
    follow_mail("NFS export dropped", "RESOLVED", GANESHA, since, repaired, timeout=300)


def firing_about(host: str) -> list:
    return [a for a in alerts() if a.get("host") == host]


def test_fault_munged_stopped_fires_munge_down_and_resolves():
    victim = WORKERS[-1]
    host = get_host(victim)
    since, start = len(mails()), time.monotonic()
    host.check_output("systemctl stop munge")
    try:
        follow_fault("munged stopped", "MungeDown", {"host": victim})
        mail = follow_mail("munged stopped", "FIRING", victim, since, start)
        assert "MungeDown" in mail["subject"] or "MungeCredentialFailing" in mail["subject"], mail
        follow_fault("munged stopped (credential)", "MungeCredentialFailing", {"host": victim, "source": "controller"})
    finally:
        host.check_output("systemctl start munge")
    follow_repair("munged stopped", "MungeDown", {"host": victim})
    follow_repair("munged stopped (credential)", "MungeCredentialFailing", {"host": victim, "source": "controller"})
    # Its slurmd could not authenticate meanwhile: the cluster is back when every worker is idle.
    wait_for(all_workers_idle, 180, "every worker idle again")
    wait_for(lambda: alerts() == [], 180, "no alert left")


# Powered off and on this many times, FLAP_SECONDS off and FLAP_SECONDS on each time.
FLAPS, FLAP_SECONDS = 3, 30


def test_a_flapping_node_sends_no_storm_of_mails():
    """A worker's node container stopped (docker stop -t 0: its power) and started again three times, 30 s each way:
    each time its alerts fire (TargetDown, for: 15s here, and while it comes back its Slurm and brick alerts) and
    resolve. Alertmanager sends at most one mail per group_interval (2 min) for each of the node's two groups
    (TargetDown's own, and its other alerts): within the 3 minutes of flapping and 30 s after, at most 4 mails name the
    node (one per alert and per resolution would be 6 for TargetDown alone), at least one. The node then comes back
    idle."""
    victim = WORKERS[1]
    assert not firing_about(victim), alerts()
    since, start = len(mails()), time.monotonic()
    try:
        for _flap in range(FLAPS):
            subprocess.run(["docker", "stop", "-t", "0", victim], check=True, capture_output=True)
            time.sleep(FLAP_SECONDS)
            subprocess.run(["docker", "start", victim], check=True, capture_output=True)
            time.sleep(FLAP_SECONDS)
    finally:
        subprocess.run(["docker", "start", victim], check=False, capture_output=True)
    time.sleep(30)
    about = [m["subject"] for m in mails()[since:] if f"] {victim}:" in m["subject"]]
    print(f"flapping node: {len(about)} mails about {victim} in {time.monotonic() - start:.0f} s: {about}")
    assert 1 <= len(about) <= 4, about
    wait_for(all_workers_idle, 240, "every worker idle again")
    wait_for(lambda: not firing_about(victim), 240, f"no alert about {victim} left")


# --- bad input -------------------------------------------------------------------------------------


def test_bad_input_fails_before_any_change_naming_host_variable_and_fix():
    """An empty monitoring group, a retention Prometheus would refuse, a port of slurmd and a password too short, in
    one run: every node's preflight names all four (never the password), and nothing changes (the exporters still
    listen where they did)."""
    exporter = listen_address(SERVER, "/etc/default/prometheus-node-exporter")
    run = run_playbook("monitoring_only.yml", extra_vars={
        "monitoring_group": "no_such_group", "monitoring_prometheus_retention": "15days", "monitoring_node_exporter_port": 6818,
        "monitoring_web_password": "tooShort-QX9"})
    assert run.rc != 0 and run.total_changed == 0, run
    for node in NODES:
        assert f"{node}: the inventory group 'no_such_group' (variable monitoring_group) has no host" in run.output, run
    assert "Fix: add the monitoring host (the controller in the reference design) to the group 'no_such_group'" in run.output, run
    assert f"{SERVER}: monitoring_prometheus_retention '15days' is not a non-zero duration Prometheus accepts" in run.output, run
    assert "Fix: write e.g. '15d'" in run.output, run
    assert "monitoring_node_exporter_port 6818 is the port of slurmd (slurm_worker) in this collection" in run.output, run
    assert "Fix: choose a free port" in run.output, run
    assert f"{SERVER}: monitoring_web_password (value not shown) is shorter than 16 characters" in run.output, run
    assert "tooShort-QX9" not in run.output, run
    assert get_host(SERVER).socket(f"tcp://{exporter}").is_listening
    assert listen_address(SERVER, "/etc/default/prometheus-node-exporter") == exporter


# A run limited by --tags to one step of the monitoring role checks first and keeps every node in Prometheus'
# configuration. Before, the exporters' entry point was included untagged: under --tags monitoring_configure no node
# published its scrape target, and the server's configure step was given none.
@pytest.mark.parametrize("tags", ["monitoring_configure", "monitoring_install", "monitoring_service"])
def test_a_run_limited_by_tags_to_one_step_keeps_every_target_and_changes_nothing(tags):
    config = server().file("/etc/prometheus/prometheus.yml").sha256sum
    pids = {n: get_host(n).check_output("systemctl show -p MainPID --value prometheus-node-exporter") for n in NODES}
    run = run_playbook("monitoring_only.yml", "--tags", tags)
    assert run.rc == 0 and run.total_changed == 0, run
    assert "preflight | Check the monitoring group" in run.output, run
    assert server().file("/etc/prometheus/prometheus.yml").sha256sum == config
    assert {n: get_host(n).check_output("systemctl show -p MainPID --value prometheus-node-exporter") for n in NODES} == pids
    assert value('count(up{job="node"} == 1)') == float(len(NODES))


def test_bad_input_in_a_run_limited_by_tags_fails_before_any_change():
    config = server().file("/etc/prometheus/prometheus.yml").sha256sum
    run = run_playbook("monitoring_only.yml", "--tags", "monitoring_configure",
                       extra_vars={"monitoring_prometheus_retention": "15days"})
    assert run.rc != 0 and run.total_changed == 0, run
    assert f"{SERVER}: monitoring_prometheus_retention '15days' is not a non-zero duration Prometheus accepts" in run.output, run
    assert server().file("/etc/prometheus/prometheus.yml").sha256sum == config
