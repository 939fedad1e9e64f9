#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: host_state_info
short_description: Read which packages, systemd units, paths, users and groups of this host a role is about to manage, in one call
version_added: 0.3.0
description:
  - Read-only. Answers in one call what a role would otherwise learn from one task each, which of O(packages)
    are installed (one C(dpkg-query)), whether each of O(services) is loaded, active and enabled (one
    C(systemctl show)), each of O(paths)' type, owner, group, mode and, for regular files, SHA-256 checksum, and each
    of O(users)' and O(groups)' IDs as the account databases give them (no extra process).
  - A role calls it once, keeps the result in its own private variable and skips the tasks whose work is
    already done (M(ansible.builtin.apt) when every package is installed, M(ansible.builtin.systemd_service)
    when the unit is active and enabled). Those builtins still do every change; this module changes nothing.
  - O(mounts) reads C(/etc/fstab) and asks whether each path is a mount point (no extra process).
  - O(hardware) and O(network) are the options that set facts, those M(hpclab.cluster.node_hardware_facts) sets and
    those of the M(ansible.builtin.setup) module's C(network) subset, each by the same code, so that a node is read
    and sized, or its addresses learnt, in one call; every other answer is returned only.
  - Written for Debian (dpkg) hosts with systemd; on a host without C(dpkg-query) every package counts as
    missing, without C(systemctl) every unit as stopped, so that the builtins run and decide.
author:
  - hpclab.cluster contributors (@hpclab)
extends_documentation_fragment:
  - hpclab.cluster.attributes
  - hpclab.cluster.attributes.read_only
