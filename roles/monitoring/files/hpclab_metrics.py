# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hpclab-metrics: read this node's cluster layers once and write one .prom file per layer into
node_exporter's textfile collector directory. Run by hpclab-metrics.timer (monitoring role).

Thin glue only: it runs the layers' own CLIs, and the parsing is the collection's unit-tested code,
copied by the role next to this script: _slurm.py and _gluster.py (the ones the collection's modules
use) and _monitoring.py. Each layer's file is replaced atomically (write, then rename), and a layer that
fails to read still writes hpclab_collector_success 0 with the error, so that an alert says so. The files of
layers no longer in the configuration are removed.

Usage: python3 hpclab_metrics.py [CONFIG]   (default /etc/hpclab-monitoring/collectors.json)
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
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
    # How the commands reach slurmctld: [] natively, [docker, exec, HOST] where it runs in a container.
    exec_prefix = list(config.get("slurm_exec", []))
    rc, out, _err = run(exec_prefix + [_slurm.SCONTROL, "ping"], timeout)
    up = rc == 0 and _monitoring.parse_ping(text(out))
    nodes = jobs = None
    if up:
        rc, out, err = run(exec_prefix + [_slurm.SCONTROL, "show", "node", "-o"], timeout)
        if rc != 0:
            raise RuntimeError(f"scontrol show node -o: rc={rc} {text(err).strip()}")
        nodes = _slurm.parse_show_node(text(out))
        rc, out, err = run(exec_prefix + [_slurm.SQUEUE, "--noheader", "--all", "--states=PENDING,RUNNING", "--format=%P|%T"], timeout)
        if rc != 0:
            raise RuntimeError(f"squeue: rc={rc} {text(err).strip()}")
        jobs = _monitoring.parse_squeue_partitions(text(out))
    _monitoring.slurm_metrics(metrics, nodes, jobs, up)


def gluster(args, timeout):
    # The collectors of the other brick hosts take glusterd's volume lock too: a read that lost that race
    # (_gluster.cli_busy) is tried again, twice, a second apart.
    for attempt in range(3):
        rc, out, err = run(_gluster.GLUSTER + list(args) + [_gluster.XML], timeout)
        if rc == 0 or not _gluster.cli_busy(text(out), text(err)) or attempt == 2:
            break
        time.sleep(1)
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


# The credential the controller shares is an unprivileged user's (nobody), never root's, and decodable by root only
# (munge 0.5.15: -U/-G set the credential's user and group, root only; -u restricts its decoding by UID): another
# user's unmunge answers "Unauthorized credential", and a daemon running as root (slurmd) that is handed it sees nobody.
CREDENTIAL_USER = "nobody"
CREDENTIAL_FALLBACK_ID = 65534


def controller_credential_argv(ttl):
    """munge's argv for the credential the controller writes for the other nodes' collectors."""
    try:
        entry = pwd.getpwnam(CREDENTIAL_USER)
        uid, gid = entry.pw_uid, entry.pw_gid
    except KeyError:
        uid = gid = CREDENTIAL_FALLBACK_ID
    return ["munge", "-n", "-U", str(uid), "-G", str(gid), "-u", "0", "-t", str(ttl)]


def on_the_root_filesystem(path):
    """True when the directory that would hold path is on the root filesystem: a shared volume not mounted (after a
    power cut, before its bricks answer) leaves its bare mount point there, and nothing may be written into it."""
    try:
        return os.stat(os.path.dirname(path) or ".").st_dev == os.stat("/").st_dev
    except OSError:
        return True


def collect_munge(metrics, config):
    timeout = config["timeout"]
    active = is_active("munge", timeout) == "active"
    rc, credential, _err = run(["munge", "-n"], timeout)
    local_ok = rc == 0 and run(["unmunge"], timeout, stdin=credential)[0] == 0
    controller_ok = None
    path = config.get("munge_controller_credential") or ""
    if path:
        # The controller encodes a credential for the others (to decode with the cluster key) each run, on the shared
        # volume only: never into its bare mount point on the root filesystem, where the volume would hide it later.
        if config.get("munge_credential_writer") and not on_the_root_filesystem(path):
            rc, credential, _err = run(controller_credential_argv(max(300, 10 * config["interval"])), timeout)
            if rc == 0:
                # Root only: the file is on storage every node mounts, and the collectors that read it run as root.
                write_atomically(path, text(credential), mode=0o600)
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
        url = f"nfs://{item['server']}{item['pseudo']}?version=4"
        rc, _out, _err = run(["nfs-ls", url], config["timeout"])
        results.append({"server": item["server"], "export": item["pseudo"], "ok": rc == 0, "seconds": time.monotonic() - started})
    _monitoring.nfs_export_metrics(metrics, results)


def api_key(path):
    """The model servers' API key from an environment file (KEY=VALUE lines, e.g. LLM_API_KEY=...), or None."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                name, sep, value = line.strip().partition("=")
                if sep and name.strip() == "LLM_API_KEY":
                    return value.strip().strip("\"'") or None
    except OSError:
        return None
    return None


def http_get(url, timeout, key=None):
    """(ok, body) of a GET on this node's model server; ok for a 2xx answer."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # nosec: a fixed http URL of this node
            return 200 <= response.status < 300, response.read()
    except (urllib.error.URLError, OSError, ValueError):
        return False, b""


def collect_llm(metrics, config):
    models = []
    key = api_key(config.get("llm_api_key_file"))
    address = config.get("llm_address", "127.0.0.1")
    base = f"[{address}]" if ":" in address else address
    for model in config.get("llm_models", []):
        started = time.monotonic()
        engine = model.get("engine", "vllm")
        ok, _body = http_get(f"http://{base}:{model['port']}{_monitoring.health_path(engine)}", config["timeout"], key)
        entry = {**model, "ok": ok, "seconds": time.monotonic() - started}
        if ok and engine == "vllm":
            # vLLM's own gauges (requests running and waiting, KV cache usage), relayed: the servers listen on
            # this node's address for the model servers, which Prometheus may not reach.
            answered, body = http_get(f"http://{base}:{model['port']}/metrics", config["timeout"], key)
            entry["vllm"] = _monitoring.parse_vllm_metrics(text(body)) if answered else {}
        models.append(entry)
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


# Module level, so that the unit tests can replace it here.
write_atomically = _monitoring.write_atomically


def layer_file(name):
    return f"hpclab_{name}.prom"


def remove_dropped(directory, collectors):
    """Remove the files of the layers this node no longer reads: frozen, they would keep an alert firing (a model
    down) or hide one (a brick online). Only the script's own file names; the errors, as lines for stderr."""
    errors = []
    for name in COLLECTORS:
        if name in collectors:
            continue
        try:
            os.unlink(os.path.join(directory, layer_file(name)))
        except FileNotFoundError:
            pass
        except OSError as exc:
            errors.append(f"{name}: removing {layer_file(name)} of a layer no longer read: {exc}")
    return errors


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
        try:
            write_atomically(os.path.join(config["textfile_dir"], layer_file(name)), metrics.render())
        except OSError as exc:
            # The other layers' files are still written; this layer's old file ages into CollectorStale.
            failed.append(f"{name}: writing {layer_file(name)}: {exc}")
    failed.extend(remove_dropped(config["textfile_dir"], config["collectors"]))
    for line in failed:
        print(line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
