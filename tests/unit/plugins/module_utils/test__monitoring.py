"""The monitoring collectors' pure code (plugins/module_utils/_monitoring.py) on real captured output:
Slurm 22.05.8 (tests/unit/fixtures/slurm, parsed by _slurm as the collector does), GlusterFS 10.3
(tests/unit/fixtures/gluster, and heal summaries in tests/unit/fixtures/monitoring, see capture.sh there).
The vLLM /metrics fixtures (tests/unit/fixtures/vllm) are the exception: written by hand, NOT captured from a running
vLLM server, and no test here or in tests/gpu reads a real server's /metrics (see the README there)."""

from __future__ import annotations

import json
import math

import pytest

from ansible_collections.hpclab.cluster.plugins.module_utils import _gluster as g
from ansible_collections.hpclab.cluster.plugins.module_utils import _monitoring as m
from ansible_collections.hpclab.cluster.plugins.module_utils import _slurm as s


def slurm_nodes(fixture_text, name):
    return s.parse_show_node(json.loads(fixture_text("slurm", f"show_node_{name}.json"))["stdout"])


def parse_exposition(text):
    """{(name, frozenset(labels)): value} of the text format, as a reader would see it (no escapes in the fixtures)."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, value = line.rsplit(" ", 1)
        name, _brace, rest = head.partition("{")
        labels = frozenset(tuple(kv.split("=", 1)) for kv in rest.rstrip("}").split('",') if kv) if rest else frozenset()
        labels = frozenset((k, v.strip('"')) for k, v in labels)
        samples[(name, labels)] = float(value)
    return samples


# --- exposition format -------------------------------------------------------------------------


def test_render_escapes_labels_and_help():
    metrics = m.Metrics()
    metrics.add("hpclab_x", 'help with \\ and\nnewline')
    metrics.sample("hpclab_x", {"reason": 'say "hi"\\\nnow'}, 1)
    assert metrics.render() == (
        "# HELP hpclab_x help with \\\\ and\\nnewline\n# TYPE hpclab_x gauge\n" 'hpclab_x{reason="say \\"hi\\"\\\\\\nnow"} 1\n'
    )


@pytest.mark.parametrize(
    "value,text",
    [(True, "1"), (False, "0"), (None, "NaN"), (3, "3"), (2.5, "2.5"), (float("inf"), "+Inf"), (float("-inf"), "-Inf"), (math.nan, "NaN"), (1e20, "1e+20")],
)
def test_format_value(value, text):
    assert m.format_value(value) == text


@pytest.mark.parametrize("name", ["9bad", "has-dash", ""])
def test_bad_metric_name_raises(name):
    with pytest.raises(ValueError, match="not a metric name"):
        m.Metrics().add(name, "x")


@pytest.mark.parametrize("label", ["__reserved", "a-b", "1a"])
def test_bad_label_name_raises(label):
    metrics = m.Metrics()
    metrics.add("hpclab_x", "x")
    with pytest.raises(ValueError, match="not a label name"):
        metrics.sample("hpclab_x", {label: "v"}, 1)


def test_empty_metrics_render_nothing():
    assert m.Metrics().render() == ""


# --- Slurm ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,up",
    [
        ("Slurmctld(primary) at slurmctl1 is UP\n", True),
        ("Slurmctld(primary) at slurmctl1 is DOWN\n", False),
        ("Slurmctld(primary) at c1 is DOWN\nSlurmctld(backup) at c2 is UP\n", True),
        ("", False),
    ],
)
def test_parse_ping(text, up):
    assert m.parse_ping(text) is up


def test_parse_squeue_partitions_counts_each_partition_of_a_pending_job():
    text = "batch|RUNNING\nbatch|PENDING\nbatch,gpu|PENDING\n\ngarbage\n"
    assert m.parse_squeue_partitions(text) == {("batch", "RUNNING"): 1, ("batch", "PENDING"): 2, ("gpu", "PENDING"): 1}


def test_idle_cluster_counts_two_idle_nodes(fixture_text):
    nodes = slurm_nodes(fixture_text, "idle")
    metrics = m.slurm_metrics(m.Metrics(), nodes, {}, True)
    idle = sum(1 for n in nodes.values() if n["state"] == "IDLE")
    assert metrics.value("hpclab_slurm_nodes", state="idle") == idle == len(nodes)
    assert metrics.value("hpclab_slurm_nodes", state="down") == 0
    assert metrics.value("hpclab_slurm_controller_up") is True
    for name in nodes:
        assert metrics.value("hpclab_slurm_node_down", node=name) is False
        assert metrics.value("hpclab_slurm_node_drained", node=name) is False
    # Every partition appears with 0 jobs rather than not at all.
    assert metrics.value("hpclab_slurm_jobs", partition="batch", state="pending") == 0


def test_not_responding_node_is_down(fixture_text):
    nodes = slurm_nodes(fixture_text, "not_responding")
    metrics = m.slurm_metrics(m.Metrics(), nodes, {}, True)
    flagged = [n for n, node in nodes.items() if "NOT_RESPONDING" in node["flags"]]
    assert flagged
    for name in flagged:
        assert metrics.value("hpclab_slurm_node_down", node=name) is True
    assert metrics.value("hpclab_slurm_nodes", state="not_responding") + metrics.value("hpclab_slurm_nodes", state="down") == len(flagged)


def test_drained_node_with_reason(fixture_text):
    nodes = slurm_nodes(fixture_text, "drained")
    metrics = m.slurm_metrics(m.Metrics(), nodes, {}, True)
    drained = {n: node for n, node in nodes.items() if "DRAIN" in node["flags"]}
    assert drained
    for name, node in drained.items():
        assert metrics.value("hpclab_slurm_node_drained", node=name) is True
        assert metrics.value("hpclab_slurm_node_info", node=name, state="drained", reason=node["reason"]) == 1
        assert node["reason"]
    assert metrics.value("hpclab_slurm_nodes", state="drained") == len(drained)


def test_down_and_drained_counts_once_as_down(fixture_text):
    """slurmd1 is DOWN+DRAIN+NOT_RESPONDING (scontrol: DRAINED, base DOWN), slurmd2 IDLE: one down, none drained."""
    nodes = slurm_nodes(fixture_text, "down_drain")
    assert sorted(nodes) == ["slurmd1", "slurmd2"]
    metrics = m.slurm_metrics(m.Metrics(), nodes, {}, True)
    counts = {state: metrics.value("hpclab_slurm_nodes", state=state) for state in m.SLURM_STATES}
    assert counts == {**dict.fromkeys(m.SLURM_STATES, 0), "down": 1, "idle": 1}
    assert metrics.value("hpclab_slurm_node_down", node="slurmd1") is True
    assert metrics.value("hpclab_slurm_node_down", node="slurmd2") is False
    # The per-node gauge still says drained: the bucket counts it once, as down.
    assert metrics.value("hpclab_slurm_node_drained", node="slurmd1") is True


def test_jobs_per_partition(fixture_text):
    nodes = slurm_nodes(fixture_text, "alloc_mixed")
    metrics = m.slurm_metrics(m.Metrics(), nodes, {("batch", "RUNNING"): 2, ("batch", "PENDING"): 1, ("debug", "PENDING"): 4}, True)
    assert metrics.value("hpclab_slurm_jobs", partition="batch", state="running") == 2
    assert metrics.value("hpclab_slurm_jobs", partition="batch", state="pending") == 1
    assert metrics.value("hpclab_slurm_jobs", partition="debug", state="pending") == 4
    assert metrics.value("hpclab_slurm_jobs", partition="debug", state="running") == 0


def test_controller_down_writes_only_that():
    text = m.slurm_metrics(m.Metrics(), None, None, False).render()
    assert parse_exposition(text) == {("hpclab_slurm_controller_up", frozenset()): 0.0}


def test_rendered_slurm_metrics_parse_back(fixture_text):
    nodes = slurm_nodes(fixture_text, "drained")
    samples = parse_exposition(m.slurm_metrics(m.Metrics(), nodes, {}, True).render())
    assert samples[("hpclab_slurm_controller_up", frozenset())] == 1.0


# --- GlusterFS -----------------------------------------------------------------------------------


def test_brick_down_from_real_volume_status(fixture_text):
    volumes = g.parse_volume_info(fixture_text("gluster", "volume_info_replicate.xml"))
    status = g.parse_volume_status(fixture_text("gluster", "volume_status_brick_down.xml"))
    offline = {name: g.offline_bricks(volume, status) for name, volume in volumes.items()}
    metrics = m.gluster_metrics(m.Metrics(), volumes, offline, {}, [])
    name, volume = next(iter(volumes.items()))
    assert len(volumes) == 1
    assert metrics.value("hpclab_gluster_volume_bricks", volume=name) == len(volume["bricks"]) == 3
    assert metrics.value("hpclab_gluster_volume_bricks_online", volume=name) == 2
    down = offline[name]
    assert len(down) == 1
    assert metrics.value("hpclab_gluster_brick_online", volume=name, brick=down[0]) is False


def test_all_bricks_online(fixture_text):
    volumes = g.parse_volume_info(fixture_text("gluster", "volume_info_replicate.xml"))
    metrics = m.gluster_metrics(m.Metrics(), volumes, {n: [] for n in volumes}, {}, [])
    for name, volume in volumes.items():
        assert metrics.value("hpclab_gluster_volume_bricks_online", volume=name) == 3
        assert metrics.value("hpclab_gluster_volume_started", volume=name) is True


def test_stopped_volume_has_no_brick_online(fixture_text):
    volumes = g.parse_volume_info(fixture_text("gluster", "volume_info_stopped.xml"))
    metrics = m.gluster_metrics(m.Metrics(), volumes, {}, {}, None)
    for name in volumes:
        assert metrics.value("hpclab_gluster_volume_started", volume=name) is False
        assert metrics.value("hpclab_gluster_volume_bricks_online", volume=name) == 0


def test_peers(fixture_text):
    peers = g.parse_peer_status(fixture_text("gluster", "peer_status_disconnected.xml"))
    metrics = m.gluster_metrics(m.Metrics(), {}, {}, {}, peers)
    values = {p["hostname"]: metrics.value("hpclab_gluster_peer_connected", peer=p["hostname"]) for p in peers}
    assert False in values.values()
    peers = g.parse_peer_status(fixture_text("gluster", "peer_status_connected.xml"))
    metrics = m.gluster_metrics(m.Metrics(), {}, {}, {}, peers)
    assert all(metrics.value("hpclab_gluster_peer_connected", peer=p["hostname"]) for p in peers)


def test_glusterd_down_writes_only_that():
    text = m.gluster_metrics(m.Metrics(), None, None, None, None).render()
    assert parse_exposition(text) == {("hpclab_gluster_up", frozenset()): 0.0}


def test_heal_summary_healthy(fixture_text):
    heal = m.parse_heal_summary(g.parse_xml(fixture_text("monitoring", "heal_summary_healthy.xml")))
    assert len(heal) == 3
    assert all(b["connected"] and b["pending"] == 0 and b["split_brain"] == 0 for b in heal.values())


def test_heal_summary_brick_down_with_pending_entries(fixture_text):
    heal = m.parse_heal_summary(g.parse_xml(fixture_text("monitoring", "heal_summary_brick_down.xml")))
    down = [b for b, v in heal.items() if not v["connected"]]
    assert len(down) == 1 and heal[down[0]]["pending"] is None
    assert max(v["pending"] or 0 for v in heal.values()) > 0
    volumes = {"gv0": {"name": "gv0", "status": "started", "bricks": list(heal)}}
    metrics = m.gluster_metrics(m.Metrics(), volumes, {"gv0": down}, {"gv0": heal}, [])
    assert metrics.value("hpclab_gluster_heal_brick_connected", volume="gv0", brick=down[0]) is False
    # A brick glfsheal did not reach has no count rather than a false 0.
    assert metrics.value("hpclab_gluster_heal_pending_entries", volume="gv0", brick=down[0]) is None


def test_heal_summary_skips_bricks_without_name():
    import xml.etree.ElementTree as ET

    root = ET.fromstring("<cliOutput><healInfo><bricks><brick><status>Connected</status></brick></bricks></healInfo></cliOutput>")
    assert m.parse_heal_summary(root) == {}


# --- MUNGE, units, NFS, LLM ----------------------------------------------------------------------


def test_munge_metrics():
    metrics = m.munge_metrics(m.Metrics(), False, False, True)
    assert metrics.value("hpclab_munge_up") is False
    assert metrics.value("hpclab_munge_credential_ok", source="local") is False
    assert metrics.value("hpclab_munge_credential_ok", source="controller") is True
    assert m.munge_metrics(m.Metrics(), True, True).value("hpclab_munge_credential_ok", source="controller") is None


def test_unit_metrics():
    metrics = m.unit_metrics(m.Metrics(), {"nfs-ganesha": "active\n", "other": "failed"})
    assert metrics.value("hpclab_service_up", unit="nfs-ganesha") is True
    assert metrics.value("hpclab_service_up", unit="other") is False


def test_nfs_export_metrics():
    metrics = m.nfs_export_metrics(m.Metrics(), [{"server": "nfs1", "export": "/gv0", "ok": False, "seconds": 0.5}])
    assert metrics.value("hpclab_nfs_export_up", server="nfs1", export="/gv0") is False


@pytest.mark.parametrize("engine,path", [("vllm", "/health"), ("llama_cpp", "/v1/models")])
def test_health_path(engine, path):
    assert m.health_path(engine) == path


def test_parse_nvidia_smi():
    text = "0, GPU-aaa, 70000, 81920\n1, GPU-bbb, 512, 81920\nNo devices were found\n"
    gpus = m.parse_nvidia_smi(text)
    assert [g_["index"] for g_ in gpus] == [0, 1]
    assert gpus[0]["used_bytes"] == 70000 * 1048576


def test_llm_metrics_with_plan():
    models = [{"name": "tiny", "port": 8101, "engine": "llama_cpp", "ok": True, "seconds": 0.01}]
    gpus = [{"index": 0, "uuid": "GPU-a", "used_bytes": 1.0, "total_bytes": 2.0}]
    metrics = m.llm_metrics(m.Metrics(), models, gpus, {0: 70.5})
    assert metrics.value("hpclab_llm_model_up", model="tiny", port="8101", engine="llama_cpp") is True
    assert metrics.value("hpclab_gpu_memory_planned_bytes", gpu="0") == 70.5 * 1073741824
    assert "hpclab_gpu_memory_used_bytes" not in m.llm_metrics(m.Metrics(), models, None).families


def test_collector_status():
    metrics = m.Metrics()
    m.collector_status(metrics, "slurm", False, 12.0, "boom")
    assert metrics.value("hpclab_collector_success", collector="slurm", error="boom") is False


@pytest.mark.parametrize("text", ['{"collectors": "slurm"}', "[]"])
def test_load_config_refuses_bad_shapes(text):
    with pytest.raises(ValueError, match="collectors"):
        m.load_config(text)


@pytest.mark.parametrize(
    "case,decoded",
    [
        ("decoded", True),
        ("replayed", True),
        ("garbage", False),
        # The controller's shared credential (nobody's, decodable by root only), read by a collector (root).
        ("restricted_decoded", True),
        ("restricted_replayed", True),
        # Anyone else who reads it gets nothing, and a node with another key still reports the mismatch.
        ("restricted_other_user", False),
        ("key_mismatch", False),
    ],
)
def test_credential_decoded_on_real_unmunge_output(fixture_text, case, decoded):
    """A credential decoded before on this node comes back "Replayed" (rc 17) with its metadata: munged
    checks for replay only once the credential decoded with the key, so it counts as decoded."""
    result = json.loads(fixture_text("monitoring", "unmunge.json"))[case]
    assert m.credential_decoded(result["rc"], result["output"]) is decoded


def test_shared_credential_fixture_is_nobodys_and_root_only(fixture_text):
    """The fixture is what controller_credential_argv's credential decodes to (tests/unit/monitoring)."""
    output = json.loads(fixture_text("monitoring", "unmunge.json"))["restricted_decoded"]["output"]
    assert "UID:             nobody (65534)" in output
    assert "UID_RESTRICTION: root (0)" in output


