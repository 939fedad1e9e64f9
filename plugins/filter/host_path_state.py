# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: host_path_state
short_description: Compare one path read by the host_info module with what a role wants it to be
version_added: 0.1.0
description:
  - Takes one entry of the C(paths) result of M(hpclab.cluster.host_info) and says whether the path is
    already as wanted, so that a role runs its C(file)/C(copy) task only when something differs.
  - C(missing) - the path does not exist; C(differs) - it is of another type, or a file whose checksum is
    not O(checksum); C(attributes) - type and content are right but owner, group or mode are not;
    C(in place) - nothing to do. Options left out are not compared.
options:
  _input:
    description: One value of host_info's C(paths) (C(exists), C(type), C(owner), C(group), C(mode), C(checksum)).
    type: dict
    required: true
  type:
    description: The wanted type, C(file) or C(directory).
    type: str
    default: file
  checksum:
    description: The wanted checksum of a file, with the algorithm host_info was asked for.
    type: str
  owner:
    description: The wanted owner (a name, or a number for an id without a name).
    type: raw
  group:
    description: The wanted group.
    type: raw
  mode:
    description: The wanted mode, four octal digits.
    type: str
"""

EXAMPLES = r"""
- name: Write slurm.conf only when it is not already right
  ansible.builtin.copy:
    content: "{{ text }}"
    dest: /etc/slurm/slurm.conf
    owner: root
    group: root
    mode: "0644"
  when: >-
    info.paths['/etc/slurm/slurm.conf'] | hpclab.cluster.host_path_state(checksum=text | hash('sha1'),
    owner='root', group='root', mode='0644') != 'in place'
"""

RETURN = r"""
_value:
  description: One of C(missing), C(differs), C(attributes), C(in place).
  type: str
"""

from ansible.errors import AnsibleFilterError


def host_path_state(info, type="file", checksum=None, owner=None, group=None, mode=None):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(info, dict) or "exists" not in info:
        raise AnsibleFilterError(f"host_path_state expects one entry of host_info's paths, got {info!r}")
    if type not in ("file", "directory"):
        raise AnsibleFilterError(f"host_path_state: type must be 'file' or 'directory', got {type!r}")
    if not info["exists"]:
        return "missing"
    if info.get("type") != type or (type == "file" and checksum is not None and info.get("checksum") != checksum):
        return "differs"
    for key, wanted in (("owner", owner), ("group", group), ("mode", mode)):
        if wanted is not None and str(info.get(key)) != str(wanted):
            return "attributes"
    return "in place"


class FilterModule:
    """Filters over host_info results."""

    def filters(self):
        return {"host_path_state": host_path_state}
