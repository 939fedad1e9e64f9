"""A building-wide power cut of a Slurm scenario's nodes, and what must come back by itself (issue 53).

Every node is stopped at once (docker stop -t 0: no shutdown) and started again, with no Ansible run in between:
once all together, once in reverse inventory order with the controller (first volume file server, NFS server and
monitoring host) DELAY seconds after the others. Each layer is then followed until it serves what it served before
the cut, and the seconds from the last node's start are returned per layer:

- the GlusterFS volume mounted on every node that mounts it, with a file written before the cut;
- a MUNGE credential made on the first node decoded on every node;
- every Slurm node idle in sinfo, and a job in each partition, over all its nodes, reading that file from the user's
  shared home;
- where the scenario has them: the NFS export answering v3 and v4, Prometheus seeing every target up.

Once all serve: nothing was written into the bare mount point /gfsv on any node's root filesystem while the volume
was away, and every Slurm daemon whose node mounts the volume started after its mount (SlurmCluster's `started`).
"""

from __future__ import annotations

import shlex
import subprocess
import time
import uuid
from collections.abc import Callable

from helpers import get_host, inventory_hosts
from slurm_checks import HOME

# Measured on the lab and in the scenarios (the closing note of issue 53 gives the times); the bound leaves room for
# a CI machine running three scenarios at once.
BOUND = 240
DELAY = 30


def docker(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], input=stdin, capture_output=True, text=True, timeout=120, check=False)


def follow(checks: dict[str, Callable[[], str]], started: float) -> dict[str, float]:
    """Run each check every 3 s until it returns "" (serves); the seconds from STARTED (time.monotonic()) to that, per
    check. Fails naming the checks not passed within BOUND s and what they answer."""
    back: dict[str, float] = {}
    last: dict[str, str] = {}
    while True:
        for layer, check in checks.items():
            if layer not in back:
                last[layer] = check()
                if not last[layer]:
                    back[layer] = round(time.monotonic() - started, 1)
        if len(back) == len(checks):
            return back
        elapsed = time.monotonic() - started
        assert elapsed < BOUND, (f"not back within {BOUND} s of the last start: {sorted(set(checks) - set(back))}; "
                                 f"they answer {({k: v[-300:] for k, v in last.items() if k not in back})}; back: {back}")
        time.sleep(3)


def prometheus_targets() -> str:
    """"" when Prometheus (the scenario's monitoring host) sees every target up, else what it answers."""
    from monitoring_checks import prometheus  # imported where the scenario has a monitoring host

    try:
        active = prometheus("/api/v1/targets")["data"]["activeTargets"]
    except Exception as error:  # noqa: BLE001 - Prometheus not back yet: an answer to wait on
        return f"Prometheus does not answer: {error}"
    down = [t["labels"].get("host", t["labels"].get("job")) for t in active if t["health"] != "up"]
    return "" if active and not down else f"down: {down}"


# The root filesystem bound elsewhere without the mounts on it: what lies in the bare mount point /gfsv.
BARE_MOUNT_POINT = 'd=$(mktemp -d) && mount --bind / "$d" && ls -A "$d/gfsv"; umount "$d"; rmdir "$d"'
# When a systemd unit last became active, in seconds since the epoch.
UNIT_STARTED = 'date -d "$(systemctl show -p ActiveEnterTimestamp --value {unit})" +%s'


def _mounted_with(node: str, path: str) -> str:
    result = get_host(node).run(f"findmnt -n -t fuse.glusterfs /gfsv > /dev/null || {{ echo not mounted; exit 1; }}; cat {path}")
    return (result.stdout + result.stderr).strip()


def _munge_decodes(nodes: list[str]) -> dict[str, str]:
    """Each node's unmunge status of a credential made on the first node."""
    made = docker("exec", nodes[0], "munge", "-n")
    if made.returncode:
        return {nodes[0]: made.stderr.strip() or "munge -n failed"}
    status = {}
    for node in nodes:
        decoded = docker("exec", "-i", node, "unmunge", stdin=made.stdout)
        lines = [line for line in (decoded.stdout + decoded.stderr).splitlines() if line.startswith("STATUS") or "unmunge:" in line]
        status[node] = " ".join(" ".join(lines).split()) or "no answer"
    return status


