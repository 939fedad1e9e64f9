#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: host_info
short_description: Read the state of Debian packages, paths, systemd units and commands in one call
version_added: 0.1.0
description:
  - Reads, in one remote call, what the roles would otherwise ask with one task each - which Debian
    packages are installed, the type, owner, group, mode and checksum of paths, whether systemd units
    are active and enabled, and where commands are found on E(PATH).
  - The roles run it first and skip each task whose target is already in the wanted state, so that a
    run that changes nothing makes few remote calls. It never changes anything.
author:
  - hpclab.cluster contributors (@hpclab)
attributes:
  check_mode:
    support: full
    description: Reads the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
  idempotent:
    support: full
    description: Read-only.
options:
  packages:
    description: Debian package names, read with C(dpkg-query).
    type: list
    elements: str
    default: []
  all_packages:
    description:
      - Also list every installed package in RV(installed_packages), so that a caller
        that does not yet know which packages it will want (a play that reads a host once for several
        roles) can look any of them up later.
    type: bool
    default: false
  paths:
    description: Paths to stat (symbolic links are followed).
    type: list
    elements: path
    default: []
  checksum_algorithm:
    description: Checksum of regular files in O(paths).
    type: str
    choices: [sha1, sha256]
    default: sha1
  services:
    description: systemd unit names (C(.service) is implied when no suffix is given).
    type: list
    elements: str
    default: []
  commands:
    description: Command names to look up on E(PATH) (with C(/usr/sbin) and C(/sbin) added).
    type: list
    elements: str
    default: []
  hardware:
    description:
      - Also return the processor counts and memory sizes of M(ansible.builtin.setup)'s hardware subset
        (worked out by the same rules from C(/proc/cpuinfo) and C(/proc/meminfo)), with C(hostname) and
        C(architecture), as C(ansible_facts) - without the mounts, devices and network that make a full
        fact gathering slow, and without carrying setup's fact collectors to the host.
    type: bool
    default: false
  network:
    description:
      - Also return, as C(ansible_facts), the network facts of M(ansible.builtin.setup) that the
        hpclab.cluster.docker_macvlan role reads, by setup's own rules - C(interfaces) (the names under
        C(/sys/class/net)), C(default_ipv4) (C(interface), C(address) and C(gateway) of the route to
        8.8.8.8, from C(ip -4 route get)) and C(all_ipv4_addresses) (every IPv4 address but 127.0.0.0/8's,
        from C(ip -o -4 addr show)) - in the same call.
      - On a host without C(ip) (package iproute2) nothing is returned for them, as setup returns nothing,
        and the caller gathers them with setup.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: What the MUNGE role would otherwise read with five tasks
  hpclab.cluster.host_info:
    packages: [munge]
    paths: [/etc/munge, /etc/munge/munge.key]
    checksum_algorithm: sha256
    services: [munge]
  register: munge_host

- name: Install only when a package is missing
  ansible.builtin.apt:
    name: [munge]
  when: munge_host.missing_packages | length > 0
"""

RETURN = r"""
packages:
  description: Per package, C(installed) (true only for dpkg status C(installed)), C(status) and C(version).
  returned: always
  type: dict
  sample: {munge: {installed: true, status: installed, version: 0.5.15-2+deb12u1}}
missing_packages:
  description: The packages of O(packages) that are not installed, in the order given.
  returned: always
  type: list
  elements: str
  sample: [slurmd]
installed_packages:
  description: With O(all_packages=true), the names of every installed package, sorted.
  returned: when O(all_packages=true)
  type: list
  elements: str
  sample: [bash, munge, slurmd]
paths:
  description:
    - Per path, C(exists), and when it exists C(type) (file, directory, other), C(owner), C(group) (names,
      or the number when the id has no name), C(mode) (four octal digits) and, for regular files, C(checksum).
  returned: always
  type: dict
  sample: {/etc/munge/munge.key: {exists: true, type: file, owner: munge, group: munge, mode: "0400", checksum: 9f2c...}}