@pytest.mark.parametrize("rc,text", [(17, ""), (6, "unmunge: Error: Failed to access socket"), (15, "STATUS: Expired credential (15)")])
def test_credential_not_decoded(rc, text):
    assert m.credential_decoded(rc, text) is False


# The vLLM fixtures below were NOT captured from a running server: metrics-v1.txt and metrics-v0.txt are written by
# hand in the shape of vLLM's metric definitions and of outputs users pasted (tests/unit/fixtures/vllm/README.md names
# them). They prove the parser on that shape only, not on what a given vLLM release serves.


def test_parse_vllm_metrics_v1_names(fixture_text):
    """Hand-written fixture, not captured (see above): V1 names, engine and model_name labels."""
    values = m.parse_vllm_metrics(fixture_text("vllm", "metrics-v1.txt"))
    assert values == {"vllm_requests_running": 3.0, "vllm_requests_waiting": 1.0, "vllm_kv_cache_usage_ratio": 0.4375}


def test_parse_vllm_metrics_v0_cache_name(fixture_text):
    """Hand-written fixture, not captured (see above): the older KV cache gauge name, model_name label only."""
    assert m.parse_vllm_metrics(fixture_text("vllm", "metrics-v0.txt"))["vllm_kv_cache_usage_ratio"] == 0.05