class SlurmCluster:
    """How a scenario reaches its controller: CTL(command) runs a shell command as root where slurmctld's commands
    work, AS_USER(command) as the cluster user from the shared home (both return a testinfra command line), and
    STARTED(node) a shell command run on a worker node that prints when its slurmd last started (seconds since the
    epoch)."""

    def __init__(self, ctl: Callable[[str], str], as_user: Callable[[str], str], started: Callable[[str], str]):
        self.controller = inventory_hosts("slurm_master")[0]
        self.workers = inventory_hosts("slurm_worker")
        self.nodes = inventory_hosts("all")
        self.mounts = inventory_hosts("glusterfs") + inventory_hosts("glusterfs_clients")
        self.munge = inventory_hosts("munge")
        self.nfs_server = (inventory_hosts("nfs_ganesha") or [None])[0]
        self.nfs_client = (inventory_hosts("nfs_clients") or [None])[0]
        self.ctl, self.as_user, self.started = ctl, as_user, started

    def _run(self, command: str) -> str:
        result = get_host(self.controller).run(command)
        return (result.stdout + result.stderr).strip()

    def _partitions(self) -> dict[str, int]:
        out = self._run(self.ctl("sinfo --noheader --format='%R %D'"))
        return {p: int(n) for p, n in (line.split() for line in out.splitlines() if len(line.split()) == 2 and line.split()[1].isdigit())}

    def _prometheus_installed(self) -> bool:
        monitoring = inventory_hosts("monitoring")
        return bool(monitoring) and get_host(monitoring[0]).run("systemctl is-enabled prometheus").rc == 0

    def checks(self, name: str, content: str) -> dict[str, Callable[[], str]]:
        """Layer name -> a check that returns "" when the layer serves, else what it answers instead. The file NAME
        holds CONTENT at the volume's root (read by root on the mounts and over NFS) and in the user's home (read by
        the jobs)."""
        path = f"{HOME}/{name}"
        checks: dict[str, Callable[[], str]] = {}
        for node in self.mounts:
            def mount(node=node) -> str:
                seen = _mounted_with(node, f"/gfsv/{name}")
                return "" if seen == content else seen
            checks[f"mount {node}"] = mount

        def munge() -> str:
            status = _munge_decodes(self.munge)
            bad = {node: s for node, s in status.items() if "Success" not in s}
            return "" if not bad else str(bad)
        checks["munge"] = munge

        def sinfo() -> str:
            out = self._run(self.ctl("sinfo --noheader --Node --format='%N %t'"))
            states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
            return "" if states and all(states.get(w) == "idle" for w in self.workers) else out
        checks["slurm nodes idle"] = sinfo

        def jobs() -> str:
            partitions = self._partitions()
            if not partitions:
                return "no partition listed"
            for partition, count in partitions.items():
                result = get_host(self.controller).run(self.as_user(f"timeout 60 srun --immediate=30 -p {partition} -N {count} cat {path}"))
                if result.stdout.splitlines() != [content] * count:
                    return f"partition {partition}: {(result.stdout + result.stderr).strip()[-300:]}"
            return ""
        checks["a job in each partition"] = jobs

        if self.nfs_server and self.nfs_client:
            for version in (3, 4):
                def nfs(version=version) -> str:
                    url = f"nfs://{self.nfs_server}/gv0/{name}?version={version}"
                    result = get_host(self.nfs_client).run("nfs-cat %s", url)
                    return "" if result.stdout.strip() == content else (result.stdout + result.stderr).strip()[-200:]
                checks[f"NFSv{version}"] = nfs

        if self._prometheus_installed():
            checks["Prometheus targets up"] = prometheus_targets
        return checks

    def after_the_volume(self) -> None:
        """Asserts that nothing lies in the bare mount point /gfsv of any node that mounts the volume, and that each
        worker's slurmd there started after the volume was mounted."""
        bare = {node: get_host(node).run(BARE_MOUNT_POINT).stdout.split() for node in self.mounts}
        assert not any(bare.values()), f"written into the bare mount point /gfsv on the root filesystem: {bare}"
        early = {}
        for node in set(self.workers) & set(self.mounts):
            host = get_host(node)
            mounted = int(host.check_output(UNIT_STARTED.format(unit="gfsv.mount")))
            started = int(host.check_output(self.started(node)))
            if started < mounted:
                early[node] = f"slurmd started {mounted - started} s before /gfsv was mounted"
        assert not early, early

    def power_cut(self, together: bool) -> dict[str, float]:
        """Write a file, cut the power of every node, start them (all together, or the controller DELAY s after the
        others), and return the seconds from the last start until each layer served again; fails naming the layers
        not back within BOUND s and what they answer, or what after_the_volume finds."""
        name = f"power-cut-{uuid.uuid4().hex[:8]}"
        content = f"written before the power cut {name}"
        written = self._run(self.as_user(f"echo {shlex.quote(content)} > {HOME}/{name} && cat {HOME}/{name}"))
        assert written == content, written
        get_host(self.mounts[0]).check_output(f"echo {shlex.quote(content)} > /gfsv/{name}")
        checks = self.checks(name, content)
        assert docker("stop", "-t", "0", *self.nodes).returncode == 0
        if together:
            assert docker("start", *self.nodes).returncode == 0
        else:
            others = [n for n in reversed(self.nodes) if n != self.controller]
            assert docker("start", *others).returncode == 0
            time.sleep(DELAY)
            assert docker("start", self.controller).returncode == 0
        back = follow(checks, time.monotonic())
        self.after_the_volume()
        return back
