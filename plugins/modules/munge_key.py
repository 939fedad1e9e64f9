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
  - munged reads its key only when it starts. Restart it when this module reports C(key_written), for
    example with a handler notified by this task.
author:
  - hpclab.cluster contributors (@hpclab)
extends_documentation_fragment:
  - hpclab.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Reports what would change and writes nothing.
  diff_mode:
    support: full
    details: The diff shows fingerprints, owner, group and mode, never the key.
  idempotent:
    support: full
    details: A second run with the same key changes nothing.
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

- name: Install the cluster key; munged reads it when it starts
  hpclab.cluster.munge_key:
    content: "{{ munge_key }}"
  no_log: true
  notify: Restart munge

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
"""

import grp
import os
import pwd
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.hpclab.cluster.plugins.module_utils._munge import (
    MungeKeyError,
    decode_key,
    fingerprint,
    plan_key,
)


def id_name(lookup, ident: int) -> str:
    """The name of a uid or gid (LOOKUP is pwd.getpwuid or grp.getgrgid), or the number when it has none."""
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def read_file(path: str) -> tuple[os.stat_result, bytes] | None:
    """PATH's stat and content, or None when it does not exist."""
    try:
        st = os.stat(path)
        with open(path, "rb") as handle:
            return st, handle.read()
    except FileNotFoundError:
        return None


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
    """Write RAW to PATH through a temporary file in the key's own directory, 0600 from birth (never
    world-readable, never on another filesystem such as /tmp), given UID, GID and MODE before it replaces
    PATH, so that munged never reads a partial key. The temporary file is removed when anything fails."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.chown(tmp, uid, gid)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
    module.exit_json(**result)


if __name__ == "__main__":
    main()