options:
  packages:
    description:
      - Debian package names, as M(ansible.builtin.apt) takes them. A name with a version (C(NAME=VERSION)) counts as
        installed only at that version; a name with a wildcard or a release (C(NAME/RELEASE)) always counts as missing.
    type: list
    elements: str
    default: []
  services:
    description: systemd unit names (C(munge) means C(munge.service)).
    type: list
    elements: str
    default: []
  paths:
    description: Absolute paths. Links are not followed.
    type: list
    elements: path
    default: []
  attribute_paths:
    description:
      - Absolute paths read as O(paths) are, without the checksum (a log that grows, a file too large to read every run).
    type: list
    elements: path
    default: []
  users:
    description: Names of local users.
    type: list
    elements: str
    default: []
  groups:
    description: Names of local groups.
    type: list
    elements: str
    default: []
  mounts:
    description:
      - Absolute mount points. For each, its lines in C(/etc/fstab) and whether something is mounted there, what
        M(ansible.posix.mount) compares before it changes anything with O(ansible.posix.mount#module:state=mounted).
    type: list
    elements: path
    default: []
  globs:
    description:
      - Shell patterns of absolute paths (C(/etc/systemd/system/llm-*.service)). For each, the regular files that match
        it (links not followed, hidden files only where the pattern names them), what M(ansible.builtin.find) lists with
        O(ansible.builtin.find#module:patterns) and O(ansible.builtin.find#module:file_type=file).
    type: list
    elements: str
    default: []
  directory_contents:
    description:
      - Absolute paths of directories of small files, such as the secrets a role generated once and keeps. For each,
        the name of every entry in it (hidden ones too, not those of its subdirectories), as M(ansible.builtin.find)
        lists them with O(ansible.builtin.find#module:file_type=any), and the content of each regular file, as
        M(ansible.builtin.slurp) returns it, in one call however many files there are. A link is not followed.
      - The result holds the files' contents. Give the task C(no_log) when they are secret.
    type: list
    elements: path
    default: []
  contents:
    description:
      - Absolute paths of small files, such as a secret a role generated once and keeps. The content of each, as
        M(ansible.builtin.slurp) returns it, in the same call. A link is not followed.
      - The result holds the files' contents. Give the task C(no_log) when they are secret.
    type: list
    elements: path
    default: []
  hardware:
    description:
      - Also set the facts of M(hpclab.cluster.node_hardware_facts) (CPUs, memory, hostname, C(nvidia_smi),
        C(slurm_cgroup)), read by the same code, so that a role that reads its node anyway sizes it in the same call
        instead of a task of its own.
    type: bool
    default: false
  network:
    description:
      - Also set the facts of M(ansible.builtin.setup)'s C(network) subset (C(interfaces), C(default_ipv4),
        C(all_ipv4_addresses), one entry per interface, ...), read by ansible-core's own Linux collector, so that a
        role that reads its node anyway and needs its addresses learns them in the same call instead of a round of
        fact gathering. The C(min) subset's facts are not set.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: What of MUNGE is already in place
  hpclab.cluster.host_state_info:
    packages: [munge]
    services: [munge]
    paths: [/etc/munge/munge.key]
  register: __munge_state

- name: Install MUNGE
  ansible.builtin.apt:
    name: [munge]
    cache_valid_time: 3600
  when: __munge_state.packages_missing | length > 0
"""

RETURN = r"""
packages:
  description: Each of O(packages) (its name without version) and its installed version, or null when it is not installed.
  returned: always
  type: dict
  sample: {"munge": "0.5.15-2+deb12u1", "slurmd": null}
packages_missing:
  description: The entries of O(packages) that are not installed (at that version), as given.
  returned: always
  type: list
  elements: str
  sample: ["slurmd"]
services:
  description:
    - Each of O(services) as given, with C(loaded) (the unit file exists), C(active) (running or exited),
      C(enabled) (C(UnitFileState) enabled, enabled-runtime, static, alias, indirect or generated) and systemd's C(state)
      (ActiveState) and C(unit_file_state).
  returned: always
  type: dict
  sample: {"munge": {"loaded": true, "active": true, "enabled": true, "state": "active", "unit_file_state": "enabled"}}
paths:
  description:
    - Each of O(paths) and O(attribute_paths) with C(exists); when it exists also C(isreg), C(isdir), C(islnk), C(pw_name), C(gr_name)
      (names, or the number when the id has no name), C(mode) (four octal digits) and, for a regular file of O(paths),
      C(checksum) (SHA-256), the keys and values of M(ansible.builtin.stat) with C(checksum_algorithm=sha256).
  returned: always
  type: dict
  sample:
    /etc/munge/munge.key: {"exists": true, "isreg": true, "isdir": false, "islnk": false, "pw_name": "munge", "gr_name": "munge",
                           "mode": "0400", "checksum": "9f86d0..."}
users:
  description:
    - Each of O(users) with C(exists); when it exists also C(uid), C(gid) (of its primary group), C(home), C(shell),
      C(comment) (the GECOS field) and C(groups), the names of the groups that list it as a member, sorted
      (M(ansible.builtin.user)'s O(groups)).
  returned: always
  type: dict
  sample: {"alice": {"exists": true, "uid": 2001, "gid": 2001, "home": "/gfsv/home/alice", "shell": "/bin/bash",
                     "comment": "hpclab cluster user", "groups": []}}
groups:
  description: Each of O(groups) with C(exists) and, when it exists, its C(gid).
  returned: always
  type: dict
  sample: {"alice": {"exists": true, "gid": 2001}}
mounts:
  description:
    - Each of O(mounts) with C(mounted) (the path is a mount point now) and C(fstab), the lines of C(/etc/fstab) for
      that mount point in file order, each with C(src), C(fstype), C(opts), C(dump) and C(passno) as written (C(dump)
      and C(passno) null where the line leaves them out); no line, an empty list.
  returned: always
  type: dict
  sample:
    /gfsv: {"mounted": true, "fstab": [{"src": "node1:/gv0", "fstype": "glusterfs", "dump": "0", "passno": "0",
                                       "opts": "defaults,_netdev,backup-volfile-servers=node2:node3"}]}
globs:
  description: Each of O(globs) with the paths of the regular files that match it, sorted.
  returned: always
  type: dict
  sample: {"/etc/systemd/system/llm-*.service": ["/etc/systemd/system/llm-tinyllama.service"]}
directory_contents:
  description:
    - Each of O(directory_contents) with its entries, each name with the base64-encoded content of a regular file,
      or null for anything else (a directory, a link). A directory that does not exist has no entries.
  returned: always
  type: dict
  sample: {"/etc/hpclab/llm-gateway/keys": {"alice": "c2VjcmV0Cg==", "webui": "b3RoZXIK"}}
contents:
  description:
    - Each of O(contents) with the base64-encoded content of the regular file, or null where there is none (nothing
      at that path, or a directory, a link).
  returned: always
  type: dict
  sample: {"/var/lib/hpclab/slurm/slurmdbd-db.password": "c2VjcmV0Cg==", "/etc/absent": null}
ansible_facts:
  description:
    - With O(hardware), the facts that M(hpclab.cluster.node_hardware_facts) returns, with its keys and values.
    - With O(network), the facts of M(ansible.builtin.setup)'s C(network) subset, under the names C(ansible_facts) gives
      them (C(default_ipv4), not C(ansible_default_ipv4)).
  returned: when O(hardware) or O(network) is true
  type: dict
  sample: {"processor_vcpus": 4, "memtotal_mb": 7812, "hostname": "pi1", "nvidia_smi": "", "slurm_cgroup": {"version": "v2"},
           "default_ipv4": {"interface": "eth0", "address": "192.168.1.11", "network": "192.168.1.0", "prefix": "24"},
           "all_ipv4_addresses": ["192.168.1.11"], "interfaces": ["lo", "eth0"]}
"""

import base64
import errno
import glob
import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpclab.cluster.plugins.module_utils._digest import sha256_file
from ansible_collections.hpclab.cluster.plugins.module_utils._hardware import network_facts, node_facts

# UnitFileState values of a unit that starts at boot or with something that does.
ENABLED_STATES = ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated")
SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "UnitFileState")


def package_name(entry: str) -> str:
    """`munge=0.5.15-2` -> `munge`; `libc6:amd64` -> `libc6`."""
    return entry.split("=", 1)[0].split(":", 1)[0]


def parse_dpkg_query(out: str) -> dict:
    """`dpkg-query -W -f '${Package}\\t${db:Status-Abbrev}\\t${Version}\\n'` output -> {name: version}, only
    for the packages whose status is installed (`ii`, `hi`: wanted install or hold, state installed)."""
    versions = {}
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) < 3:
            continue
        name, status, version = fields[0], fields[1].strip(), fields[2].strip()
        if len(status) >= 2 and status[1] == "i":
            versions[name] = version
    return versions


def is_pattern(entry: str) -> bool:
    """A wildcard or a release (NAME/RELEASE): apt resolves it, dpkg-query cannot say whether it is installed."""
    return any(c in entry for c in "*?[/")


def missing_packages(entries: list, installed: dict) -> list:
    """The ENTRIES (as given to apt) that INSTALLED ({name: version}) does not satisfy."""
    missing = []
    for entry in entries:
        if is_pattern(entry) or entry.count("=") > 1:
            missing.append(entry)
            continue
        name, version = (entry.split("=", 1) + [""])[:2]
        have = installed.get(package_name(name))
        if have is None or (version and have != version):
            missing.append(entry)
    return missing


def parse_systemctl_show(out: str) -> list:
    """`systemctl show -p Id,LoadState,ActiveState,UnitFileState UNIT...` output -> one dict of properties per
    unit, in the order asked (systemd separates the units by a blank line)."""
    units, current = [], {}
    for line in out.splitlines() + [""]:
        if not line.strip():
            if current:
                units.append(current)
                current = {}
            continue
        key, value = (line.split("=", 1) + [""])[:2]
        current[key] = value
    return units


def unit_state(props: dict) -> dict:
    active_state = props.get("ActiveState", "inactive")
    unit_file_state = props.get("UnitFileState", "")
    return {
        "loaded": props.get("LoadState") == "loaded",
        "active": active_state in ("active", "reloading"),
        "enabled": unit_file_state in ENABLED_STATES,
        "state": active_state,
        "unit_file_state": unit_file_state,
    }


def unit_name(service: str) -> str:
    return service if "." in service else service + ".service"


def path_state(path: str, checksum: bool = True) -> dict:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        # NotADirectoryError: a step of the path is no directory (a home's .config that is a file).
        return {"exists": False}
    result = {"exists": True, "isreg": stat.S_ISREG(st.st_mode), "isdir": stat.S_ISDIR(st.st_mode),
              "islnk": stat.S_ISLNK(st.st_mode), "pw_name": _name(pwd.getpwuid, st.st_uid),
              "gr_name": _name(grp.getgrgid, st.st_gid), "mode": "%04o" % stat.S_IMODE(st.st_mode)}
    if result["isreg"] and checksum:
        result["checksum"] = sha256_file(path)
    return result


def user_state(name: str, members: dict) -> dict:
    """NAME's account as M(ansible.builtin.user) compares it; MEMBERS maps a user name to the groups listing it."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return {"exists": False}
    return {"exists": True, "uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir, "shell": entry.pw_shell,
            "comment": entry.pw_gecos, "groups": sorted(members.get(name, []))}


def group_members() -> dict:
    """User name to the names of the groups whose member list holds it (the supplementary groups)."""
    members = {}
    for group in grp.getgrall():
        for user in group.gr_mem:
            members.setdefault(user, []).append(group.gr_name)
    return members


def group_state(name: str) -> dict:
    try:
        return {"exists": True, "gid": grp.getgrnam(name).gr_gid}
    except KeyError:
        return {"exists": False}


FSTAB_FIELDS = ("src", "name", "fstype", "opts", "dump", "passno")


def parse_fstab(text: str) -> list:
    """The entries of an fstab as M(ansible.posix.mount) reads them on Linux: comments and blank lines left out, a
    line of 4 to 6 fields kept (a missing dump or passno is None), any other line ignored."""
    entries = []
    for line in text.splitlines():
        fields = line.split("#")[0].split()
        if len(fields) in (4, 5, 6):
            entries.append(dict(zip(FSTAB_FIELDS, fields + [None] * (6 - len(fields)))))
    return entries


def mount_state(path: str, fstab: list) -> dict:
    return {"mounted": os.path.ismount(path),
            "fstab": [{k: e[k] for k in FSTAB_FIELDS if k != "name"} for e in fstab if e["name"] == path]}


def glob_files(pattern: str) -> list:
    """The regular files matching PATTERN (glob), sorted; a link is not followed, whatever it points to."""
    return sorted(p for p in glob.glob(pattern) if stat.S_ISREG(os.lstat(p).st_mode))


def directory_contents(path: str) -> dict:
    """Every entry of the directory PATH: {name: base64 content} for a regular file, {name: None} for anything else.
    A missing PATH (or one that is no directory) has no entries. Links are not followed (O_NOFOLLOW)."""
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    entries = {}
    for name in sorted(names):
        full = os.path.join(path, name)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue  # removed since the listing
        entries[name] = file_content(full) if stat.S_ISREG(st.st_mode) else None
    return entries


def file_content(path: str):
    """The base64 content of the regular file PATH; None where there is none (nothing there, a directory, a link:
    O_NOFOLLOW, and a file replaced by a link since an lstat is not read either; a FIFO or a socket: O_NONBLOCK, so
    that opening one neither waits for a writer nor fails the read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO):
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        return base64.b64encode(f.read()).decode("ascii")


def _name(lookup, ident: int) -> str:
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", default=[]),
            services=dict(type="list", elements="str", default=[]),
            paths=dict(type="list", elements="path", default=[]),
            attribute_paths=dict(type="list", elements="path", default=[]),
            users=dict(type="list", elements="str", default=[]),
            groups=dict(type="list", elements="str", default=[]),
            mounts=dict(type="list", elements="path", default=[]),
            globs=dict(type="list", elements="str", default=[]),
            directory_contents=dict(type="list", elements="path", default=[]),
            contents=dict(type="list", elements="path", default=[]),
            hardware=dict(type="bool", default=False),
            network=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    packages, services, paths = (module.params[k] for k in ("packages", "services", "paths"))
    result = {"changed": False, "packages": {}, "packages_missing": [], "services": {}, "paths": {}, "users": {}, "groups": {},
              "mounts": {}, "globs": {}, "directory_contents": {}, "contents": {}}

    if packages:
        installed = {}
        dpkg_query = module.get_bin_path("dpkg-query")
        if dpkg_query:
            # rc 1 only says that some name matched no package: the others are still listed.
            names = sorted({package_name(p) for p in packages if not is_pattern(p)})
            rc, out, err = module.run_command([dpkg_query, "-W", "-f", "${Package}\t${db:Status-Abbrev}\t${Version}\n"] + names)
            if rc not in (0, 1):
                module.fail_json(msg=f"dpkg-query -W failed: rc={rc}, stderr: {err.strip()}", **result)
            installed = parse_dpkg_query(out)
        result["packages"] = {package_name(p): installed.get(package_name(p)) for p in packages}
        result["packages_missing"] = missing_packages(packages, installed)

    if services:
        systemctl = module.get_bin_path("systemctl")
        shown = []
        if systemctl:
            argv = [systemctl, "show", "-p", ",".join(SHOW_PROPERTIES)] + [unit_name(s) for s in services]
            rc, out, err = module.run_command(argv)
            if rc != 0:
                module.fail_json(msg=f"{' '.join(argv)} failed: rc={rc}, stderr: {err.strip()}", **result)
            shown = parse_systemctl_show(out)
        # One block per unit, in the order asked (Id is the unit's own name, not an alias asked for).
        if len(shown) != len(services):
            shown = [{}] * len(services)
        result["services"] = {s: unit_state(props) for s, props in zip(services, shown)}

    for path, checksum in [(p, True) for p in paths] + [(p, False) for p in module.params["attribute_paths"]]:
        try:
            result["paths"][path] = path_state(path, checksum)
        except OSError as e:
            module.fail_json(msg=f"cannot read {path}: {e}", **result)

    members = group_members() if module.params["users"] else {}
    result["users"] = {name: user_state(name, members) for name in module.params["users"]}
    result["groups"] = {name: group_state(name) for name in module.params["groups"]}

    if module.params["mounts"]:
        try:
            with open("/etc/fstab") as f:
                fstab = parse_fstab(f.read())
        except FileNotFoundError:
            fstab = []
        except OSError as e:
            module.fail_json(msg=f"cannot read /etc/fstab: {e}", **result)
        result["mounts"] = {path: mount_state(path, fstab) for path in module.params["mounts"]}

    for pattern in module.params["globs"]:
        try:
            result["globs"][pattern] = glob_files(pattern)
        except OSError as e:
            module.fail_json(msg=f"cannot read {pattern}: {e}", **result)

    for path in module.params["directory_contents"]:
        try:
            result["directory_contents"][path] = directory_contents(path)
        except OSError as e:
            module.fail_json(msg=f"cannot read {path}: {e}", **result)

    for path in module.params["contents"]:
        try:
            result["contents"][path] = file_content(path)
        except OSError as e:
            module.fail_json(msg=f"cannot read {path}: {e}", **result)

    if module.params["hardware"]:
        result["ansible_facts"] = node_facts(module)
    if module.params["network"]:
        result.setdefault("ansible_facts", {}).update(network_facts(module))

    module.exit_json(**result)


if __name__ == "__main__":
    main()
