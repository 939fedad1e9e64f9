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
    (C(llm_serving)'s GPU plan and model sources, only on the llm group's hosts)."
  - Pure.
options:
  _input:
    description:
      - "Per host, what was read: C({reached: bool, unreachable_msg: str, sudo: the registered result of C(id -u) run
        with become (C(id -u), then the C(MemTotal) of /proc/meminfo in kB), distribution: str, distribution_version:
        str, memory_kb: int or null, devices: [{rc,
        stdout, stderr, item: {device}}] (the registered loop results of C(lsblk --json --bytes -o
        PATH,TYPE,SIZE,MODEL,SERIAL DEVICE), one per brick device),
        models: null (no llm host) or the LLM layer's problem message, \"\" when its checks passed})."
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
# => {"table": ["host  reached  sudo  release      memory   brick devices  models",
#               "pi1   yes      yes   Debian 12.5  3.7 GiB  -              -"],
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
COLUMNS = ("host", "reached", "sudo", "release", "memory", "brick devices", "models")


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


def hosts_ready(reads, supported=None):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(reads, Mapping):
        raise AnsibleFilterError(f"hosts_ready: expected a dict of hosts, got {type(reads).__name__}")
    supported = dict(supported or SUPPORTED)
    rows, problems, ready = [list(COLUMNS)], [], []
    for host in sorted(reads):
        read = reads[host] or {}
        found = []
        if not read.get("reached"):
            why = _first_line(read.get("unreachable_msg")) or "no answer"
            rows.append([host, "NO", "-", "-", "-", "-", "-"])
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
        memory = _size(int(read["memory_kb"]) * 1024) if str(read.get("memory_kb") or "").isdigit() else "?"
        rows.append([host, "yes", sudo, release, memory, devices, models])
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
