#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: munge_key
short_description: Install the cluster's MUNGE key without exposing it, and never replace a key in use by accident
version_added: 0.1.0
description:
  - Writes a binary MUNGE key given as base64 to O(path), atomically, with a temporary file created
    inside the key's own directory (mode 0600, never world-readable), then sets owner, group and mode.
  - Compares the SHA-256 of the existing key with the desired one. A key that differs is B(not)
    replaced unless O(rotate=true), because other MUNGE and Slurm daemons may still use it.
  - Key material is never returned or printed; only SHA-256 fingerprints are.
  - With O(restart), a key it writes is put into use in the same call - munged reads its key only when
    it starts.
author:
  - hpclab.cluster contributors (@hpclab)
attributes:
  check_mode:
    support: full
    description: Reports what would change and writes nothing.
  diff_mode:
    support: full
    description: The diff shows fingerprints, owner, group and mode, never the key.
  idempotent:
    support: full
    description: A second run with the same key changes nothing.
options:
  content:
    description:
      - The key, base64-encoded. It must decode to 32 to 1024 bytes.
    type: str
    required: true
  path:
    description: Where munged reads its key.
    type: path
    default: /etc/munge/munge.key
  owner:
    description: Owner of the key file.
    type: str
    default: munge
  group:
    description: Group of the key file.
    type: str
    default: munge
  mode:
    description: Mode of the key file, as an octal string.
    type: str
    default: "0400"
  directory_mode:
    description:
      - Also make the key's directory (created when missing, not its parents) belong to O(owner) and
        O(group) with this mode, as an octal string such as C("0700") - in the same call. Unset, the
        directory is left as it is.
    type: str
  rotate:
    description:
      - Replace an existing key that differs from O(content). Without it such a key is left alone and
        the module fails, naming both fingerprints.
    type: bool
    default: false
  restart:
    description:
      - A systemd unit that reads the key when it starts, such as C(munge). When the module writes the
        key, it enables the unit at boot (unless C(systemctl is-enabled) says it is) and restarts it, in
        the same call. When the key is already in place the unit is left alone (start a stopped unit
        with M(ansible.builtin.systemd_service)).
      - Unset, no service is touched.
    type: str
notes:
  - In check mode on a host where the owner or group does not exist yet (the munge package is not
    installed), the module reports the change it would make instead of failing.
"""

EXAMPLES = r"""
- name: Install the cluster key
  hpclab.cluster.munge_key:
    content: "{{ munge_key }}"
  no_log: true

- name: Install the cluster key, its directory 0700 munge:munge in the same call
  hpclab.cluster.munge_key:
    content: "{{ munge_key }}"
    directory_mode: "0700"
  no_log: true

- name: Install the cluster key and restart munged with it when it changed, in one call
  hpclab.cluster.munge_key:
    content: "{{ munge_key }}"
    restart: munge
  no_log: true

- name: Replace a key on purpose (restart every munged and Slurm daemon afterwards)
  hpclab.cluster.munge_key:
    content: "{{ munge_key }}"
    rotate: true
  no_log: true
"""

RETURN = r"""
sha256:
  description: SHA-256 fingerprint of the key now in place (or that would be, in check mode).
  returned: always
  type: str
  sample: 3f1b5c0e4a2d9c8b7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d
previous_sha256:
  description: SHA-256 fingerprint of the key found before, or null when there was none.
  returned: always
  type: str
  sample: null
directory_changed:
  description: Whether the key's directory was (or would be) created or given other owner, group or mode.
  returned: always
  type: bool
  sample: false
key_written:
  description: Whether the key's content was (or would be) replaced.
  returned: always
  type: bool
  sample: true
restarted:
  description: Whether the O(restart) unit was (or would be) enabled and restarted, with the new key.
  returned: always
  type: bool
  sample: true
"""

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.hpclab.cluster.plugins.module_utils._files import id_name, read_file, write_atomically
from ansible_collections.hpclab.cluster.plugins.module_utils._munge import (
    MungeKeyError,
    decode_key,
    fingerprint,
    plan_key,
)


def read_current(path: str) -> dict | None:
    """Fingerprint and attributes of the existing key file, or None."""
    found = read_file(path)
    if found is None:
        return None
    st, raw = found
    return {
        "sha256": fingerprint(raw),
        "owner": id_name(pwd.getpwuid, st.st_uid),
        "group": id_name(grp.getgrgid, st.st_gid),
        "mode": st.st_mode & 0o7777,
    }


def directory_state(path: str) -> dict | None:
    """uid, gid and mode of a directory, or None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if not os.path.isdir(path):
        raise NotADirectoryError(f"{path} exists and is not a directory")
    return {"uid": st.st_uid, "gid": st.st_gid, "mode": st.st_mode & 0o7777}


def ensure_directory(path: str, current: dict | None, uid: int, gid: int, mode: int) -> None:
    """Create PATH (not its parents) when missing, then give it UID, GID and MODE."""
    if current is None:
        os.mkdir(path, 0o700)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def lookup_ids(owner: str, group: str) -> tuple[int, int] | None:
    """uid and gid, or None when either does not exist (yet)."""
    try:
        return pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid
    except KeyError:
        return None


