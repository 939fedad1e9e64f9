# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: nfs_ganesha_volume_problems
short_description: Which volumes the nfs_ganesha role exports but cannot serve, as found on the node
version_added: 0.2.0
description:
  - The nfs_ganesha role reads each exported volume with M(hpclab.cluster.gluster_volume) in check mode (only
    gluster's read commands) before it sets the volume options Ganesha needs. This filter turns those reads into
    problems, each naming the host, the exports, the volume and the fix; an empty list means the role may go on.
  - "The role never starts or stops a volume: whether a volume runs is for the glusterfs role's
    C(glusterfs_volumes[].state) (or an admin) to decide. NFS-Ganesha serves an export only while its volume is
    started, so a volume that is stopped, or created and never started, is a problem; so is a volume that does not
    exist."
  - "In check mode neither is a problem: an earlier play of the same run (the glusterfs role) may create or start the
    volume, and in check mode it did not; the real run checks again."
options:
  _input:
    description: The C(results) of the loop over the exported volumes (each with C(item), the volume's name, and
      C(volume), what the module read; C(volume) empty where the volume does not exist). Skipped results are ignored.
    type: list
    elements: dict
    required: true
  exports:
    description: C(nfs_ganesha_exports), for the messages.
    type: list
    elements: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  check_mode:
    description: Whether the run is in check mode (C(ansible_check_mode)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check that every exported volume is started
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ __volumes.results | hpclab.cluster.nfs_ganesha_volume_problems(
           exports=nfs_ganesha_exports, host=inventory_hostname, check_mode=ansible_check_mode) }}
"""

RETURN = r"""
_value:
  description: One message per volume that cannot be served; empty when there is none.
  type: list
  elements: str
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# gluster's statusStr, lower case, as the module returns it (module_utils/_gluster.py, STATUS_NAMES).
NOT_STARTED = {
    "stopped": "is stopped",
    "created": "was created but never started",
}


def _exports_of(exports, volume):
    """'nfs_ganesha_exports[0] (pseudo /gv0)' for every export of VOLUME, joined."""
    named = [
        f"nfs_ganesha_exports[{index}] (pseudo {export.get('pseudo')})"
        for index, export in enumerate(exports)
        if isinstance(export, Mapping) and export.get("volume") == volume
    ]
    return ", ".join(named) or "nfs_ganesha_exports"


def nfs_ganesha_volume_problems(results, exports, host, check_mode=False):
    """Filter entry point: see DOCUMENTATION."""
    if isinstance(results, (str, bytes, Mapping)) or not hasattr(results, "__iter__"):
        raise AnsibleFilterError(f"nfs_ganesha_volume_problems: input must be the loop's results list, got {results!r}")
    if check_mode:
        return []
    exports = list(exports or [])
    problems = []
    for result in results:
        if not isinstance(result, Mapping) or result.get("skipped"):
            continue
        name = result.get("item")
        volume = result.get("volume") or {}
        where = _exports_of(exports, name)
        if not volume:
            problems.append(
                f"{host}: {where}: volume {name} does not exist. Fix: create it first (glusterfs_volumes of the "
                "glusterfs role, which playbooks/storage.yml runs before this role), or name an existing volume."
            )
            continue
        status = str(volume.get("status", "")).lower()
        if status != "started":
            state = NOT_STARTED.get(status, f"is {status or 'in an unknown state'}")
            problems.append(
                f"{host}: {where}: volume {name} {state}, and NFS-Ganesha serves a volume only while it is started; "
                f"this role never starts or stops a volume. Fix: start it where its state is decided "
                f"(glusterfs_volumes[].state: started for the glusterfs role, or 'gluster volume start {name}'), "
                "or remove its exports from nfs_ganesha_exports."
            )
    return problems


class FilterModule:
    """The nfs_ganesha role's check of the exported volumes as found."""

    def filters(self):
        return {"nfs_ganesha_volume_problems": nfs_ganesha_volume_problems}
