"""Monitoring of the reference design: Prometheus and Alertmanager on the controller's node (ctrl1),
node_exporter and the collectors on every node; the Slurm collector runs scontrol and squeue in the
slurmctld container (`docker exec ctrl1`), and cn2's collector has the GPU plan of its planned vLLM model.

Runs after test_accounting.py and test_docker_macvlan_input.py (file order), before test_slurm.py: the
healthy checks wait until the controller container test_accounting.py recreated is seen again. Then a
real fault: cn1's slurmd container stopped, followed until SlurmNodeDown fires in Alertmanager's API
(/api/v2/alerts), started again until the alert has resolved and both workers are idle (as test_slurm.py
expects them); the measured times are printed (pytest -rA shows them in the log)."""

from __future__ import annotations

import json
import shlex

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure
from monitoring_checks import (
    NODE_UNITS, SERVER_UNITS, alerts, assert_units_running, converge_monitoring_twice, firing, follow_fault,
    follow_repair, prometheus, query, value, wait_for,
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


def test_fault_worker_container_stopped_fires_node_down_and_resolves():
    victim = WORKERS[0]
    host = get_host(victim)
    # The slurm_worker role names the slurmd container after its node.
    info = json.loads(host.check_output(f"docker inspect {victim}"))[0]
    assert info["State"]["Running"] and info["Config"]["Cmd"] == ["slurmd", "-D"], info["Config"]
    assert node_state(victim) == "idle" and not firing("SlurmNodeDown")
    host.check_output(f"docker stop {victim}")
    try:
        follow_fault("worker container stopped", "SlurmNodeDown", {"node": victim})
        assert value(f'hpclab_slurm_node_down{{node="{victim}"}}') == 1.0
        assert value(f'hpclab_slurm_node_down{{node="{WORKERS[-1]}"}}') == 0.0  # the other worker goes on
        assert not firing("SlurmNodeDown", node=WORKERS[-1])
        print(f"worker container stopped: sinfo shows {victim} {node_state(victim)}")
    finally:
        host.check_output(f"docker start {victim}")
    follow_repair("worker container stopped", "SlurmNodeDown", {"node": victim})
    # Back as test_slurm.py (next file) expects the cluster: both workers idle, nothing else alerted.
    wait_for(lambda: value('hpclab_slurm_nodes{state="idle"}') == 2.0, 120, "both workers idle again")
    wait_for(lambda: node_state(victim) == "idle", 60, f"sinfo shows {victim} idle")
    wait_for(lambda: active_alerts() == EXPECTED_ALERTS, 120, f"only {EXPECTED_ALERTS} active again")
