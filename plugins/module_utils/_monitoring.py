# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers of the monitoring role's collectors: turn what the cluster's CLIs print (already parsed
by ``_slurm`` and ``_gluster`` where those parse it) into Prometheus samples, and write them in the text
exposition format that node_exporter's textfile collector reads.

Nothing here runs a command or imports another file of the collection (write_atomically is its one writer): the monitoring role copies this
file, ``_slurm.py`` and ``_gluster.py`` next to its collector script (``hpclab-metrics``) on every node,
so the parse code that the unit tests cover is the code that runs there. Standard library only.

Text format: https://prometheus.io/docs/instrumenting/exposition_formats/ (label values escape
backslash, double quote and line feed; HELP text escapes backslash and line feed).

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile

# Every metric this file writes starts with this prefix.
PREFIX = "hpclab_"
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*\Z")

# Slurm states counted by hpclab_slurm_nodes (sinfo's names, lower case): always written, 0 when no
# node is in them, so that "2 idle nodes" is a plain comparison.
SLURM_STATES = ("idle", "allocated", "mixed", "drained", "draining", "down", "not_responding", "fail", "inval", "other")
# squeue's %T names of the job states counted per partition.
SLURM_JOB_STATES = ("PENDING", "RUNNING")


class Metrics:
    """An ordered set of metric families: ``add(name, help, type)`` then ``sample(name, labels, value)``."""

    def __init__(self):
        self.families = {}

    def add(self, name: str, help_text: str, kind: str = "gauge") -> None:
        if not _METRIC_NAME.match(name):
            raise ValueError(f"not a metric name: {name!r}")
        if kind not in ("gauge", "counter", "untyped"):
            raise ValueError(f"not a metric type: {kind!r}")
        self.families.setdefault(name, {"help": help_text, "type": kind, "samples": []})

    def sample(self, name: str, labels: dict | None, value) -> None:
        for key in labels or {}:
            if not _LABEL_NAME.match(key) or key.startswith("__"):
                raise ValueError(f"not a label name: {key!r}")
        self.families[name]["samples"].append((dict(labels or {}), value))

    def value(self, name: str, **labels):
        """The value of the sample with exactly these labels (tests and the collector's own checks)."""
        for sample_labels, value in self.families.get(name, {}).get("samples", []):
            if sample_labels == labels:
                return value
        return None

    def render(self) -> str:
        """The text exposition format, families in the order they were added."""
        lines = []
        for name, family in self.families.items():
            lines.append(f"# HELP {name} {_escape_help(family['help'])}")
            lines.append(f"# TYPE {name} {family['type']}")
            for labels, value in family["samples"]:
                lines.append(f"{name}{_labels(labels)} {format_value(value)}")
        return "\n".join(lines) + "\n" if lines else ""


def write_atomically(path: str, content: str, mode: int = 0o644, gid: int | None = None) -> None:
    """Replace PATH with CONTENT at once (a file written beside it, then renamed over it): node_exporter, nginx or a
    restarted collector never read a half-written file. GID: the file's group (the writer's where None). The one
    function here that touches a file."""
    directory = os.path.dirname(path)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".hpclab-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        if gid is not None:
            os.chown(tmp, -1, gid)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: dict) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape_label(value)}"' for key, value in labels.items()) + "}"


