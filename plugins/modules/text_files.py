#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: text_files
short_description: Write several small text files in one call, each only where it differs
version_added: 0.1.0
description:
  - Compares each file with the wanted content, owner, group and mode and writes only those that differ,
    atomically (a temporary file in the same directory, given its owner and mode before it replaces the
    old one). A file whose content is right but whose owner, group or mode is not is fixed in place.
  - Does in one remote call what one M(ansible.builtin.copy) task per file does in three (stat, transfer,
    copy), for configuration files that a role renders itself, such as slurm.conf and gres.conf.
author:
  - hpclab.cluster contributors (@hpclab)
attributes:
  check_mode:
    support: full
    description: Reports which files would change and writes nothing.
  diff_mode:
    support: full
    description: A diff per changed file, of its content (and of its owner, group and mode).
  idempotent:
    support: full
    description: A second run with the same contents changes nothing.
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path of the file. Its directory must exist.
        type: path
        required: true
      content:
        description: The whole text of the file.
        type: str
        required: true
      owner:
        description: Owner (name).
        type: str
        default: root
      group:
        description: Group (name).
        type: str
        default: root
      mode:
        description: Mode, as an octal string.
        type: str
        default: "0644"
"""

EXAMPLES = r"""
- name: Write slurm.conf and gres.conf
  hpclab.cluster.text_files:
    files:
      - path: /etc/slurm/slurm.conf
        content: "{{ lookup('ansible.builtin.template', 'slurm.conf.j2') }}"
      - path: /etc/slurm/gres.conf
        content: "{{ gres_text }}"
  register: written

- name: Restart only when gres.conf changed
  ansible.builtin.debug:
    msg: restart
  when: "'/etc/slurm/gres.conf' in written.changed_paths"
"""

RETURN = r"""
changed_paths:
  description: The paths that were (or in check mode would be) written or given other attributes.
  returned: always
  type: list
  elements: str
  sample: [/etc/slurm/slurm.conf]
written_paths:
  description: The paths whose content was (or would be) replaced.
  returned: always
  type: list
  elements: str
  sample: [/etc/slurm/slurm.conf]
"""

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.hpclab.cluster.plugins.module_utils._files import id_name, read_file, write_atomically


def current_state(path: str) -> dict | None:
    """Content and attributes of PATH, or None when it does not exist."""
    found = read_file(path)
    if found is None:
        return None
    st, content = found
    return {"content": content, "uid": st.st_uid, "gid": st.st_gid, "mode": st.st_mode & 0o7777}


def plan_file(current: dict | None, content: bytes, uid: int | None, gid: int | None, mode: int) -> dict:
    """What to do: write the content, and/or fix the attributes (uid/gid None: not known yet, so wrong)."""
    write = current is None or current["content"] != content
    attributes = not write and (current["uid"], current["gid"], current["mode"]) != (uid, gid, mode)
    return {"write": write, "attributes": attributes}


def _ids(owner: str, group: str) -> tuple[int | None, int | None]:
    try:
        uid = pwd.getpwnam(owner).pw_uid
    except KeyError:
        uid = None
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        gid = None
    return uid, gid


def _attributes(uid: int, gid: int, mode: int) -> str:
    return f"owner={id_name(pwd.getpwuid, uid)} group={id_name(grp.getgrgid, gid)} mode={mode:04o}\n"


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "files": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": {
                    "path": {"type": "path", "required": True},
                    "content": {"type": "str", "required": True},
                    "owner": {"type": "str", "default": "root"},
                    "group": {"type": "str", "default": "root"},
                    "mode": {"type": "str", "default": "0644"},
                },
            },
        },
        supports_check_mode=True,
    )
    result = {"changed": False, "changed_paths": [], "written_paths": []}
    diffs = []
    for spec in module.params["files"]:
        path = spec["path"]
        if not os.path.isabs(path):
            module.fail_json(msg=f"path {path!r} is not absolute", **result)
        try:
            mode = int(spec["mode"], 8)
        except ValueError:
            module.fail_json(msg=f"{path}: mode {spec['mode']!r} is not an octal number such as '0644'", **result)
        content = to_bytes(spec["content"], errors="surrogate_or_strict")
        uid, gid = _ids(spec["owner"], spec["group"])
        try:
            current = current_state(path)
        except OSError as exc:
            module.fail_json(msg=f"cannot read {path}: {to_native(exc)}", **result)
        plan = plan_file(current, content, uid, gid, mode)
        if not (plan["write"] or plan["attributes"]):
            continue
        result["changed_paths"].append(path)
        if plan["write"]:
            result["written_paths"].append(path)
        if module._diff:
            before = "" if current is None else to_native(current["content"], errors="surrogate_or_replace")
            after = to_native(content, errors="surrogate_or_replace")
            if plan["attributes"]:
                before, after = _attributes(current["uid"], current["gid"], current["mode"]), f"owner={spec['owner']} group={spec['group']} mode={mode:04o}\n"
            diffs.append({"before": before, "after": after, "before_header": path, "after_header": path})
        if module.check_mode:
            continue
        if uid is None or gid is None:
            module.fail_json(msg=f"{path}: owner {spec['owner']!r} or group {spec['group']!r} does not exist on this host", **result)
        if not os.path.isdir(os.path.dirname(path)):
            module.fail_json(msg=f"{path}: its directory does not exist", **result)
        try:
            if plan["write"]:
                write_atomically(path, content, uid, gid, mode)
            else:
                os.chown(path, uid, gid)
                os.chmod(path, mode)
        except OSError as exc:
            module.fail_json(msg=f"could not write {path}: {to_native(exc)}", **result)
    result["changed"] = bool(result["changed_paths"])
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