def test_parse_vllm_metrics_ignores_garbage():
    assert m.parse_vllm_metrics("vllm:num_requests_running{} NaNx\n<html>\n") == {}
    assert m.parse_vllm_metrics("") == {}


def test_parse_vllm_metrics_counts_the_kv_cache_once_when_both_names_are_served():
    """Hand-written input, not captured: vLLM's v1 metrics logger sets both gauges to the same kv_cache_usage while the
    deprecated name is shown (tests/unit/fixtures/vllm/README.md)."""
    text = (
        'vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.25\n'
        'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25\n'
    )
    assert m.parse_vllm_metrics(text)["vllm_kv_cache_usage_ratio"] == 0.25
    # The newer name's value where they differ (they do not on a real server: the order must not matter).
    older_differs = text.replace('gpu_cache_usage_perc{engine="0",model_name="m"} 0.25', 'gpu_cache_usage_perc{engine="0",model_name="m"} 0.5')
    assert older_differs != text
    assert m.parse_vllm_metrics(older_differs)["vllm_kv_cache_usage_ratio"] == 0.25


def test_parse_vllm_metrics_gives_the_fullest_engines_kv_cache_and_the_sum_of_requests():
    """Hand-written input, not captured: two data-parallel engines of one server, one sample each."""
    text = (
        'vllm:num_requests_running{engine="0",model_name="m"} 2\n'
        'vllm:num_requests_running{engine="1",model_name="m"} 3\n'
        'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.75\n'
        'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5\n'
    )
    assert m.parse_vllm_metrics(text) == {"vllm_requests_running": 5.0, "vllm_kv_cache_usage_ratio": 0.75}


def test_llm_metrics_relay_vllm_gauges_per_model(fixture_text):
    """On the hand-written metrics-v1.txt, not a captured one (see above)."""
    models = [
        {"name": "llama-3-8b", "port": 8000, "engine": "vllm", "ok": True, "seconds": 0.01,
         "vllm": m.parse_vllm_metrics(fixture_text("vllm", "metrics-v1.txt"))},
        {"name": "down", "port": 8001, "engine": "vllm", "ok": False, "seconds": 0.01},
    ]
    metrics = m.llm_metrics(m.Metrics(), models)
    assert metrics.value("hpclab_vllm_requests_running", model="llama-3-8b", port="8000") == 3.0
    assert metrics.value("hpclab_vllm_kv_cache_usage_ratio", model="llama-3-8b", port="8000") == 0.4375
    assert metrics.value("hpclab_vllm_requests_running", model="down", port="8001") is None
    assert "# TYPE hpclab_vllm_requests_waiting gauge" in metrics.render()