checksum_algorithm:
  description: The algorithm of the C(checksum) values in RV(paths), as asked.
  returned: always
  type: str
  sample: sha256
services:
  description: Per unit as given, C(exists), C(active) and C(enabled) (UnitFileState C(enabled)), and the raw states.
  returned: always
  type: dict
  sample: {munge: {exists: true, active: true, enabled: true, active_state: active, unit_file_state: enabled}}
ansible_facts:
  description: With O(hardware=true), C(processor_count), C(processor_cores), C(processor_threads_per_core),
    C(processor_vcpus), C(processor_nproc), C(memtotal_mb), C(memfree_mb), C(swaptotal_mb) and C(swapfree_mb)
    as setup names them, C(hostname) (short) and C(architecture).
    With O(network=true) also C(interfaces), C(default_ipv4) and C(all_ipv4_addresses).
  returned: when O(hardware=true) or O(network=true)
  type: dict
  sample: {processor_count: 1, processor_cores: 2, processor_threads_per_core: 1, processor_vcpus: 2, memtotal_mb: 7940,
           interfaces: [eth0, lo], default_ipv4: {interface: eth0, address: 192.168.1.11, gateway: 192.168.1.1},
           all_ipv4_addresses: [192.168.1.11]}
commands:
  description: Per command, its full path, or an empty string when it is not found.
  returned: always
  type: dict
  sample: {nvidia-smi: ""}
