# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: docker_container_change
short_description: Say what community.docker.docker_container did to a container, from its own result
version_added: 0.1.0
description:
  - Reads the registered result of a C(community.docker.docker_container) task run with C(diff) on (task keyword
    C(diff) set to true), in check mode or not, and names what the module did or would do to the container.
  - V(pending) where the task was skipped; V(unchanged) where it changed nothing; V(created) where there was no
    container; V(recreated) where a setting other than a network differed (the module recreates the container, or
    updates it in place, which this filter counts the same); V(started) where the container was stopped;
    V(reconnected) where only a network connection was missing (the module connects the running container
    again and does not restart it, as when its network was removed and made again); V(changed) otherwise.
  - Pure. A daemon in a V(created), V(recreated) or V(started) container started with the files of this run.
options:
  _input:
    description: The registered result of the docker_container task.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: What happened to the container
  ansible.builtin.set_fact:
    container_change: "{{ container_result | hpclab.cluster.docker_container_change }}"
"""

RETURN = r"""
_value:
  description: One of V(pending), V(unchanged), V(created), V(recreated), V(started), V(reconnected), V(changed).
  type: str
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def docker_container_change(result):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(result, Mapping):
        raise AnsibleFilterError(f"docker_container_change: expected a registered result, got {type(result).__name__}")
    if result.get("skipped"):
        return "pending"
    if not result.get("changed"):
        return "unchanged"
    diff = result.get("diff")
    if not isinstance(diff, Mapping):
        raise AnsibleFilterError("docker_container_change: the result has no diff; run the task with `diff: true`")
    before = diff.get("before") or {}
    if before.get("exists") is False:
        return "created"
    keys = set()
    for difference in diff.get("differences") or []:
        keys.update(difference)
    if keys - {"network_differences"}:
        return "recreated"
    if before.get("running") is False:
        return "started"
    if keys:
        return "reconnected"
    return "changed"


class FilterModule:
    """What docker_container did."""

    def filters(self):
        return {"docker_container_change": docker_container_change}
