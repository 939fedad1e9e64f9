# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_partition_lines
short_description: Build slurm.conf PartitionName lines from a dict of partitions
version_added: 0.1.0
description:
  - Takes a dict that maps each partition's name to its hosts and returns one slurm.conf line per
    partition, in the dict's order,
    V(PartitionName=NAME Nodes=HOSTLIST Default=YES|NO MaxTime=TIME State=UP), with the hosts
    compressed as P(hpclab.cluster.slurm_hostlist_compress#filter) does.
  - Exactly one partition gets C(Default=YES), the one named by O(default), else the first.
  - "Slurm's keyword V(ALL) can stand for the hosts: V({\"batch\": [\"ALL\"]})."
  - Fails, naming the bad value, on an empty dict, a partition with no hosts, a bad partition name
    (empty, C(DEFAULT) which slurm.conf reserves for defaults, whitespace, C(=) or C(,)), an unknown
    O(default) or a O(max_time) Slurm would not read.
options:
  _input:
    description:
      - Partition name to hosts. Hosts are a list of names or hostlist expressions, or one hostlist
        expression string.
    type: dict
    required: true
  default:
    description: The partition that gets C(Default=YES). Default the first partition of the dict.
    type: str
  max_time:
    description:
      - C(MaxTime=) of every partition, in Slurm's format (V(UNLIMITED), V(INFINITE), minutes,
        V(MM:SS), V(HH:MM:SS), V(D-HH), V(D-HH:MM), V(D-HH:MM:SS)); an integer is minutes.
    type: raw
    default: UNLIMITED
"""

EXAMPLES = r"""
- name: Partitions for slurm.conf
  ansible.builtin.set_fact:
    slurm_partition_lines: >-
      {{ {'batch': groups['slurm_workers'], 'gpu': groups['slurm_gpu_workers']}
         | hpclab.cluster.slurm_partition_lines(default='batch', max_time='7-00:00:00') }}

# {"batch": ["n01", "n02", "n03"], "gpu": ["gpu1", "gpu2"]} | hpclab.cluster.slurm_partition_lines
# => ["PartitionName=batch Nodes=n[01-03] Default=YES MaxTime=UNLIMITED State=UP",
#     "PartitionName=gpu Nodes=gpu[1-2] Default=NO MaxTime=UNLIMITED State=UP"]
# {"debug": "n[01-02]", "long": ["n03"]} | hpclab.cluster.slurm_partition_lines(default="long", max_time=60)
# => ["PartitionName=debug Nodes=n[01-02] Default=NO MaxTime=60 State=UP",
#     "PartitionName=long Nodes=n03 Default=YES MaxTime=60 State=UP"]
"""

RETURN = r"""
_value:
  description: slurm.conf lines, one per partition in the input's order, without a trailing newline.
  type: list
  elements: str
"""

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

# Slurm's time_str2mins (src/common/parse_time.c): minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes, days-hours:minutes:seconds.
_MAX_TIME_RE = re.compile(r"^(\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+|\d+-\d+:\d+|\d+-\d+:\d+:\d+)$")
_NAME_FORBIDDEN = set(" \t\n=,#")


def _fail(message):
    raise AnsibleFilterError(f"slurm_partition_lines: {message}")


def _max_time(value):
    if isinstance(value, bool):
        _fail(f"max_time {value!r} is not a Slurm time")
    if isinstance(value, int):
        if value < 0:
            _fail(f"max_time {value!r} is negative")
        return str(value)
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in ("UNLIMITED", "INFINITE") or _MAX_TIME_RE.match(text):
            return text
    _fail(f"max_time {value!r} is not a Slurm time (UNLIMITED, minutes, HH:MM:SS, D-HH:MM:SS ...)")
    return None


def _check_name(name):
    if not isinstance(name, str) or not name.strip():
        _fail(f"partition name {name!r} must be a non-empty string")
    if name.upper() == "DEFAULT":
        _fail(f"partition name {name!r} is reserved: PartitionName=DEFAULT sets defaults in slurm.conf")
    if _NAME_FORBIDDEN & set(name):
        _fail(f"partition name {name!r} contains whitespace, '=', ',' or '#'")


def slurm_partition_lines(partitions, default=None, max_time="UNLIMITED"):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._hostlist import HostlistError, compress_hostlist
    if not isinstance(partitions, Mapping):
        _fail(f"input must be a dict of partition name to hosts, got {type(partitions).__name__}")
    if not partitions:
        _fail("no partitions given")
    for name in partitions:
        _check_name(name)
    if default is None:
        default = next(iter(partitions))
    elif default not in partitions:
        _fail(f"default partition {default!r} is not one of {list(partitions)!r}")
    time_text = _max_time(max_time)
    lines = []
    for name, hosts in partitions.items():
        if hosts is None or (isinstance(hosts, str) and not hosts.strip()) or (not isinstance(hosts, str) and not hosts):
            _fail(f"partition {name!r} has no hosts")
        try:
            hostlist = compress_hostlist([hosts] if isinstance(hosts, str) else hosts)
        except HostlistError as exc:
            _fail(f"partition {name!r}: {exc}")
        flag = "YES" if name == default else "NO"
        lines.append(f"PartitionName={name} Nodes={hostlist} Default={flag} MaxTime={time_text} State=UP")
    return lines


class FilterModule:
    """slurm.conf partition lines."""

    def filters(self):
        return {"slurm_partition_lines": slurm_partition_lines}