"""

import grp
import hashlib
import os
import platform
import pwd
import shutil
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpclab.cluster.plugins.module_utils._apt import DPKG_FORMAT, list_dpkg_query, parse_dpkg_query
from ansible_collections.hpclab.cluster.plugins.module_utils._files import id_name

UNIT_PROPERTIES = "Id,LoadState,ActiveState,SubState,UnitFileState"


def unit_name(name: str) -> str:
    return name if "." in name else name + ".service"


def parse_systemctl_show(text: str, names: list) -> dict:
    """Per name in NAMES, from `systemctl show --property=UNIT_PROPERTIES UNITS` (blocks in the order asked)."""
    blocks = {}
    for block in text.strip().split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            blocks[props["Id"]] = props
    result = {}
    for name in names:
        props = blocks.get(unit_name(name), {})
        exists = props.get("LoadState", "not-found") not in ("not-found", "")
        result[name] = {
            "exists": exists,
            "active": exists and props.get("ActiveState") == "active",
            "enabled": exists and props.get("UnitFileState") == "enabled",
            "active_state": props.get("ActiveState", ""),
            "sub_state": props.get("SubState", ""),
            "unit_file_state": props.get("UnitFileState", ""),
        }
    return result


def path_state(path: str, algorithm: str) -> dict:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {"exists": False}
    kind = "file" if stat.S_ISREG(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode) else "other"
    info = {
        "exists": True,
        "type": kind,
        "owner": id_name(pwd.getpwuid, st.st_uid),
        "group": id_name(grp.getgrgid, st.st_gid),
        "mode": "%04o" % stat.S_IMODE(st.st_mode),
    }
    if kind == "file":
        digest = hashlib.new(algorithm)
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        info["checksum"] = digest.hexdigest()
    return info


def cpu_facts(cpuinfo: str, architecture: str, xen: bool = False) -> dict:
    """setup's processor counts (LinuxHardware.get_cpu_facts of ansible-core 2.19) from /proc/cpuinfo text.

    The same rules, for the counts slurm.conf needs, so that the module does not carry setup's fact
    collectors: sockets from 'physical id', cores per socket from 'cpu cores', threads from 'siblings';
    ARM and POWER count 'processor' lines; s390x and Xen paravirt have rules of their own.
    """
    i = vendor_id = model_name = processors = 0
    physid = coreid = 0
    sockets, cores = {}, {}
    zp = zmt = 0
    xen_paravirt = False
    for line in cpuinfo.splitlines():
        data = line.split(":", 1)
        key = data[0].strip()
        val = data[1].strip() if len(data) > 1 else ""
        if xen and key == "flags" and "vme" not in val:
            # Xen paravirt does not expose the vme flag, and shows only one core per CPU.
            xen_paravirt = True
        if key in ("model name", "Processor", "vendor_id", "cpu", "Vendor", "processor"):
            vendor_id += key == "vendor_id"
            model_name += key == "model name"
            processors += key == "processor"
            i += 1
        elif key == "physical id":
            physid = val
            sockets.setdefault(physid, 1)
        elif key == "core id":
            coreid = val
            if coreid not in sockets:
                cores[coreid] = 1
        elif key == "cpu cores":
            sockets[physid] = int(val)
        elif key == "siblings":
            cores[coreid] = int(val)
        elif key == "# processors":
            zp = int(val)
        elif key == "max thread id":
            zmt = int(val) + 1
        elif key == "ncpus active":
            i = int(val)
    if vendor_id > 0 and vendor_id == model_name:
        i = vendor_id
    if architecture.startswith(("armv", "aarch", "ppc")):
        i = processors
    if architecture == "s390x":
        return {"processor_count": 1, "processor_cores": round(zp / zmt), "processor_threads_per_core": zmt,
                "processor_vcpus": zp, "processor_nproc": zp}
    if xen_paravirt:
        return {"processor_count": i, "processor_cores": i, "processor_threads_per_core": 1,
                "processor_vcpus": i, "processor_nproc": i}
    facts = {"processor_count": len(sockets) if sockets else i}
    first_socket = next(iter(sockets.values()), 0)
    facts["processor_cores"] = first_socket or 1
    first_core = next(iter(cores.values()), None)
    facts["processor_threads_per_core"] = round((first_core if first_core is not None else 1) / facts["processor_cores"])
    facts["processor_vcpus"] = facts["processor_threads_per_core"] * facts["processor_count"] * facts["processor_cores"]
    facts["processor_nproc"] = processors
    return facts


def memory_facts(meminfo: str) -> dict:
    """setup's memtotal_mb, memfree_mb, swaptotal_mb and swapfree_mb (MiB, rounded down) from /proc/meminfo text."""
    facts = {}
    for line in meminfo.splitlines():
        key, _sep, rest = line.partition(":")
        if key in ("MemTotal", "MemFree", "SwapTotal", "SwapFree"):
            facts[key.lower() + "_mb"] = int(rest.strip().split(" ")[0]) // 1024
    return facts


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def hardware_facts() -> dict:
    """Processor and memory facts as setup's hardware subset names them, with hostname and architecture."""
    architecture = platform.machine()
    xen = os.path.exists("/proc/xen") or _read("/sys/hypervisor/type").split("\n")[0].strip() == "xen"
    facts = cpu_facts(_read("/proc/cpuinfo"), architecture, xen) if os.access("/proc/cpuinfo", os.R_OK) else {}
    if facts:
        # The processors this process may run on, as setup reports them.
        facts["processor_nproc"] = len(os.sched_getaffinity(0))
    facts.update(memory_facts(_read("/proc/meminfo")))
    facts.update({"hostname": platform.node().split(".")[0], "architecture": architecture})
    return facts


ROUTE_TARGET = "8.8.8.8"


def parse_route_get(out: str, target: str = ROUTE_TARGET) -> dict:
    """setup's default_ipv4 core from `ip -4 route get TARGET`: interface, address (src), gateway (via).

    As setup: only a first line that starts with the queried address counts (else {}).
    """
    lines = out.splitlines()
    words = lines[0].split() if lines else []
    found = {}
    if words and words[0] == target:
        for i in range(len(words) - 1):
            if words[i] == "dev":
                found["interface"] = words[i + 1]
            elif words[i] == "src":
                found["address"] = words[i + 1]
            elif words[i] == "via" and words[i + 1] != target:
                found["gateway"] = words[i + 1]
    return found


