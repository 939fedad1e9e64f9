# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hpclab-metrics: read this node's cluster layers once and write one .prom file per layer into
node_exporter's textfile collector directory. Run by hpclab-metrics.timer (monitoring role).

Thin glue only: it runs the layers' own CLIs, and the parsing is the collection's unit-tested code,
copied by the role next to this script: _slurm.py and _gluster.py (the ones the collection's modules
use) and _monitoring.py. Each layer's file is replaced atomically (write, then rename), and a layer that
fails to read still writes hpclab_collector_success 0 with the error, so that an alert says so.

Usage: python3 hpclab_metrics.py [CONFIG]   (default /etc/hpclab-monitoring/collectors.json)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _gluster  # noqa: E402 pylint: disable=wrong-import-position
import _monitoring  # noqa: E402 pylint: disable=wrong-import-position
import _slurm  # noqa: E402 pylint: disable=wrong-import-position

CONFIG = "/etc/hpclab-monitoring/collectors.json"
ENV = dict(os.environ, LANG="C", LC_ALL="C", SLURM_TIME_FORMAT="standard")


def run(argv, timeout, stdin=None):
    """(rc, stdout, stderr) of argv; rc 124 and the reason when it ran out of time or is missing."""
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, env=ENV, check=False)
    except subprocess.TimeoutExpired:
        return 124, b"", f"{argv[0]} took over {timeout} s".encode()
    except OSError as exc:
        return 127, b"", str(exc).encode()
    return proc.returncode, proc.stdout, proc.stderr


def text(data):
    return data.decode("utf-8", "replace")


def is_active(unit, timeout):
    return text(run(["systemctl", "is-active", unit], timeout)[1]).strip()


def collect_slurm(metrics, config):
    timeout = config["timeout"]
    rc, out, _err = run([_slurm.SCONTROL, "ping"], timeout)
    up = rc == 0 and _monitoring.parse_ping(text(out))
    nodes = jobs = None
    if up:
        rc, out, err = run([_slurm.SCONTROL, "show", "node", "-o"], timeout)
        if rc != 0:
            raise RuntimeError(f"scontrol show node -o: rc={rc} {text(err).strip()}")
        nodes = _slurm.parse_show_node(text(out))
        rc, out, err = run([_slurm.SQUEUE, "--noheader", "--all", "--states=PENDING,RUNNING", "--format=%P|%T"], timeout)
        if rc != 0:
            raise RuntimeError(f"squeue: rc={rc} {text(err).strip()}")
        jobs = _monitoring.parse_squeue_partitions(text(out))
    _monitoring.slurm_metrics(metrics, nodes, jobs, up)


def gluster(args, timeout):
    rc, out, err = run(_gluster.GLUSTER + list(args) + [_gluster.XML], timeout)
    if not out.strip():
        raise _gluster.GlusterCliError(rc, None, text(err).strip() or "no output")
    return text(out)


def collect_gluster(metrics, config):
    timeout = config["timeout"]
    try:
        volumes = _gluster.parse_volume_info(gluster(["volume", "info"], timeout))
    except _gluster.GlusterCliError:
        _monitoring.gluster_metrics(metrics, None, None, None, None)
        raise
    offline, heal = {}, {}
    for name, volume in volumes.items():
        if volume["status"] != "started":
            continue
        offline[name] = _gluster.offline_bricks(volume, _gluster.parse_volume_status(gluster(["volume", "status", name], timeout)))
        if volume.get("replica", 0) > 1 or volume.get("disperse", 0) > 0:
            # glfsheal reads the volume through a client of its own: seconds, not milliseconds.
            heal[name] = _monitoring.parse_heal_summary(_gluster.parse_xml(gluster(["volume", "heal", name, "info", "summary"], timeout)))
    peers = _gluster.parse_peer_status(gluster(["peer", "status"], timeout))
    _monitoring.gluster_metrics(metrics, volumes, offline, heal, peers)


def collect_munge(metrics, config):
    timeout = config["timeout"]
    active = is_active("munge", timeout) == "active"
    rc, credential, _err = run(["munge", "-n"], timeout)
    local_ok = rc == 0 and run(["unmunge"], timeout, stdin=credential)[0] == 0
    controller_ok = None
    path = config.get("munge_controller_credential") or ""
    if path:
        if config.get("munge_credential_writer"):
            # The controller encodes a credential for the others (to decode with the cluster key) each run.
            rc, credential, _err = run(["munge", "-n", "-t", str(max(300, 10 * config["interval"]))], timeout)
            if rc == 0:
                write_atomically(path, text(credential), mode=0o644)
        try:
            with open(path, "rb") as handle:
                rc, out, err = run(["unmunge"], timeout, stdin=handle.read())
            controller_ok = _monitoring.credential_decoded(rc, text(out) + text(err))
        except OSError:
            controller_ok = False
    _monitoring.munge_metrics(metrics, active, local_ok, controller_ok)


def collect_ganesha(metrics, config):
    _monitoring.unit_metrics(metrics, {unit: is_active(unit, config["timeout"]) for unit in config.get("ganesha_units", ["nfs-ganesha"])})


def collect_nfs_exports(metrics, config):
    results = []
    for item in config.get("nfs_exports", []):
        started = time.monotonic()
        url = f"nfs://{item['server']}{item['export']}?version=4"
        rc, _out, _err = run(["nfs-ls", url], config["timeout"])
        results.append({"server": item["server"], "export": item["export"], "ok": rc == 0, "seconds": time.monotonic() - started})
    _monitoring.nfs_export_metrics(metrics, results)


def collect_llm(metrics, config):
    models = []
    for model in config.get("llm_models", []):
        started = time.monotonic()
        url = f"http://{config.get('llm_address', '127.0.0.1')}:{model['port']}{_monitoring.health_path(model.get('engine', 'vllm'))}"
        try:
            with urllib.request.urlopen(url, timeout=config["timeout"]) as response:  # nosec: a fixed http URL of this node
                ok = 200 <= response.status < 300
        except (urllib.error.URLError, OSError, ValueError):
            ok = False
        models.append({**model, "ok": ok, "seconds": time.monotonic() - started})
    gpus = None
    rc, out, _err = run(["nvidia-smi", "--query-gpu=index,uuid,memory.used,memory.total", "--format=csv,noheader,nounits"], config["timeout"])
    if rc == 0:
        gpus = _monitoring.parse_nvidia_smi(text(out))
    _monitoring.llm_metrics(metrics, models, gpus, config.get("gpu_planned_gib") or None)


COLLECTORS = {
    "slurm": collect_slurm,
    "gluster": collect_gluster,
    "munge": collect_munge,
    "ganesha": collect_ganesha,
    "nfs_exports": collect_nfs_exports,
    "llm": collect_llm,
}


def write_atomically(path, content, mode=0o644):
    directory = os.path.dirname(path)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".hpclab-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv):
    with open(argv[1] if len(argv) > 1 else CONFIG, encoding="utf-8") as handle:
        config = _monitoring.load_config(handle.read())
    config.setdefault("timeout", 20)
    config.setdefault("interval", 60)
    failed = []
    for name in config["collectors"]:
        metrics = _monitoring.Metrics()
        error = ""
        try:
            COLLECTORS[name](metrics, config)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            # One layer's failure must not stop the others' files: it is written as a metric instead.
            error = f"{type(exc).__name__}: {exc}"
            failed.append(f"{name}: {error}")
        _monitoring.collector_status(metrics, name, not error, time.time(), error)
        write_atomically(os.path.join(config["textfile_dir"], f"hpclab_{name}.prom"), metrics.render())
    for line in failed:
        print(line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
