# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: hosts_ready
short_description: One table of what each host of an inventory is ready for, and what is not, before any change
version_added: 0.3.0
description:
  - Judges what C(playbooks/ready.yml) read on every host, read-only, before the first change of a deployment, and
    returns one table (a line per host) and the problems, each naming the host, what is wrong and the fix.
  - "A host is ready when: (1) Ansible reached it over its inventory connection as its inventory user (C(ansible_user));
    (2) a command ran with sudo (C(become)) as root; (3) it runs a supported Debian release (O(supported)); (4) every
    brick device the inventory names for it (C(glusterfs_brick_devices)) is a block device (its size, model and serial
    are shown, so that the disk can be told from another); (5) the LLM layer's checks of its planned models passed
    (C(llm_serving)'s GPU plan and model sources, only on the llm group's hosts); (6) on the one container host that
    probed the macvlan range (M(hpclab.cluster.lan_neighbors_info)), no address of C(docker_macvlan_ip_range) is
    answered by a machine other than the cluster's hosts (their own addresses, shims included) and the containers
    their engines hold on the network, nor the gateway: one would be handed to a Slurm container, and both would lose
    packets."
  - Pure.
options:
  _input:
    description:
      - "Per host, what was read: C({reached: bool, unreachable_msg: str, sudo: the registered result of C(id -u) run
        with become (C(id -u), then the C(MemTotal) of /proc/meminfo in kB), distribution: str, distribution_version:
        str, memory_kb: int or null, devices: [{rc,
        stdout, stderr, item: {device}}] (the registered loop results of C(lsblk --json --bytes -o
        PATH,TYPE,SIZE,MODEL,SERIAL DEVICE), one per brick device),
        models: null (no llm host) or the LLM layer's problem message, \"\" when its checks passed,
        lan: null, or on a container host the text of C(ip -j -4 addr show), a newline, then that of
        C(docker network inspect NETWORK) (nothing where the network does not exist),
        lan_probe: null, or on the host that probed the range {network, gateway, result: the registered result of
        M(hpclab.cluster.lan_neighbors_info)}})."
    type: dict
    required: true
  supported:
    description: Distribution name to its supported major releases.
    type: dict
    default: {Debian: ["12"]}
"""

EXAMPLES = r"""
# {"pi1": {"reached": true, "sudo": {"rc": 0, "stdout": "0"}, "distribution": "Debian", "distribution_version": "12.5",
#          "memory_kb": 3881000, "devices": [], "models": None}} | hpclab.cluster.hosts_ready
# => {"table": ["host  reached  sudo  release      memory   brick devices  models  macvlan range",
#               "pi1   yes      yes   Debian 12.5  3.7 GiB  -              -       -"],
#     "problems": [], "ready": ["pi1"]}
"""

RETURN = r"""
_value:
  description: C({table, problems, ready}) - the table's lines (a header first), one message per problem, the hosts with none.
  type: dict
"""

import json
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

SUPPORTED = {"Debian": ["12"]}
COLUMNS = ("host", "reached", "sudo", "release", "memory", "brick devices", "models", "macvlan range")


def _first_line(text) -> str:
    """The first line of an error, without ansible-core's own prefixes ("Task failed: ...")."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    line = lines[0] if lines else ""
    for prefix in ("Task failed: ", "Action failed: "):
        line = line.removeprefix(prefix)
    return line


def _sudo(host, read):
    """Rule 2: (cell, problem or None)."""
    result = read.get("sudo") or {}
    if result.get("skipped") or result.get("unreachable"):
        return "-", None
    if not result.get("failed") and result.get("rc") == 0 and (str(result.get("stdout", "")).split() or [""])[0] == "0":
        return "yes", None
    why = _first_line(result.get("module_stderr") or result.get("msg") or result.get("stderr")) or "it did not run as root"
    return "NO", (f"{host}: a command with sudo (become) failed: {why}. Fix: let the inventory user (ansible_user) run "
                  "every command with sudo without a password (a file in /etc/sudoers.d with 'USER ALL=(ALL:ALL) "
                  "NOPASSWD: ALL'), or give its password with --ask-become-pass.")


def _release(host, read, supported):
    """Rule 3."""
    name, version = str(read.get("distribution") or "?"), str(read.get("distribution_version") or "?")
    major = version.split(".", maxsplit=1)[0]
    cell = f"{name} {version}"
    if major in [str(v) for v in supported.get(name, [])]:
        return cell, None
    wanted = ", ".join(f"{n} {' or '.join(str(v) for v in vs)}" for n, vs in supported.items())
    return cell + " (NO)", f"{host}: runs {cell}, which this collection does not support. Fix: install {wanted} on it."


def _size(value) -> str:
    size, unit = float(value or 0), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"