def parse_ipv4_addresses(out: str) -> list:
    """setup's all_ipv4_addresses from `ip -o -4 addr show`: each `inet` address, but 127.0.0.0/8's."""
    addresses = []
    for line in out.splitlines():
        words = line.split()
        if "inet" not in words[:4]:
            continue
        address = words[words.index("inet") + 1].split("/")[0]
        if not address.startswith("127.") and address not in addresses:
            addresses.append(address)
    return addresses


def network_facts(module) -> dict:
    """interfaces, default_ipv4 and all_ipv4_addresses as setup's network subset has them; {} without ip."""
    ip = module.get_bin_path("ip")
    if ip is None:
        return {}
    rc, addr_out, err = module.run_command([ip, "-o", "-4", "addr", "show"])
    if rc != 0:
        module.fail_json(msg="ip -o -4 addr show failed (rc %d): %s" % (rc, err.strip()))
    # No route to the target (a host without a default route) is no default_ipv4, as with setup.
    dummy, route_out, dummy = module.run_command([ip, "-4", "route", "get", ROUTE_TARGET])
    try:
        interfaces = sorted(os.listdir("/sys/class/net"))
    except OSError:
        interfaces = []
    return {
        "interfaces": interfaces,
        "default_ipv4": parse_route_get(route_out),
        "all_ipv4_addresses": parse_ipv4_addresses(addr_out),
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "packages": {"type": "list", "elements": "str", "default": []},
            "all_packages": {"type": "bool", "default": False},
            "paths": {"type": "list", "elements": "path", "default": []},
            "checksum_algorithm": {"type": "str", "choices": ["sha1", "sha256"], "default": "sha1"},
            "services": {"type": "list", "elements": "str", "default": []},
            "commands": {"type": "list", "elements": "str", "default": []},
            "hardware": {"type": "bool", "default": False},
            "network": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    params = module.params
    result = {
        "changed": False,
        "packages": {},
        "missing_packages": [],
        "paths": {},
        "checksum_algorithm": params["checksum_algorithm"],
        "services": {},
        "commands": {},
    }

    if params["packages"] or params["all_packages"]:
        dpkg_query = module.get_bin_path("dpkg-query", required=True)
        # Without names dpkg-query lists every package; rc 1 only means that some name is unknown to
        # dpkg; anything else is a real failure.
        names = [] if params["all_packages"] else params["packages"]
        rc, out, err = module.run_command([dpkg_query, "-W", "-f=" + DPKG_FORMAT] + names)
        if rc not in (0, 1):
            module.fail_json(msg="dpkg-query failed (rc %d): %s" % (rc, err.strip()), **result)
        if params["all_packages"]:
            known = list_dpkg_query(out)
            result["installed_packages"] = sorted(n for n, info in known.items() if info["installed"])
        # Details only for the names asked: the list above stays small for the callers that keep it.
        result["packages"] = parse_dpkg_query(out, params["packages"])
        result["missing_packages"] = [n for n in params["packages"] if not result["packages"][n]["installed"]]

    for path in params["paths"]:
        try:
            result["paths"][path] = path_state(path, params["checksum_algorithm"])
        except OSError as exc:
            module.fail_json(msg="cannot read %s: %s" % (path, exc), **result)

    if params["services"]:
        systemctl = module.get_bin_path("systemctl", required=True)
        units = [unit_name(n) for n in params["services"]]
        rc, out, err = module.run_command([systemctl, "show", "--property=" + UNIT_PROPERTIES] + units)
        if rc != 0:
            module.fail_json(msg="systemctl show failed (rc %d): %s" % (rc, err.strip()), **result)
        result["services"] = parse_systemctl_show(out, params["services"])

    search = os.environ.get("PATH", os.defpath).split(os.pathsep) + ["/usr/sbin", "/sbin"]
    for command in params["commands"]:
        result["commands"][command] = shutil.which(command, path=os.pathsep.join(search)) or ""

    facts = {}
    if params["hardware"]:
        facts.update(hardware_facts())
    if params["network"]:
        facts.update(network_facts(module))
    if params["hardware"] or params["network"]:
        result["ansible_facts"] = facts

    module.exit_json(**result)


if __name__ == "__main__":
    main()