def write_key(path: str, raw: bytes, uid: int, gid: int, mode: int) -> None:
    """Write atomically: the temporary file lives in the key's own directory and is 0600 from birth."""
    write_atomically(path, raw, uid, gid, mode)


def restart_unit(module: AnsibleModule, unit: str, result: dict) -> None:
    """Enable UNIT at boot (unless systemctl says it is) and restart it; fail naming the command and what
    systemctl said. `systemctl enable` of a unit with a SysV script beside it (Debian's munge) runs
    update-rc.d, a third of a second, so a unit already enabled, as the package leaves it, is not enabled again.
    """
    systemctl = module.get_bin_path("systemctl", required=True)
    commands = [[systemctl, "restart", unit]]
    rc, out, _err = module.run_command([systemctl, "is-enabled", unit])
    if rc != 0 or out.strip() != "enabled":
        commands.insert(0, [systemctl, "enable", "--quiet", unit])
    for command in commands:
        rc, out, err = module.run_command(command)
        if rc != 0:
            module.fail_json(
                msg=f"the key is written, but '{' '.join(command[1:])}' failed (rc={rc}): {(err or out).strip()}. "
                f"Fix: see 'journalctl -u {unit}' on this host.",
                rc=rc,
                stdout=out,
                stderr=err,
                **result,
            )


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "content": {"type": "str", "required": True, "no_log": True},
            "path": {"type": "path", "default": "/etc/munge/munge.key"},
            "owner": {"type": "str", "default": "munge"},
            "group": {"type": "str", "default": "munge"},
            "mode": {"type": "str", "default": "0400"},
            "directory_mode": {"type": "str"},
            "rotate": {"type": "bool", "default": False},
            "restart": {"type": "str"},
        },
        supports_check_mode=True,
    )
    params = module.params
    path = params["path"]
    try:
        mode = int(params["mode"], 8)
    except ValueError:
        module.fail_json(msg=f"mode {params['mode']!r} is not an octal number such as '0400'")
    directory = os.path.dirname(path) or "."
    directory_mode = None
    if params["directory_mode"] is not None:
        try:
            directory_mode = int(params["directory_mode"], 8)
        except ValueError:
            module.fail_json(msg=f"directory_mode {params['directory_mode']!r} is not an octal number such as '0700'")
    try:
        raw = decode_key(params["content"])
    except MungeKeyError as exc:
        module.fail_json(msg=f"content {exc}")
    desired = fingerprint(raw)

    ids = lookup_ids(params["owner"], params["group"])
    directory_current = None
    directory_changed = False
    if directory_mode is not None:
        try:
            directory_current = directory_state(directory)
        except NotADirectoryError as exc:
            module.fail_json(msg=str(exc))
        # Without the owner or group yet (check mode before the package is installed), it would change.
        directory_changed = (
            directory_current is None
            or ids is None
            or (directory_current["uid"], directory_current["gid"], directory_current["mode"]) != (ids[0], ids[1], directory_mode)
        )
    current = read_current(path)
    plan = plan_key(current, desired, params["owner"], params["group"], mode, params["rotate"])
    result = {
        "changed": bool(plan["write"] or plan["attributes"] or directory_changed),
        "directory_changed": directory_changed,
        "sha256": desired if not plan["refused"] else current["sha256"],
        "previous_sha256": current["sha256"] if current else None,
        "key_written": plan["write"],
        "restarted": bool(plan["write"] and params["restart"]),
    }
    if module._diff:
        before = dict(current) if current else {}
        if before:
            before["mode"] = f"{before['mode']:04o}"
        after = {"sha256": desired, "owner": params["owner"], "group": params["group"], "mode": f"{mode:04o}"}
        if directory_mode is not None:
            if directory_current is not None:
                before["directory"] = {
                    "owner": id_name(pwd.getpwuid, directory_current["uid"]),
                    "group": id_name(grp.getgrgid, directory_current["gid"]),
                    "mode": f"{directory_current['mode']:04o}",
                }
            after["directory"] = {"owner": params["owner"], "group": params["group"], "mode": f"{directory_mode:04o}"}
        result["diff"] = {"before": before, "after": after, "before_header": path, "after_header": path}
    if plan["refused"]:
        module.fail_json(msg=f"{path}: {plan['refused']}", **result)

    if result["changed"] and not module.check_mode:
        if ids is None:
            module.fail_json(msg=f"owner {params['owner']!r} or group {params['group']!r} does not exist on this host", **result)
        uid, gid = ids
        try:
            if directory_changed:
                ensure_directory(directory, directory_current, uid, gid, directory_mode)
            if plan["write"]:
                write_key(path, raw, uid, gid, mode)
            elif plan["attributes"]:
                os.chown(path, uid, gid)
                os.chmod(path, mode)
        except OSError as exc:
            module.fail_json(msg=f"could not write {path}: {to_native(exc)}", **result)
        if result["restarted"]:
            restart_unit(module, params["restart"], result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