def _devices(host, read):
    """Rule 4: (cell, problems)."""
    cells, problems = [], []
    for seen in read.get("devices") or []:
        device = (seen.get("item") or {}).get("device", seen.get("device"))
        blocks = []
        if seen.get("rc") == 0:
            try:
                blocks = json.loads(seen.get("stdout") or "{}").get("blockdevices") or []
            except ValueError:
                blocks = []
        if not blocks:
            why = _first_line(seen.get("stderr")) or "not found"
            cells.append(f"{device} MISSING")
            problems.append(f"{host}: brick device {device} (glusterfs_brick_devices) is not a block device on it "
                            f"({why}). Fix: name the disk or USB stick as the host sees it (lsblk; a /dev/disk/by-id/ "
                            "path stays the same across reboots), or remove the entry.")
            continue
        block = blocks[0]
        what = " ".join(str(block[k]) for k in ("model", "serial") if block.get(k))
        cells.append(f"{device} {_size(block.get('size'))}{' ' + what if what else ''}")
    return ("; ".join(cells) or "-"), problems


def _models(host, read):
    """Rule 5."""
    message = read.get("models")
    if message is None:
        return "-", None
    if message == "":
        return "yes", None
    return "NO", f"{host}: the LLM layer's checks failed: {message}"


def _lan(host, read, known):
    """Rule 6: (cell, problem or None)."""
    probe = read.get("lan_probe")
    if not probe:
        return "-", None
    result = probe.get("result") or {}
    network = probe.get("network", "")
    if result.get("failed") or "answered" not in result:
        why = _first_line(result.get("msg")) or "it did not run"
        return "NOT CHECKED", (f"{host}: could not probe docker_macvlan_ip_range {network} for addresses in use ({why}). "
                               "Fix: run the check with sudo (become) on a host with iproute2 and an interface on the LAN.")
    from ansible_collections.hpclab.cluster.plugins.module_utils._lan import taken  # pylint: disable=import-outside-toplevel

    others = taken(result["answered"], known, probe.get("gateway") or "")
    if not others:
        return f"free ({result.get('probed', 0)} probed)", None
    seen = ", ".join(f"{entry['address']} ({entry['lladdr']})" for entry in others)
    return f"TAKEN {seen}", (f"{host}: in docker_macvlan_ip_range {network}, {seen} answered from a machine of the LAN that "
                             "is none of this inventory's container hosts, shims or containers: a Slurm container given "
                             "that address would fight it for its packets. Fix: take the range out of the LAN's DHCP "
                             "pool and give that machine another address, or choose a docker_macvlan_ip_range no "
                             "machine uses.")


def _known(reads):
    """Every address the container hosts hold, their shims' and their containers' on the network (rule 6)."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._lan import known_addresses  # pylint: disable=import-outside-toplevel

    known = set()
    for read in reads.values():
        if (read or {}).get("lan"):
            try:
                known |= known_addresses(read["lan"])
            except (ValueError, KeyError, TypeError) as error:
                raise AnsibleFilterError(f"hosts_ready: a host's lan read is not ip -j and docker's JSON: {error}") from error
    return known


def hosts_ready(reads, supported=None):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(reads, Mapping):
        raise AnsibleFilterError(f"hosts_ready: expected a dict of hosts, got {type(reads).__name__}")
    supported = dict(supported or SUPPORTED)
    rows, problems, ready = [list(COLUMNS)], [], []
    known = _known(reads)
    for host in sorted(reads):
        read = reads[host] or {}
        found = []
        if not read.get("reached"):
            why = _first_line(read.get("unreachable_msg")) or "no answer"
            rows.append([host, "NO", "-", "-", "-", "-", "-", "-"])
            problems.append(f"{host}: Ansible could not reach it ({why}). Fix: check its address (ansible_host), that "
                            "sshd runs there, and that the inventory user (ansible_user) logs in with your SSH key.")
            continue
        sudo, problem = _sudo(host, read)
        found.append(problem)
        release, problem = _release(host, read, supported)
        found.append(problem)
        devices, device_problems = _devices(host, read)
        models, problem = _models(host, read)
        found.append(problem)
        lan, problem = _lan(host, read, known)
        found.append(problem)
        memory = _size(int(read["memory_kb"]) * 1024) if str(read.get("memory_kb") or "").isdigit() else "?"
        rows.append([host, "yes", sudo, release, memory, devices, models, lan])
        found = [p for p in found if p] + device_problems
        problems += found
        if not found:
            ready.append(host)
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(COLUMNS))]
    table = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    return {"table": table, "problems": problems, "ready": ready}


class FilterModule:
    """What each host is ready for."""

    def filters(self):
        return {"hosts_ready": hosts_ready}
