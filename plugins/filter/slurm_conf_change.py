# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_conf_change
short_description: Tell what a slurm.conf change needs - nothing, a reconfigure or a restart
version_added: 0.1.0
description:
  - Compares the new text of slurm.conf with the old one and returns what the daemons need so that
    they run with the new file.
  - "V(new) when there was no old file (the daemons are started, not restarted);
    V(none) when only comments, blank lines, spacing, key case or line order changed;
    V(restart) when the node set changed (any C(NodeName=) line) or a key changed that
    C(scontrol reconfigure) does not apply (slurm.conf(5) and scontrol(1) reconfigure, e.g.
    C(SlurmctldHost), C(ProctrackType), C(SelectType), C(StateSaveLocation), ports): restart slurmctld, then
    every slurmd;
    V(reconfigure) for any other change (partitions, timeouts, scheduling parameters)."
  - Slurm 22.05 needs the restart for a changed node set; C(scontrol reconfigure) then makes slurmctld
    exit with "MaxNodeCount has changed ... slurmctld must be restarted".
  - Pure. Keys are compared case-insensitively, values as written.
options:
  _input:
    description: The new slurm.conf text.
    type: str
    required: true
  old:
    description: The old slurm.conf text; empty or null when there was no file.
    type: str
  gres_changed:
    description:
      - Whether gres.conf changed too (and lists generic resources). slurmd reads gres.conf only when it
        starts, so a change that would otherwise need V(none) or V(reconfigure) then needs V(restart).
    type: bool
    default: false
  cgroup_changed:
    description:
      - Whether cgroup.conf changed too (and holds settings, not emptied). The cgroup plugins read it when slurmd
        starts them, so, as for O(gres_changed), a change that would otherwise need V(none) or V(reconfigure) then
        needs V(restart).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: What the new slurm.conf needs
  ansible.builtin.set_fact:
    slurm_conf_needs: "{{ new_text | hpclab.cluster.slurm_conf_change(old_text, gres_changed=gres_conf_changed) }}"

# "ClusterName=c\nNodeName=n[1-2] CPUs=2\n" | hpclab.cluster.slurm_conf_change("")
# => "new"
# "# v2\nClusterName=c\n" | hpclab.cluster.slurm_conf_change("# v1\nclustername=c\n")
# => "none"
# "NodeName=n[1-3] CPUs=2\n" | hpclab.cluster.slurm_conf_change("NodeName=n[1-2] CPUs=2\n")
# => "restart"
# "PartitionName=p Nodes=n1 MaxTime=60\n" | hpclab.cluster.slurm_conf_change("PartitionName=p Nodes=n1 MaxTime=30\n")
# => "reconfigure"
# "ClusterName=c\n" | hpclab.cluster.slurm_conf_change("ClusterName=c\n", gres_changed=true)
# => "restart"
# "ClusterName=c\n" | hpclab.cluster.slurm_conf_change("ClusterName=c\n", cgroup_changed=true)
# => "restart"
"""

RETURN = r"""
_value:
  description: One of V(new), V(none), V(reconfigure), V(restart).
  type: str
"""

from ansible.errors import AnsibleFilterError

# Keys whose change `scontrol reconfigure` does not apply: slurm.conf(5) and scontrol(1) of
# Slurm 22.05 ("requires a restart of slurmctld / all daemons"), plus the plugins each daemon loads
# only at start.
RESTART_KEYS = frozenset(
    key.lower()
    for key in (
        "AccountingStorageEnforce", "AccountingStorageType", "AuthType", "ClusterName", "CredType",
        "GresTypes", "JobAcctGatherType", "JobContainerType", "LaunchType", "MaxJobCount", "MaxNodeCount",
        "MpiDefault", "PowerPlugin", "ProctrackType", "SchedulerType", "SelectType", "SelectTypeParameters",
        "SlurmctldHost", "SlurmctldParameters", "SlurmctldPidFile", "SlurmctldPort", "SlurmdPidFile",
        "SlurmdPort", "SlurmdSpoolDir", "SlurmUser", "StateSaveLocation", "SwitchType", "TaskPlugin",
        "TopologyPlugin",
    )
)


def _fail(message):
    raise AnsibleFilterError(f"slurm_conf_change: {message}")


def _parse(text, what):
    """slurm.conf text -> (node lines as a set of token tuples, {other line key: tokens})."""
    if text is None:
        return None
    if not isinstance(text, str):
        _fail(f"{what} must be the text of slurm.conf, got {type(text).__name__}")
    nodes = set()
    settings = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = []
        for token in line.split():
            key, sep, value = token.partition("=")
            tokens.append((key.lower(), value) if sep else (token, None))
        first_key, first_value = tokens[0]
        if first_key == "nodename":
            nodes.add(tuple(tokens))
        elif first_key in ("partitionname", "nodeset", "downnodes", "frontendname"):
            settings[(first_key, first_value)] = tuple(tokens)
        else:
            for key, value in tokens:
                settings[(key, None)] = value
    return nodes, settings


def slurm_conf_change(new, old=None, gres_changed=False, cgroup_changed=False):
    """Filter entry point: see DOCUMENTATION."""
    change = _slurm_conf_change(new, old)
    if (gres_changed or cgroup_changed) and change in ("none", "reconfigure"):
        return "restart"
    return change


def _slurm_conf_change(new, old):
    if new is None:
        _fail("the new slurm.conf text is missing")
    new_conf = _parse(new, "the new text")
    if old is None or (isinstance(old, str) and not old.strip()):
        return "new"
    old_conf = _parse(old, "old")
    if new_conf == old_conf:
        return "none"
    if new_conf[0] != old_conf[0]:
        return "restart"
    new_settings, old_settings = new_conf[1], old_conf[1]
    for key in set(new_settings) | set(old_settings):
        if key[0] in RESTART_KEYS and new_settings.get(key) != old_settings.get(key):
            return "restart"
    return "reconfigure"


class FilterModule:
    """What a slurm.conf change needs."""

    def filters(self):
        return {"slurm_conf_change": slurm_conf_change}