def format_value(value) -> str:
    """A sample value as the text format writes it: bools as 1/0, NaN and infinities by name."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if value is None:
        return "NaN"
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def collector_status(metrics: Metrics, collector: str, ok: bool, now: float, error: str = "") -> None:
    """hpclab_collector_success and, when it succeeded, the time of that success (alert: stale collector)."""
    metrics.add(PREFIX + "collector_success", "1 when the collector read its layer, 0 when it failed (see the error label).")
    metrics.sample(PREFIX + "collector_success", {"collector": collector, "error": error[:200]}, ok)
    metrics.add(PREFIX + "collector_last_run_timestamp_seconds", "When the collector last ran (Unix time).")
    metrics.sample(PREFIX + "collector_last_run_timestamp_seconds", {"collector": collector}, now)


# ------------------------------------------------------------------------------------------------
# Slurm


def parse_ping(text: str) -> bool:
    """``scontrol ping``: ``Slurmctld(primary) at ctl1 is UP`` (one line per controller). True when
    at least one controller is UP (a backup answering is service too)."""
    return any(re.search(r"\bis UP\b", line) for line in (text or "").splitlines())


def parse_squeue_partitions(text: str) -> dict:
    """``squeue --noheader --all --format=%P|%T``: {(partition, state): jobs}. A job submitted to
    several partitions is listed as ``p1,p2`` while pending: it counts in each."""
    counts: dict = {}
    for line in (text or "").splitlines():
        partitions, sep, state = line.strip().partition("|")
        if not sep:
            continue
        for partition in partitions.split(","):
            if partition:
                key = (partition, state.strip().upper())
                counts[key] = counts.get(key, 0) + 1
    return counts


def slurm_node_bucket(node: dict) -> str:
    """The one state a node counts in for hpclab_slurm_nodes (see SLURM_STATES), from a node of
    ``_slurm.parse_show_node``. Unreachable wins over drained: an admin must fix the node first."""
    flags = set(node.get("flags") or [])
    state = (node.get("state") or "").lower()
    if node.get("base") == "DOWN":
        return "down"
    if "NOT_RESPONDING" in flags:
        return "not_responding"
    if state in ("drained", "draining", "fail", "inval", "idle", "allocated", "mixed"):
        return state
    if state == "failing":
        return "fail"
    return "other"


def slurm_metrics(metrics: Metrics, nodes: dict | None, jobs: dict | None, controller_up: bool) -> Metrics:
    """Slurm's samples from ``_slurm.parse_show_node`` (``nodes``), ``parse_squeue_partitions``
    (``jobs``) and ``parse_ping`` (``controller_up``). With the controller down, ``nodes`` and
    ``jobs`` are None and only hpclab_slurm_controller_up is written (0): stale node states would hide
    that nothing is known."""
    metrics.add(PREFIX + "slurm_controller_up", "1 when slurmctld answers scontrol ping.")
    metrics.sample(PREFIX + "slurm_controller_up", {}, controller_up)
    if nodes is None:
        return metrics
    metrics.add(PREFIX + "slurm_nodes", "Slurm nodes in each state (sinfo's state names; down: DOWN, not_responding: slurmd not answering).")
    counts = dict.fromkeys(SLURM_STATES, 0)
    for node in nodes.values():
        counts[slurm_node_bucket(node)] += 1
    for state, count in counts.items():
        metrics.sample(PREFIX + "slurm_nodes", {"state": state}, count)

    metrics.add(PREFIX + "slurm_node_info", "One sample per Slurm node: its state as sinfo shows it and the reason an admin or slurmctld set.")
    metrics.add(PREFIX + "slurm_node_down", "1 when the node is DOWN, FAIL or its slurmd does not answer slurmctld.")
    metrics.add(PREFIX + "slurm_node_drained", "1 when the node is DRAINED or DRAINING (no new jobs).")
    partitions = []
    for name, node in nodes.items():
        flags = set(node.get("flags") or [])
        metrics.sample(PREFIX + "slurm_node_info", {"node": name, "state": (node.get("state") or "").lower(), "reason": node.get("reason") or ""}, 1)
        down = node.get("base") == "DOWN" or bool(flags & {"NOT_RESPONDING", "FAIL"})
        metrics.sample(PREFIX + "slurm_node_down", {"node": name}, down)
        metrics.sample(PREFIX + "slurm_node_drained", {"node": name}, "DRAIN" in flags)
        for partition in node.get("partitions") or []:
            if partition not in partitions:
                partitions.append(partition)

    metrics.add(PREFIX + "slurm_jobs", "Jobs pending and running in each partition.")
    jobs = jobs or {}
    for partition, _state in jobs:
        if partition not in partitions:
            partitions.append(partition)
    for partition in partitions:
        for state in SLURM_JOB_STATES:
            metrics.sample(PREFIX + "slurm_jobs", {"partition": partition, "state": state.lower()}, jobs.get((partition, state), 0))
    return metrics


# ------------------------------------------------------------------------------------------------
# GlusterFS


def _count(element, tag):
    """An entry count of heal info: an integer, or None where glfsheal printed '-' (brick not reached)."""
    found = element.find(tag)
    text = (found.text or "").strip() if found is not None else ""
    return int(text) if text.isdigit() else None


def parse_heal_summary(root) -> dict:
    """``gluster volume heal VOL info summary --xml`` (GlusterFS 10.3 glfsheal), given as the
    ``<cliOutput>`` root that ``_gluster.parse_xml`` returns: {brick: {connected, pending, split_brain,
    possibly_healing, total}}. Counts are None for a brick glfsheal could not reach (its status is then
    the error, e.g. "Transport endpoint is not connected")."""
    bricks = {}
    for element in root.iter("brick"):
        name_el = element.find("name")
        if name_el is None or not (name_el.text or "").strip():
            continue
        status_el = element.find("status")
        status = (status_el.text or "").strip() if status_el is not None else ""
        bricks[name_el.text.strip()] = {
            "connected": status == "Connected",
            "status": status,
            "total": _count(element, "totalNumberOfEntries"),
            "pending": _count(element, "numberOfEntriesInHealPending"),
            "split_brain": _count(element, "numberOfEntriesInSplitBrain"),
            "possibly_healing": _count(element, "numberOfEntriesPossiblyHealing"),
        }
    return bricks


def gluster_metrics(metrics: Metrics, volumes: dict | None, offline: dict | None, heal: dict | None, peers: list | None) -> Metrics:
    """GlusterFS samples from ``_gluster.parse_volume_info`` (``volumes``), {volume: the bricks
    ``_gluster.offline_bricks`` names} (``offline``), {volume: ``parse_heal_summary``} (``heal``) and
    ``_gluster.parse_peer_status`` (``peers``, this node's view of the others). None: not read (glusterd down)."""
    metrics.add(PREFIX + "gluster_up", "1 when glusterd answered the collector on this node.")
    metrics.sample(PREFIX + "gluster_up", {}, volumes is not None)
    if volumes is None:
        return metrics
    metrics.add(PREFIX + "gluster_volume_started", "1 when the volume is started.")
    metrics.add(PREFIX + "gluster_volume_bricks", "Bricks of the volume.")
    metrics.add(PREFIX + "gluster_volume_bricks_online", "Bricks of the volume whose process runs and answers glusterd.")
    metrics.add(PREFIX + "gluster_brick_online", "1 when the brick's process runs (gluster volume status).")
    metrics.add(PREFIX + "gluster_heal_pending_entries", "Entries the self-heal daemon still has to heal onto the other bricks, as this brick sees them.")
    metrics.add(PREFIX + "gluster_split_brain_entries", "Entries in split-brain on this brick: they need an admin (gluster volume heal VOL split-brain ...).")
    metrics.add(PREFIX + "gluster_heal_brick_connected", "1 when glfsheal reached the brick to count its heal entries.")
    for name, volume in volumes.items():
        started = volume.get("status") == "started"
        down = set((offline or {}).get(name, volume["bricks"] if not started else []))
        metrics.sample(PREFIX + "gluster_volume_started", {"volume": name}, started)
        metrics.sample(PREFIX + "gluster_volume_bricks", {"volume": name}, len(volume["bricks"]))
        metrics.sample(PREFIX + "gluster_volume_bricks_online", {"volume": name}, sum(1 for b in volume["bricks"] if b not in down))
        for brick in volume["bricks"]:
            metrics.sample(PREFIX + "gluster_brick_online", {"volume": name, "brick": brick}, brick not in down)
        for brick, counts in ((heal or {}).get(name) or {}).items():
            labels = {"volume": name, "brick": brick}
            metrics.sample(PREFIX + "gluster_heal_brick_connected", labels, counts["connected"])
            if counts["pending"] is not None:
                metrics.sample(PREFIX + "gluster_heal_pending_entries", labels, counts["pending"])
            if counts["split_brain"] is not None:
                metrics.sample(PREFIX + "gluster_split_brain_entries", labels, counts["split_brain"])
    if peers is not None:
        metrics.add(PREFIX + "gluster_peer_connected", "1 when this node's glusterd is connected to the peer and it is in the cluster.")
        for peer in peers:
            metrics.sample(PREFIX + "gluster_peer_connected", {"peer": peer["hostname"]}, bool(peer["connected"]) and peer.get("state") == 3)
    return metrics


# ------------------------------------------------------------------------------------------------
# MUNGE, NFS-Ganesha, systemd units


def munge_metrics(metrics: Metrics, active: bool, credential_ok: bool, controller_credential_ok: bool | None = None) -> Metrics:
    """MUNGE samples: munged's unit active, a credential encoded and decoded here (``munge -n | unmunge``),
    and, where the role gives a credential encoded on the controller, whether this node decodes it."""
    metrics.add(PREFIX + "munge_up", "1 when the munge unit is active.")
    metrics.sample(PREFIX + "munge_up", {}, active)
    metrics.add(PREFIX + "munge_credential_ok", "1 when a MUNGE credential decodes on this node (source: local or controller).")
    metrics.sample(PREFIX + "munge_credential_ok", {"source": "local"}, credential_ok)
    if controller_credential_ok is not None:
        metrics.sample(PREFIX + "munge_credential_ok", {"source": "controller"}, controller_credential_ok)
    return metrics


# munge.h: EMUNGE_CRED_REPLAYED. munged checks for replay after the credential decoded with its key.
MUNGE_REPLAYED = 17


def credential_decoded(rc: int, output: str) -> bool:
    """Whether ``unmunge`` decoded a credential with this node's key: it did (rc 0), or it did before
    on this node and says "Replayed credential" (rc 17, with the credential's metadata), which a
    credential read again from the controller's file does between two of its refreshes."""
    return rc == 0 or (rc == MUNGE_REPLAYED and "Replayed credential" in (output or ""))


def unit_metrics(metrics: Metrics, units: dict) -> Metrics:
    """hpclab_service_up{unit} from {unit: ``systemctl is-active`` word}."""
    metrics.add(PREFIX + "service_up", "1 when the systemd unit is active.")
    for unit, state in units.items():
        metrics.sample(PREFIX + "service_up", {"unit": unit}, (state or "").strip() == "active")
    return metrics


def nfs_export_metrics(metrics: Metrics, results: list) -> Metrics:
    """hpclab_nfs_export_up{server, export} from [{server, export, ok, seconds}] (nfs-ls of each export)."""
    metrics.add(PREFIX + "nfs_export_up", "1 when a lookup of the export (nfs-ls over NFSv4) answered.")
    metrics.add(PREFIX + "nfs_export_probe_seconds", "How long the lookup of the export took.")
    for result in results:
        labels = {"server": result["server"], "export": result["export"]}
        metrics.sample(PREFIX + "nfs_export_up", labels, bool(result["ok"]))
        metrics.sample(PREFIX + "nfs_export_probe_seconds", labels, result.get("seconds"))
    return metrics


# ------------------------------------------------------------------------------------------------
# LLM serving


def health_path(engine: str) -> str:
    """What the collector asks each model server: vLLM's /health; llama.cpp's server has no /health
    in llama-cpp-python 0.3, /v1/models answers when the model is loaded."""
    return "/health" if engine == "vllm" else "/v1/models"


def parse_nvidia_smi(text: str) -> list:
    """``nvidia-smi --query-gpu=index,uuid,memory.used,memory.total --format=csv,noheader,nounits``:
    [{index, uuid, used_bytes, total_bytes}] (nvidia-smi prints MiB)."""
    gpus = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4 or not parts[0].isdigit():
            continue
        try:
            used, total = float(parts[2]), float(parts[3])
        except ValueError:
            continue
        gpus.append({"index": int(parts[0]), "uuid": parts[1], "used_bytes": used * 1048576, "total_bytes": total * 1048576})
    return gpus


# vLLM's own gauges the collector relays, by the names vLLM has used for them (gpu_cache_usage_perc became
# kv_cache_usage_perc in vLLM's V1 engine; from 0.9.2 to 0.10.x a server serves both, with the same value, and
# 0.11.x the old one too with --show-hidden-metrics-for-version=0.10): {vLLM name: our name}, the newer name first.
VLLM_GAUGES = {
    "vllm:num_requests_running": "vllm_requests_running",
    "vllm:num_requests_waiting": "vllm_requests_waiting",
    "vllm:kv_cache_usage_perc": "vllm_kv_cache_usage_ratio",
    "vllm:gpu_cache_usage_perc": "vllm_kv_cache_usage_ratio",
}
# Ratios are not added up over a server's engines (data-parallel engines report one sample each): the fullest one.
_VLLM_RATIOS = {"vllm_kv_cache_usage_ratio"}
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_vllm_metrics(text: str) -> dict:
    """vLLM's /metrics (the Prometheus text format): {our name: value} of the gauges in VLLM_GAUGES. Request counts
    are summed over the samples of a name (one server serves one model; its engines may report one sample each), a
    ratio is the largest sample's; where a server serves a gauge under both of its names, the newer name's is used."""
    samples = {}
    for line in (text or "").splitlines():
        match = _SAMPLE.match(line)
        if not match or match.group(1) not in VLLM_GAUGES:
            continue
        try:
            number = float(match.group(3))
        except ValueError:
            continue
        samples.setdefault(match.group(1), []).append(number)
    values = {}
    for vllm_name, ours in VLLM_GAUGES.items():
        if ours in values or vllm_name not in samples:
            continue
        values[ours] = max(samples[vllm_name]) if ours in _VLLM_RATIOS else sum(samples[vllm_name])
    return values


def llm_metrics(metrics: Metrics, models: list, gpus: list | None = None, planned_gib: dict | None = None) -> Metrics:
    """LLM samples: [{name, port, engine, ok, seconds}] probed, GPUs of ``parse_nvidia_smi`` (None: no
    nvidia-smi here) and the memory the GPU plan gave the models on each GPU ({index: GiB})."""
    metrics.add(PREFIX + "llm_model_up", "1 when the model server answered its health probe (vLLM /health, llama.cpp /v1/models).")
    metrics.add(PREFIX + "llm_model_probe_seconds", "How long the health probe took.")
    for model in models:
        labels = {"model": model["name"], "port": str(model["port"]), "engine": model.get("engine", "")}
        metrics.sample(PREFIX + "llm_model_up", labels, bool(model["ok"]))
        metrics.sample(PREFIX + "llm_model_probe_seconds", labels, model.get("seconds"))
    helps = {
        "vllm_requests_running": "Requests the vLLM server is running (vllm:num_requests_running).",
        "vllm_requests_waiting": "Requests waiting in the vLLM server's queue (vllm:num_requests_waiting).",
        "vllm_kv_cache_usage_ratio": "The vLLM server's KV cache in use, 1 = full (vllm:kv_cache_usage_perc).",
    }
    for name, help_text in helps.items():
        relayed = [m for m in models if name in (m.get("vllm") or {})]
        if relayed:
            metrics.add(PREFIX + name, help_text)
        for model in relayed:
            metrics.sample(PREFIX + name, {"model": model["name"], "port": str(model["port"])}, model["vllm"][name])
    if gpus is not None:
        metrics.add(PREFIX + "gpu_memory_used_bytes", "GPU memory in use (nvidia-smi).")
        metrics.add(PREFIX + "gpu_memory_total_bytes", "GPU memory in all (nvidia-smi).")
        for gpu in gpus:
            labels = {"gpu": str(gpu["index"]), "uuid": gpu["uuid"]}
            metrics.sample(PREFIX + "gpu_memory_used_bytes", labels, gpu["used_bytes"])
            metrics.sample(PREFIX + "gpu_memory_total_bytes", labels, gpu["total_bytes"])
    if planned_gib:
        metrics.add(PREFIX + "gpu_memory_planned_bytes", "GPU memory the GPU plan (llm_gpu_plan) gives the model servers on this GPU.")
        for index, gib in sorted(planned_gib.items(), key=lambda item: str(item[0])):
            metrics.sample(PREFIX + "gpu_memory_planned_bytes", {"gpu": str(index)}, float(gib) * 1073741824)
    return metrics


def load_config(text: str) -> dict:
    """The collector's configuration (JSON written by the role): {collectors: [...], ...}."""
    config = json.loads(text)
    if not isinstance(config, dict) or not isinstance(config.get("collectors"), list):
        raise ValueError("the collector configuration must be a JSON object with a list 'collectors'")
    return config
