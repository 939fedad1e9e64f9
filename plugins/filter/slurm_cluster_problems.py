# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_cluster_problems
short_description: What is wrong with the Slurm layer's input, for the whole cluster, before any change
version_added: 0.2.0
description:
  - The slurm_master role's checks of the whole cluster, run on the controller before any host
    changes. Returns a list of problems, each naming the host or hosts, the variable and the fix; an
    empty list means the role may go on.
  - "Checks: the worker group has hosts and each has hardware facts; every node's inventory name can
    be its Slurm node name (letters, digits, C(_) and C(-), not DEFAULT or ALL) and, in native mode, is
    its short host name; every worker is in a partition, every partition has hosts, only workers are in
    partitions and the default partition exists; the cluster users are well formed, with no name or
    UID twice; each worker's C(slurm_worker_gpus) is C({count, type, files}) with as many files as
    GPUs; the accounting database settings; the shared home exists where users are declared; every
    node holds the MUNGE key, or gets it later in the run (O(munge_hosts))."
  - "Pure: the role reads the hosts (facts, C(stat) of the MUNGE key and of the shared home) and passes
    what it read."
options:
  _input:
    description:
      - Node name to what the role read of it, for the controller and every worker.
      - "Keys: C(hostname) (C(ansible_facts.hostname), or null without facts), C(memtotal_mb) (or null),
        C(munge_key) (whether C(/etc/munge/munge.key) exists), C(gpus) (its C(slurm_worker_gpus), or empty)."
    type: dict
    required: true
  controller:
    description: The controller's inventory name.
    type: str
    required: true
  workers:
    description: The hosts of the worker group, in inventory order.
    type: list
    elements: str
    required: true
  worker_group:
    description: The worker group's name (C(slurm_master_worker_group)), for the messages.
    type: str
    default: slurm_worker
  mode:
    description: V(container) or V(native); only native mode needs node names equal to host names.
    type: str
    default: container
  partitions:
    description: C(slurm_master_partitions) resolved to host names (P(hpclab.cluster.slurm_partition_hosts#filter)).
    type: dict
    required: true
  default_partition:
    description: C(slurm_master_default_partition); empty for the first partition.
    type: str
    default: ""
  users:
    description: C(slurm_master_users).
    type: list
    elements: dict
    default: []
  accounting:
    description:
      - The accounting settings when accounting is on (keys C(db_name), C(db_user), C(db_password),
        C(db_password_file)); empty or null when it is off.
    type: dict
  shared_home:
    description: C(slurm_master_shared_home), for the message.
    type: str
    default: ""
  shared_home_exists:
    description: Whether O(shared_home) is a directory on the controller (checked only when there are users).
    type: bool
    default: true
  munge_hosts:
    description: Hosts that get the MUNGE key later in this run; a missing key there is not a problem.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Check the whole cluster
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __problems: >-
      {{ nodes | hpclab.cluster.slurm_cluster_problems(controller=inventory_hostname, workers=groups['slurm_worker'],
           partitions=slurm_master_partitions | hpclab.cluster.slurm_partition_hosts(groups)) }}

# {"c1": {"hostname": "c1", "memtotal_mb": 4000, "munge_key": true},
#  "n1": {"hostname": "n1", "memtotal_mb": 4000, "munge_key": true},
#  "n2": {"hostname": "n2", "memtotal_mb": 4000, "munge_key": false}}
#   | hpclab.cluster.slurm_cluster_problems(controller="c1", workers=["n1", "n2"], partitions={"batch": ["n1"]})
# => ["slurm_master_partitions is wrong: worker 'n2' is in no partition. Fix: ...",
#     "/etc/munge/munge.key is missing on n2. ... Fix: ..."]
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

MUNGE_KEY = "/etc/munge/munge.key"
# What slurm.conf accepts as a NodeName/SlurmctldHost and slurmd finds by its short host name.
NODE_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$")
RESERVED_NAMES = {"default", "all"}
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]*$")
DB_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")
DB_USER = re.compile(r"^[A-Za-z0-9_]{1,32}$")
DB_PASSWORD = re.compile(r"^[A-Za-z0-9._+=@%^:,/-]{12,128}$")


def _hardware(nodes, workers, worker_group):
    if not workers:
        return [f"The inventory group '{worker_group}' (variable slurm_master_worker_group) has no hosts. "
                "Fix: add the slurmd nodes to that group."]
    missing = [w for w in workers if nodes.get(w, {}).get("memtotal_mb") in (None, "")]
    if missing:
        return [f"No hardware facts for {', '.join(missing)} (group slurm_master_worker_group '{worker_group}'): "
                "slurm.conf's NodeName lines are made from them. Fix: gather facts on the workers earlier in the "
                "same run, as playbooks/slurm.yml does."]
    return []


def _names(nodes, controller, workers, worker_group, mode):
    bad = []
    for host in [controller] + list(workers):
        hostname = nodes.get(host, {}).get("hostname")
        if not NODE_NAME.match(host) or host.lower() in RESERVED_NAMES:
            bad.append(host)
        elif mode == "native" and hostname and hostname != host:
            bad.append(host)
    if not bad:
        return []
    return [
        f"{', '.join(repr(h) for h in bad)} cannot be a Slurm node name: the inventory name (inventory_hostname) of "
        f"a host in slurm_master_worker_group '{worker_group}' or of the controller is its NodeName/SlurmctldHost, "
        f"which must match {NODE_NAME.pattern} (no dots, brackets, commas or spaces), must not be DEFAULT or ALL, "
        "and must equal the host's short host name (hostname -s) by which slurmd and slurmctld find themselves. "
        "Fix: name these hosts in the inventory by their short host names (use ansible_host for the address), or "
        "set their host names to match."
    ]


def _partitions(partitions, default_partition, workers, worker_group):
    problems = [] if partitions else ["it has no partition"]
    problems += [f"partition '{name}' has no hosts" for name, hosts in partitions.items() if not hosts]
    listed = list(dict.fromkeys(h for hosts in partitions.values() for h in hosts))
    problems += [f"'{h}' is not a host of the worker group {worker_group} (unknown host, or not a slurmd node)"
                 for h in listed if h not in workers]
    problems += [f"worker '{w}' is in no partition" for w in workers if w not in listed]
    if default_partition and default_partition not in partitions:
        problems.append(f"slurm_master_default_partition '{default_partition}' is not one of them")
    if not problems:
        return []
    return [
        f"slurm_master_partitions is wrong: {'; '.join(problems)}. Fix: map each partition to worker hosts or "
        f"inventory groups of workers, e.g. slurm_master_partitions: {{batch: [{worker_group}]}}, so that every host "
        f"of '{worker_group}' is in at least one partition."
    ]


def _users(users):
    names = [u.get("name", "") if isinstance(u, Mapping) else "" for u in users]
    uids = [str(u.get("uid", "")) if isinstance(u, Mapping) else "" for u in users]
    gids = [str(u.get("gid", "")) if isinstance(u, Mapping) else "" for u in users]
    if (all(isinstance(n, str) and USER_NAME.match(n) for n in names) and all(i.isdigit() for i in uids + gids)
            and len(set(names)) == len(names) and len(set(uids)) == len(uids)):
        return []
    return [
        "slurm_master_users (default hpclab_cluster_users) must be a list of {name, uid, gid, groups} with "
        "lower-case POSIX names, numeric uid and gid, no name or uid twice; got "
        f"{', '.join(str(n) or '?' for n in names)}. Fix: e.g. hpclab_cluster_users: [{{name: alice, uid: 2001, gid: 2001}}]."
    ]


def _gpus_ok(gpus):
    if not gpus:
        return True
    if not isinstance(gpus, Mapping) or not str(gpus.get("count", "")).isdigit():
        return False
    files = gpus.get("files")
    return files is None or (isinstance(files, list) and len(files) == int(gpus["count"]))


def _gpus(nodes, workers):
    bad = [w for w in workers if not _gpus_ok(nodes.get(w, {}).get("gpus"))]
    if not bad:
        return []
    return [
        f"slurm_worker_gpus of {', '.join(bad)} is not {{count: N, type: WORD, files: [N device files]}}. Fix: e.g. "
        "slurm_worker_gpus: {count: 2, type: a100, files: [/dev/nvidia0, /dev/nvidia1]} (files default to "
        "/dev/nvidia0..N-1)."
    ]


def _accounting(accounting):
    if not accounting:
        return []
    password = accounting.get("db_password") or ""
    if (DB_NAME.match(str(accounting.get("db_name", ""))) and DB_USER.match(str(accounting.get("db_user", "")))
            and (password == "" or DB_PASSWORD.match(str(password)))
            and str(accounting.get("db_password_file", "")).startswith("/")):
        return []
    return [
        f"The accounting settings are wrong: slurm_master_accounting_db_name '{accounting.get('db_name')}' and "
        f"slurm_master_accounting_db_user '{accounting.get('db_user')}' must be letters, digits and '_'; "
        "slurm_master_accounting_db_password (not shown) must be empty (generated once) or 12 to 128 of letters, "
        "digits and . _ + = @ % ^ : , / - (it goes into SQL and slurmdbd.conf); "
        "slurm_master_accounting_db_password_file must be an absolute path. Fix: correct these variables, or "
        "leave the password empty."
    ]


def _home(controller, users, shared_home, shared_home_exists):
    if not users or shared_home_exists:
        return []
    return [
        f"{shared_home} (variable slurm_master_shared_home, from hpclab_shared_path) is not a directory on "
        f"{controller}, so the users' homes would not be shared. Fix: run the storage layer first "
        "(playbooks/storage.yml mounts the shared volume with its home directory), or point "
        "slurm_master_shared_home at the shared home directory."
    ]


def _munge(nodes, controller, workers, munge_hosts):
    missing = [h for h in [controller] + list(workers)
               if not nodes.get(h, {}).get("munge_key") and h not in munge_hosts]
    if not missing:
        return []
    names = ", ".join(missing)
    return [
        f"{MUNGE_KEY} is missing on {names}. Every Slurm daemon authenticates with the cluster's MUNGE key. "
        f"Fix: add {names} to the munge inventory group (variable munge_group) and run the munge role first "
        "(playbooks/munge.yml; site.yml runs it before Slurm)."
    ]


def slurm_cluster_problems(nodes, controller, workers, partitions, worker_group="slurm_worker", mode="container",
                           default_partition="", users=None, accounting=None, shared_home="",
                           shared_home_exists=True, munge_hosts=None):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(nodes, Mapping) or not all(isinstance(v, Mapping) for v in nodes.values()):
        raise AnsibleFilterError(f"slurm_cluster_problems: the input must map each node to what was read of it, got {nodes!r}")
    if not isinstance(partitions, Mapping):
        raise AnsibleFilterError(f"slurm_cluster_problems: partitions must be resolved to host lists, got {partitions!r}")
    users = list(users or [])
    workers = list(workers or [])
    problems = _hardware(nodes, workers, worker_group)
    problems += _names(nodes, controller, workers, worker_group, mode)
    problems += _partitions(partitions, default_partition or "", workers, worker_group)
    problems += _users(users)
    problems += _gpus(nodes, workers)
    problems += _accounting(accounting)
    problems += _home(controller, users, shared_home, shared_home_exists)
    problems += _munge(nodes, controller, workers, list(munge_hosts or []))
    return problems


class FilterModule:
    """The Slurm layer's whole-cluster checks."""

    def filters(self):
        return {"slurm_cluster_problems": slurm_cluster_problems}
