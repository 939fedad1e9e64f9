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
  - "Rules: (1) the worker group has hosts and (2) each has hardware facts; (3) every node's inventory
    name can be its Slurm node name (letters, digits, C(_) and C(-), not DEFAULT or ALL) and, in native
    mode, is its short host name; (4) every worker is in a partition, every partition has hosts, only
    workers are in partitions and the default partition exists; (5) the cluster users are well formed,
    with no name or UID twice; (6) each worker's C(slurm_worker_gpus) is C({count, type, files}) with as
    many files as GPUs; (7) the accounting database settings; (8) the shared home exists where users
    are declared; (9) every node holds the MUNGE key, or gets it later in the run (O(munge_hosts))."
  - "Rules added for issue 18, each applied only when its argument is given: (10) every node name is
    at most 63 characters, a host name's limit (54 for the controller in container mode with
    accounting, whose C(HOST-slurmdbd) container is named after it); (11) partition names are letters,
    digits, C(_), C(.) and C(-), not DEFAULT; (12) O(cluster_name) is 1 to 40 lower-case letters,
    digits, C(_) and C(-) (Slurm lowercases C(ClusterName) and MariaDB limits the table names made
    from it); (13) O(max_time) is a Slurm time other than zero; (14) O(memory_fraction) is above 0
    and at most 1; (15) a worker's GPU type is one word and its device files are canonical paths
    under C(/dev), none twice; (16) users' names are at most 32 characters, their UIDs and GIDs are
    not root's, nobody's or the slurm user's, their groups are group names; (17) O(shared_home) is a
    canonical absolute path a bind mount can hold; (18) every key of O(config) and O(dbd_config) is
    a key of Slurm 22.05's slurm.conf or slurmdbd.conf, spelled as Slurm documents it; (19) neither
    sets a key the role sets from its own variables; (20) every value is one line without C(#);
    (21) integer and boolean keys have values Slurm's parser reads; (22) ports are 1..65535;
    (23) file and directory keys are canonical absolute paths, and in container mode
    C(SlurmdSpoolDir) is C(/var/spool/slurmd), where the spool is mounted; (24) timeouts are at least 1
    second; (25) no two daemons that share an address share a port; (26) with accounting,
    C(AccountingStoragePort) and C(DbdPort) are 6819, where the role waits for slurmdbd, and in
    container mode C(StoragePort) is 3306, where MariaDB listens; (27) the container mode host
    directories and the database password file are canonical paths, none inside another;
    (28) the image's slurm UID is not root's, nobody's or a cluster user's; (29) the base image is an
    image reference, the network a Docker name, the apt proxy C(auto), empty or an http(s) URL;
    (30) container addresses are IPv4 addresses, none twice; (31) package lists are Debian package
    names and hold the daemons' packages; (32) in container mode the controller is not also a worker
    (its slurmctld and slurmd containers would both be named after it)."
  - "Rule added for issue 19: (33) where there are users and O(shared_home_hosts) is given, every node
    (the controller and each worker) is among the hosts that mount the shared volume, so that the
    users' homes exist wherever a job runs."
  - "Rule added for issue 19, part 5: (34) O(cgroup) is V(auto), V(true) or V(false); with V(true), the cluster
    runs in native mode and every worker can have Slurm confine its jobs with cgroups (its C(cgroup) read, as
    filter P(hpclab.cluster.slurm_cgroup_plan#filter) decides it): each worker that cannot is named with the reason."
  - "Rule added for issue 54: (35) no cluster user takes a name the collection's services use (munge, slurm, mysql,
    prometheus, nginx, the LLM service user, Docker's group, root, nobody...), nor the name of a system account or
    group of the controller (O(accounts), its ID below O(min_uid)), nor a UID or GID below O(min_uid), nor a UID
    another account of the controller has: C(ansible.builtin.user) would rewrite that account. Each worker's
    P(hpclab.cluster.slurm_worker_problems#filter) judges its own node's accounts the same way (the collection's
    C(plugin_utils/_users.py))."
  - "Slurm 22.05 has no option to check a configuration file: C(slurmctld -t) existed only in
    18.08's pre-releases (SchedMD/slurm commit 3795111063 removed it), and slurmd and slurmdbd never
    had one. So these rules check what the role writes into slurm.conf and slurmdbd.conf."
  - "Pure: the role reads the hosts (facts, C(stat) of the MUNGE key and of the shared home) and passes
    what it read."
options:
  _input:
    description:
      - Node name to what the role read of it, for the controller and every worker.
      - "Keys: C(hostname) (C(ansible_facts.hostname), or null without facts), C(memtotal_mb) (or null),
        C(munge_key) (whether C(/etc/munge/munge.key) exists), C(gpus) (its C(slurm_worker_gpus), or empty),
        C(cgroup) (its C(slurm_cgroup) fact from M(hpclab.cluster.node_hardware_facts), or null; read by rule 34)."
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
  shared_home_hosts:
    description:
      - C(slurm_master_shared_home_hosts), the hosts that mount the shared volume holding O(shared_home)
        (the playbooks pass the storage layer's brick and client hosts); null skips rule 33.
    type: list
    elements: str
  cgroup:
    description: C(slurm_master_cgroup) (V(auto), V(true) or V(false)); null skips rule 34.
    type: raw
  accounts:
    description:
      - The controller's account databases as read before any change, C({passwd, group}), each the text of
        C(getent passwd) and C(getent group); null judges rule 35 on the names and IDs only.
    type: dict
  min_uid:
    description: C(slurm_master_users_min_uid), the first UID and GID of a cluster user (rule 35); null judges
      no ID against a minimum (the accounts of O(accounts) against Debian's, 1000).
    type: raw
  cluster_name:
    description: C(slurm_master_cluster_name); null skips rule 12.
    type: str
  max_time:
    description: C(slurm_master_max_time); null skips rule 13.
    type: raw
  memory_fraction:
    description: C(slurm_master_memory_fraction); null skips rule 14.
    type: raw
  config:
    description: C(slurm_master_config), the keys the inventory sets over the role's; null skips rules 18 to 26 for it.
    type: dict
  dbd_config:
    description: C(slurm_master_dbd_config); checked only with O(accounting).
    type: dict
  timeouts:
    description: Role variables that are seconds to wait, by name (C(slurm_master_start_timeout), ...), for rule 24.
    type: dict
  container:
    description:
      - "Container mode settings by variable name, for rules 27 to 30 (checked only in container mode):
        C(slurm_master_container_conf_dir), C(slurm_master_container_state_dir),
        C(slurm_master_accounting_container_conf_dir), C(slurm_master_accounting_container_db_dir) (both only
        with O(accounting)), C(slurm_master_container_slurm_uid), C(slurm_master_container_base_image),
        C(slurm_master_container_network), C(slurm_master_container_apt_proxy),
        C(slurm_master_container_addresses)."
    type: dict
  packages:
    description:
      - "Package lists by variable name, for rule 31: C(slurm_master_packages) (must hold slurmctld),
        C(slurm_master_mpi_packages), C(slurm_master_accounting_packages) (native mode with O(accounting): must
        hold mariadb-server, slurmdbd and slurm-wlm-mysql-plugin)."
    type: dict
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

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

MUNGE_KEY = "/etc/munge/munge.key"
# What slurm.conf accepts as a NodeName/SlurmctldHost and slurmd finds by its short host name.
NODE_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$")
RESERVED_NAMES = {"default", "all"}
DB_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")
DB_USER = re.compile(r"^[A-Za-z0-9_]{1,32}$")
DB_PASSWORD = re.compile(r"^[A-Za-z0-9._+=@%^:,/-]{12,128}$")


def _hardware(nodes, workers, worker_group):
    """Rules 1 and 2."""
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
    """Rule 3."""
    bad = []
    for host in [controller] + list(workers):
        hostname = nodes.get(host, {}).get("hostname")
        if not NODE_NAME.fullmatch(host) or host.lower() in RESERVED_NAMES:
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
    """Rule 4."""
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
    """Rule 5."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import users_well_formed
    if users_well_formed(users):
        return []
    names = [u.get("name", "") if isinstance(u, Mapping) else "" for u in users]
    return [
        "slurm_master_users (default hpclab_cluster_users) must be a list of {name, uid, gid, groups} with "
        "lower-case POSIX names, numeric uid and gid, no name or uid twice; got "
        f"{', '.join(str(n) or '?' for n in names)}. Fix: e.g. hpclab_cluster_users: [{{name: alice, uid: 2001, gid: 2001}}]."
    ]


def _gpus(nodes, workers):
    """Rule 6."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import gpus_shape_ok
    bad = [w for w in workers if not gpus_shape_ok(nodes.get(w, {}).get("gpus"))]
    if not bad:
        return []
    return [
        f"slurm_worker_gpus of {', '.join(bad)} is not {{count: N, type: WORD, files: [N device files]}}. Fix: e.g. "
        "slurm_worker_gpus: {count: 2, type: a100, files: [/dev/nvidia0, /dev/nvidia1]} (files default to "
        "/dev/nvidia0..N-1)."
    ]


def _accounting(accounting):
    """Rule 7."""
    if not accounting:
        return []
    password = accounting.get("db_password") or ""
    if (DB_NAME.fullmatch(str(accounting.get("db_name", ""))) and DB_USER.fullmatch(str(accounting.get("db_user", "")))
            and (password == "" or DB_PASSWORD.fullmatch(str(password)))
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
    """Rule 8."""
    if not users or shared_home_exists:
        return []
    return [
        f"{shared_home} (variable slurm_master_shared_home, from hpclab_shared_path) is not a directory on "
        f"{controller}, so the users' homes would not be shared. Fix: run the storage layer first "
        "(playbooks/storage.yml mounts the shared volume with its home directory), or point "
        "slurm_master_shared_home at the shared home directory."
    ]


def _munge(nodes, controller, workers, munge_hosts):
    """Rule 9."""
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


# --- Rules 10 to 31 (issue 18): what would reach slurm.conf, slurmdbd.conf, the images and the containers ---

# A node's name is its host name (native mode) or its container's (container mode): at most 63 characters
# (RFC 1123 labels). The controller's slurmdbd container is named HOST-slurmdbd (vars/container.yml).
HOST_NAME_MAX = 63
DBD_CONTAINER_SUFFIX = "-slurmdbd"
PARTITION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# slurm.conf(5) of 22.05, ClusterName: upper case letters are silently mapped to lower case, and the name
# must be 40 characters or less for MySQL/MariaDB's table names. It becomes part of SQL table names and of
# sacctmgr's command line: letters, digits, '_' and '-'.
CLUSTER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
CLUSTER_NAME_MAX = 40
# time_str2secs (src/common/parse_time.c) adds the parts up in a C int; beyond it MaxTime is a "Bad value".
MAX_TIME_SECONDS = 2**31 - 1
# The keys of Slurm 22.05.8's slurm.conf and slurmdbd.conf and how its parser reads each value:
# src/common/read_config.c slurm_conf_options[] and src/slurmdbd/read_config.c options[] at tag
# slurm-22-05-8-1 (SchedulerAuth, defunct, left out). "line": a line of its own, which the role writes.
# Keys are matched without regard to case by Slurm; the role's dict is not, so a second spelling would
# write the key twice.
SLURM_CONF_KEYS = {
    "AccountingStorageBackupHost": "str", "AccountingStorageEnforce": "str", "AccountingStorageExternalHost": "str",
    "AccountingStorageHost": "str", "AccountingStorageLoc": "str", "AccountingStorageParameters": "str",
    "AccountingStoragePass": "str", "AccountingStoragePort": "u16", "AccountingStorageTRES": "str",
    "AccountingStorageType": "str", "AccountingStorageUser": "str", "AccountingStoreFlags": "str",
    "AccountingStoreJobComment": "bool", "AcctGatherEnergyType": "str", "AcctGatherFilesystemType": "str",
    "AcctGatherInfinibandType": "str", "AcctGatherInterconnectType": "str", "AcctGatherNodeFreq": "u16",
    "AcctGatherProfileType": "str", "AllowSpecResourcesUsage": "bool", "AuthAltParameters": "str",
    "AuthAltTypes": "str", "AuthInfo": "str", "AuthType": "str", "BackupAddr": "str", "BackupController": "str",
    "BatchStartTimeout": "u16", "BcastExclude": "str", "BcastParameters": "str", "BurstBufferParameters": "str",
    "BurstBufferType": "str", "CliFilterPlugins": "str", "ClusterName": "str", "CommunicationParameters": "str",
    "CompleteWait": "u16", "ControlAddr": "str", "ControlMachine": "str", "CoreSpecPlugin": "str",
    "CpuFreqDef": "str", "CpuFreqGovernors": "str", "CredType": "str", "CryptoType": "str", "DebugFlags": "str",
    "DefMemPerCPU": "u64", "DefMemPerNode": "u64", "DependencyParameters": "str", "DisableRootJobs": "bool",
    "DownNodes": "line", "EioTimeout": "u16", "EnforcePartLimits": "str", "Epilog": "str", "EpilogMsgTime": "u32",
    "EpilogSlurmctld": "str", "ExtSensorsFreq": "u16", "ExtSensorsType": "str", "FairShareDampeningFactor": "u16",
    "FastSchedule": "u16", "FederationParameters": "str", "FirstJobId": "u32", "FrontendName": "line",
    "GetEnvTimeout": "u16", "GpuFreqDef": "str", "GresTypes": "str", "GroupUpdateForce": "u16",
    "GroupUpdateTime": "u16", "HealthCheckInterval": "u16", "HealthCheckNodeState": "str",
    "HealthCheckProgram": "str", "InactiveLimit": "u16", "InteractiveStepOptions": "str",
    "JobAcctGatherFrequency": "str", "JobAcctGatherParams": "str", "JobAcctGatherType": "str", "JobCompHost": "str",
    "JobCompLoc": "str", "JobCompParams": "str", "JobCompPass": "str", "JobCompPort": "u32", "JobCompType": "str",
    "JobCompUser": "str", "JobContainerType": "str", "JobCredentialPrivateKey": "str",
    "JobCredentialPublicCertificate": "str", "JobFileAppend": "u16", "JobRequeue": "u16", "JobSubmitPlugins": "str",
    "KeepAliveTime": "u32", "KillOnBadExit": "u16", "KillWait": "u16", "LaunchParameters": "str", "LaunchType": "str",
    "Licenses": "str", "LogTimeFormat": "str", "MailDomain": "str", "MailProg": "str", "MaxArraySize": "u32",
    "MaxDBDMsgs": "u32", "MaxJobCount": "u32", "MaxJobId": "u32", "MaxMemPerCPU": "u64", "MaxMemPerNode": "u64",
    "MaxNodeCount": "u32", "MaxStepCount": "u32", "MaxTasksPerNode": "u16", "MCSParameters": "str",
    "MCSPlugin": "str", "MessageTimeout": "u16", "MinJobAge": "u32", "MpiDefault": "str", "MpiParams": "str",
    "NodeFeaturesPlugins": "str", "NodeName": "line", "NodeSet": "line", "OverTimeLimit": "u16",
    "PartitionName": "line", "PluginDir": "str", "PlugStackConfig": "str", "PowerParameters": "str",
    "PowerPlugin": "str", "PreemptExemptTime": "str", "PreemptMode": "str", "PreemptType": "str",
    "PrEpParameters": "str", "PrEpPlugins": "str", "PriorityCalcPeriod": "str", "PriorityDecayHalfLife": "str",
    "PriorityFavorSmall": "bool", "PriorityFlags": "str", "PriorityMaxAge": "str", "PriorityParameters": "str",
    "PrioritySiteFactorParameters": "str", "PrioritySiteFactorPlugin": "str", "PriorityType": "str",
    "PriorityUsageResetPeriod": "str", "PriorityWeightAge": "u32", "PriorityWeightAssoc": "u32",
    "PriorityWeightFairshare": "u32", "PriorityWeightJobSize": "u32", "PriorityWeightPartition": "u32",
    "PriorityWeightQOS": "u32", "PriorityWeightTRES": "str", "PrivateData": "str", "ProctrackType": "str",
    "Prolog": "str", "PrologEpilogTimeout": "u16", "PrologFlags": "str", "PrologSlurmctld": "str",
    "PropagatePrioProcess": "u16", "PropagateResourceLimits": "str", "PropagateResourceLimitsExcept": "str",
    "RebootProgram": "str", "ReconfigFlags": "str", "RequeueExit": "str", "RequeueExitHold": "str",
    "ResumeFailProgram": "str", "ResumeProgram": "str", "ResumeRate": "u16", "ResumeTimeout": "u16",
    "ResvEpilog": "str", "ResvOverRun": "u16", "ResvProlog": "str", "ReturnToService": "u16", "RoutePlugin": "str",
    "SallocDefaultCommand": "str", "SbcastParameters": "str", "SchedulerParameters": "str",
    "SchedulerTimeSlice": "u16", "SchedulerType": "str", "ScronParameters": "str", "SelectType": "str",
    "SelectTypeParameters": "str", "SlurmctldAddr": "str", "SlurmctldDebug": "str", "SlurmctldHost": "line",
    "SlurmctldLogFile": "str", "SlurmctldParameters": "str", "SlurmctldPidFile": "str", "SlurmctldPlugstack": "str",
    "SlurmctldPort": "str", "SlurmctldPrimaryOffProg": "str", "SlurmctldPrimaryOnProg": "str",
    "SlurmctldSyslogDebug": "str", "SlurmctldTimeout": "u16", "SlurmdDebug": "str", "SlurmdLogFile": "str",
    "SlurmdParameters": "str", "SlurmdPidFile": "str", "SlurmdPort": "u32", "SlurmdSpoolDir": "str",
    "SlurmdSyslogDebug": "str", "SlurmdTimeout": "u16", "SlurmdUser": "str", "SlurmSchedLogFile": "str",
    "SlurmSchedLogLevel": "u16", "SlurmUser": "str", "SrunEpilog": "str", "SrunPortRange": "str", "SrunProlog": "str",
    "StateSaveLocation": "str", "SuspendExcNodes": "str", "SuspendExcParts": "str", "SuspendProgram": "str",
    "SuspendRate": "u16", "SuspendTime": "str", "SuspendTimeout": "u16", "SwitchParameters": "str",
    "SwitchType": "str", "TaskEpilog": "str", "TaskPlugin": "str", "TaskPluginParam": "str", "TaskProlog": "str",
    "TCPTimeout": "u16", "TmpFS": "str", "TopologyParam": "str", "TopologyPlugin": "str", "TrackWCKey": "bool",
    "TreeWidth": "u16", "UnkillableStepProgram": "str", "UnkillableStepTimeout": "u16", "UsePAM": "bool",
    "VSizeFactor": "u16", "WaitTime": "u16",
}
SLURMDBD_CONF_KEYS = {
    "AllowNoDefAcct": "bool", "ArchiveDir": "str", "ArchiveEvents": "bool", "ArchiveJobs": "bool",
    "ArchiveResvs": "bool", "ArchiveScript": "str", "ArchiveSteps": "bool", "ArchiveSuspend": "bool",
    "ArchiveTXN": "bool", "ArchiveUsage": "bool", "AuthAltParameters": "str", "AuthAltTypes": "str",
    "AuthInfo": "str", "AuthType": "str", "CommitDelay": "u16", "CommunicationParameters": "str", "DbdAddr": "str",
    "DbdBackupHost": "str", "DbdHost": "str", "DbdPort": "u16", "DebugFlags": "str", "DebugLevel": "str",
    "DebugLevelSyslog": "str", "DefaultQOS": "str", "JobPurge": "u32", "LogFile": "str", "LogTimeFormat": "str",
    "MaxQueryTimeRange": "str", "MessageTimeout": "u16", "Parameters": "str", "PidFile": "str", "PluginDir": "str",
    "PrivateData": "str", "PurgeEventAfter": "str", "PurgeEventMonths": "u32", "PurgeJobAfter": "str",
    "PurgeJobMonths": "u32", "PurgeResvAfter": "str", "PurgeStepAfter": "str", "PurgeStepMonths": "u32",
    "PurgeSuspendAfter": "str", "PurgeSuspendMonths": "u32", "PurgeTXNAfter": "str", "PurgeTXNMonths": "u32",
    "PurgeUsageAfter": "str", "PurgeUsageMonths": "u32", "SlurmUser": "str", "StepPurge": "u32",
    "StorageBackupHost": "str", "StorageHost": "str", "StorageLoc": "str", "StorageParameters": "str",
    "StoragePass": "str", "StoragePort": "u16", "StorageType": "str", "StorageUser": "str", "TCPTimeout": "u16",
    "TrackSlurmctldDown": "bool", "TrackWCKey": "bool",
}
UINT_MAX = {"u16": 0xFFFF, "u32": 0xFFFFFFFF, "u64": 0xFFFFFFFFFFFFFFFF}
# s_p_handle_boolean (src/common/parse_value.c); the templates write a YAML boolean as YES/NO or True/False.
BOOLEANS = {"yes", "up", "true", "1", "no", "down", "false", "0"}
# Keys the role writes from its own variables (vars/main.yml): a value in the inventory's dict would
# disagree with them.
ROLE_CONF_KEYS = {
    "ClusterName": "slurm_master_cluster_name",
    "SlurmctldHost": "the controller's inventory name",
    "ControlMachine": "the controller's inventory name",
    "ControlAddr": "the controller's inventory name",
    "BackupController": "the controller's inventory name",
    "BackupAddr": "the controller's inventory name",
    "SlurmUser": "Debian's packages and the images (slurm)",
    "AuthType": "the munge role (auth/munge)",
    "AccountingStorageType": "slurm_master_accounting",
    "AccountingStorageHost": "slurm_master_accounting",
    "NodeName": "the workers' facts and slurm_worker_gpus",
    "NodeSet": "slurm_master_partitions",
    "PartitionName": "slurm_master_partitions",
    "DownNodes": "slurm_master_worker_group",
    "FrontendName": "slurm_master_worker_group",
}
ROLE_DBD_KEYS = {
    "DbdHost": "the role: the controller host or its HOST-slurmdbd container",
    "StorageHost": "the role: the controller's MariaDB or its HOST-mariadb container",
    "StorageType": "the role: accounting_storage/mysql, its MariaDB",
    "StorageLoc": "slurm_master_accounting_db_name",
    "StorageUser": "slurm_master_accounting_db_user",
    "StoragePass": "slurm_master_accounting_db_password",
    "SlurmUser": "Debian's packages and the images (slurm)",
    "AuthType": "the munge role (auth/munge)",
}
PORT_KEYS = {"SlurmctldPort", "SlurmdPort", "AccountingStoragePort", "JobCompPort", "SrunPortRange", "DbdPort", "StoragePort"}
# Slurm reads a range FIRST-LAST for these (slurm.conf(5) SlurmctldPort, SrunPortRange; the latter only as a range).
RANGE_KEYS = {"SlurmctldPort", "SrunPortRange"}
PATH_KEYS = {
    "StateSaveLocation", "SlurmdSpoolDir", "SlurmctldPidFile", "SlurmdPidFile", "SlurmctldLogFile", "SlurmdLogFile",
    "SlurmSchedLogFile", "PlugStackConfig", "TmpFS", "JobCredentialPrivateKey", "JobCredentialPublicCertificate",
    "PidFile", "LogFile", "ArchiveDir", "ArchiveScript",
}
PATH_LIST_KEYS = {"PluginDir"}
# Timeouts where 0 makes the daemons give up at once (slurm.conf(5), slurmdbd.conf(5)).
TIMEOUT_KEYS = {"SlurmctldTimeout", "MessageTimeout", "TCPTimeout", "BatchStartTimeout"}
# Slurm's defaults, which are also the role's (vars/main.yml).
DEFAULT_PORTS = {"SlurmctldPort": 6817, "SlurmdPort": 6818, "AccountingStoragePort": 6819, "DbdPort": 6819, "StoragePort": 3306}
# The role waits for slurmdbd on 6819 (tasks/accounting.yml, the slurmdbd container's health check), and
# MariaDB listens on its default 3306 (its container's command sets no port; Debian's unit neither).
DBD_PORT = 6819
MARIADB_PORT = 3306
# Container mode: slurm_worker mounts slurm_worker_container_spool_dir here, in every slurmd container.
SPOOL_IN_CONTAINER = "/var/spool/slurmd"
# Debian's slurm user (fixed by the slurm-wlm packages) and the images' default.
SLURM_UID = 64030
DAEMON_PACKAGES = {
    "slurm_master_packages": ("slurmctld",),
    "slurm_master_accounting_packages": ("mariadb-server", "slurmdbd", "slurm-wlm-mysql-plugin"),
}
CONTAINER_FIXES = {
    "_dir": "give each its own directory (the defaults: /etc/hpclab/slurm, /var/lib/hpclab/slurm/slurmctld, "
            "/etc/hpclab/slurmdbd, /var/lib/hpclab/slurm/mysql)",
    "_slurm_uid": f"keep {SLURM_UID}, Debian's slurm UID, the same on every node",
    "_base_image": "name a local Debian bookworm image, e.g. debian:bookworm-slim",
    "_network": "keep the docker_macvlan role's network (playbooks/slurm.yml passes it)",
    "_apt_proxy": "set auto (the host's own apt proxy), \"\" for none, or a URL such as http://10.0.0.1:3142",
    "_addresses": "let playbooks/slurm.yml pass the docker_macvlan role's docker_macvlan_result.addresses",
}


def _removed(value) -> bool:
    """A key the template leaves out: null, or omit (ansible-core 2.19's Omit object, the placeholder string before)."""
    return (value is None or type(value).__name__ == "_OmitType"
            or (isinstance(value, str) and value.startswith("__omit_place_holder__")))


def _port_range(key, value):
    """(FIRST, LAST) of a port key's value, or None when it is not one."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import port_problem
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    first, dash, last = text.partition("-")
    if dash and key in RANGE_KEYS:
        if port_problem(first) or port_problem(last) or int(first) > int(last):
            return None
        return int(first), int(last)
    if key == "SrunPortRange" or port_problem(text):
        return None
    return int(text), int(text)


def _effective_port(conf, key):
    """(FIRST, LAST) that the daemon will use for KEY: the inventory's value, else Slurm's default; None if bad."""
    value = conf.get(key) if isinstance(conf, Mapping) else None
    if _removed(value):
        if key not in DEFAULT_PORTS:
            return None
        return DEFAULT_PORTS[key], DEFAULT_PORTS[key]
    return _port_range(key, value)


def _name_lengths(controller, workers, mode, accounting):
    """Rule 10."""
    limits = {host: HOST_NAME_MAX for host in workers}
    limits[controller] = HOST_NAME_MAX - (len(DBD_CONTAINER_SUFFIX) if mode == "container" and accounting else 0)
    long = [f"{host} ({len(host)} characters, at most {limit})" for host, limit in limits.items()
            if isinstance(host, str) and len(host) > limit]
    if not long:
        return []
    return [
        f"{', '.join(long)}: the inventory name (inventory_hostname) is the node's NodeName and its host name (in "
        f"container mode its container's, and {controller}{DBD_CONTAINER_SUFFIX} for the controller's slurmdbd), "
        f"which has at most {HOST_NAME_MAX} characters. Fix: name these hosts in the inventory by shorter host names "
        "(use ansible_host for the address)."
    ]


def _partition_names(controller, partitions):
    """Rule 11."""
    bad = [name for name in partitions
           if not isinstance(name, str) or not PARTITION_NAME.fullmatch(name) or name.upper() == "DEFAULT"]
    if not bad:
        return []
    return [
        f"{controller}: slurm_master_partitions has partition names Slurm cannot take: {', '.join(repr(n) for n in bad)} "
        "(letters, digits, '_', '.' and '-', starting with a letter or digit; DEFAULT sets defaults in slurm.conf). "
        "Fix: rename them, e.g. batch or gpu."
    ]


def _cluster_name(controller, name):
    """Rule 12."""
    if name is None or (isinstance(name, str) and CLUSTER_NAME.fullmatch(name)):
        return []
    if not isinstance(name, str) or not name:
        reason = "is not a name"
    elif len(name) > CLUSTER_NAME_MAX:
        reason = f"has {len(name)} characters; slurm.conf(5) allows {CLUSTER_NAME_MAX}, MariaDB's limit for the table names made from it"
    elif CLUSTER_NAME.fullmatch(name.lower()):
        reason = (f"has upper case letters, which Slurm silently maps to lower case: the accounting database and "
                  f"StateSaveLocation would know it as '{name.lower()}'")
    else:
        reason = "has characters other than lower-case letters, digits, '_' and '-' (it becomes part of SQL table names)"
    return [
        f"{controller}: slurm_master_cluster_name (default hpclab_cluster_name) {name!r} {reason}. Fix: use 1 to "
        f"{CLUSTER_NAME_MAX} lower-case letters, digits, '_' and '-', starting with a letter or digit, e.g. hpclab."
    ]


def _time_seconds(text):
    """Seconds of a Slurm time that slurm_partition_lines accepted, as time_str2secs adds them up."""
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days, dash, rest = text.partition("-") if "-" in text else ("0", "", text)
    parts = [int(p) for p in rest.split(":")]
    if dash:
        hours, minutes, seconds = (parts + [0, 0, 0])[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:
        hours, minutes, seconds = 0, parts[0], (parts + [0])[1]
    return int(days) * 86400 + hours * 3600 + minutes * 60 + seconds


def _max_time_rule(controller, value):
    """Rule 13."""
    # The other filters' rules are imported where used: Ansible already loads every file of plugins/filter in each
    # worker that looks up one of this collection's filters, and an import at the top would compile three of them again from source.
    from ansible_collections.hpclab.cluster.plugins.filter.slurm_partition_lines import _max_time

    try:
        text = _max_time(value)
    except AnsibleFilterError as exc:
        reason = str(exc).split(": ", 1)[-1].replace(f"max_time {value!r} ", "")
    else:
        seconds = _time_seconds(text)
        if seconds is None:
            return []
        if seconds == 0:
            reason = "is zero: no job could run in the partitions"
        elif seconds > MAX_TIME_SECONDS:
            reason = f"is {seconds} seconds, more than Slurm can count ({MAX_TIME_SECONDS})"
        else:
            return []
    return [
        f"{controller}: slurm_master_max_time {value!r} {reason}. Fix: write UNLIMITED, minutes (60), HH:MM:SS or "
        "D-HH:MM:SS (7-00:00:00)."
    ]


def _memory_fraction(controller, value):
    """Rule 14."""
    from ansible_collections.hpclab.cluster.plugins.filter.slurm_node_lines import _fraction

    try:
        _fraction(value)
    except AnsibleFilterError:
        return [
            f"{controller}: slurm_master_memory_fraction {value!r} is not a number above 0 and at most 1 (the share "
            "of each worker's MemTotal written as RealMemory). Fix: keep the default 0.95."
        ]
    return []


def _gpu_values(nodes, workers):
    """Rule 15 (on the workers whose slurm_worker_gpus has the right shape: rule 6 names the others)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import gpus_shape_ok, gpus_value_problems
    found = []
    for worker in workers:
        gpus = nodes.get(worker, {}).get("gpus")
        if gpus_shape_ok(gpus):
            found += [f"{worker}: {reason}" for reason in gpus_value_problems(gpus)]
    if not found:
        return []
    return [
        f"slurm_worker_gpus cannot reach slurm.conf, gres.conf and the slurmd container: {'; '.join(found)}. Fix: "
        "e.g. slurm_worker_gpus: {count: 2, type: a100, files: [/dev/nvidia0, /dev/nvidia1]}."
    ]


def _user_values(controller, users, slurm_uid):
    """Rule 16 (on users rule 5 accepts)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import user_value_problems, users_well_formed
    if not users or not users_well_formed(users):
        return []
    reasons = user_value_problems(users, [slurm_uid])
    if not reasons:
        return []
    return [
        f"{controller}: slurm_master_users (default hpclab_cluster_users): {'; '.join(reasons)}. Fix: give each user "
        f"a name of at most 32 characters, a UID and GID that no system account uses (from 1000 up; not "
        f"{slurm_uid}, the slurm user's) and groups that exist on every node."
    ]


def _user_accounts(controller, users, accounts, min_uid):
    """Rule 35 (on users rule 5 accepts)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import users_well_formed
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._users import cluster_user_problems
    if not users_well_formed(users):
        return []
    return cluster_user_problems(controller, "slurm_master_users", users, min_uid, accounts, "slurm_master_users_min_uid")


def _home_hosts(controller, workers, users, shared_home, shared_home_hosts):
    """Rule 33."""
    if not users or shared_home_hosts is None:
        return []
    mounted = set(shared_home_hosts)
    return [
        f"{node}: the cluster users' homes under {shared_home} will not exist there (variable "
        f"slurm_master_shared_home_hosts, the hosts that mount the shared volume, does not list {node}), so a "
        f"job there cannot change to its home. Fix: put {node} in the glusterfs_clients group, so that "
        "playbooks/storage.yml mounts the volume there as a GlusterFS client, or take it out of the Slurm groups."
        for node in dict.fromkeys([controller] + list(workers)) if node not in mounted
    ]


def _shared_home_path(controller, shared_home):
    """Rule 17."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import mount_path_problem
    reason = mount_path_problem(shared_home) if shared_home else None
    if not reason:
        return []
    return [
        f"{controller}: slurm_master_shared_home {shared_home!r} {reason}. It is every user's home root and, in "
        "container mode, a bind mount of every Slurm container. Fix: point it at the home directory on the shared "
        "volume, e.g. /gfsv/home (hpclab_shared_path + /home)."
    ]


def _value_type_problem(kind, value):
    """Why VALUE is not what Slurm's parser reads for a key of KIND, or None."""
    if kind == "bool":
        if isinstance(value, bool) or (isinstance(value, (str, int)) and str(value).strip().lower() in BOOLEANS):
            return None
        return "is not a boolean (yes, no, true, false, 1 or 0)"
    if kind in UINT_MAX:
        text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
        if text.upper() in ("UNLIMITED", "INFINITE") or (text.isdigit() and int(text) <= UINT_MAX[kind]):
            return None
        return f"is not a whole number 0..{UINT_MAX[kind]} (or UNLIMITED)"
    return None


def _value_problems(key, value, kind, mode):
    """{rule: reason} for one known key's value (rules 20 to 24)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import mount_path_problem
    if isinstance(value, bool) or isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        return {20: f"{key}={value!r} is not a single value (a list or dict would be written as Python text)"}
    if "\n" in text or "\r" in text:
        return {20: f"{key}={value!r} spans lines, so that the next line would be read as another key"}
    if "#" in text:
        return {20: f"{key}={value!r} holds '#', where slurm.conf's parser cuts the line"}
    if not text.strip():
        return {20: f"{key}={value!r} is empty (a value of omit removes a key)"}
    if key in PORT_KEYS:
        if _port_range(key, value) is None:
            form = "a range FIRST-LAST of TCP ports" if key == "SrunPortRange" else "a TCP port 1..65535"
            form += " or a range FIRST-LAST" if key == "SlurmctldPort" else ""
            return {22: f"{key}={value!r} is not {form}"}
        return {}
    reason = _value_type_problem(kind, value)
    if reason:
        return {21: f"{key}={value!r} {reason}"}
    if key in PATH_KEYS or key in PATH_LIST_KEYS:
        paths = text.split(":") if key in PATH_LIST_KEYS else [text]
        bad = [p for p in paths if mount_path_problem(p)]
        if bad:
            return {23: f"{key}={value!r} {mount_path_problem(bad[0])}"}
        if key == "SlurmdSpoolDir" and mode == "container" and text != SPOOL_IN_CONTAINER:
            return {23: f"{key}={value!r} is not {SPOOL_IN_CONTAINER}, where each slurmd container mounts "
                        "slurm_worker_container_spool_dir (the spool would be lost with the container)"}
    if key in TIMEOUT_KEYS and text.isdigit() and int(text) < 1:
        return {24: f"{key}={value!r} is 0: the daemons would give up at once"}
    return {}


RULE_FIXES = {
    20: "give each key one value on one line (quote it in YAML if needed), or {{ omit }} to remove the key",
    21: "give the value in the form slurm.conf(5) or slurmdbd.conf(5) documents for the key",
    22: "give a port 1..65535 (SlurmctldPort may be a range, SrunPortRange must be one, e.g. 60001-63000)",
    23: "give a canonical absolute path (no blank, quote, ':' or ',', no trailing '/'), or remove the key",
    24: "give at least 1 second, or remove the key to keep Slurm's default",
}


def _conf_dicts(controller, config, dbd_config, accounting, mode):
    """Rules 18 to 24 over slurm_master_config and (with accounting) slurm_master_dbd_config."""
    problems = []
    sources = [("slurm_master_config", "slurm.conf", config, SLURM_CONF_KEYS, ROLE_CONF_KEYS)]
    if accounting:
        sources.append(("slurm_master_dbd_config", "slurmdbd.conf", dbd_config, SLURMDBD_CONF_KEYS, ROLE_DBD_KEYS))
    for variable, filename, conf, table, role_keys in sources:
        if conf is None:
            continue
        if not isinstance(conf, Mapping):
            problems.append(f"{controller}: {variable} {conf!r} is not a dict of {filename} keys. Fix: e.g. {{SlurmdTimeout: 600}}.")
            continue
        lowered = {k.lower(): k for k in table}
        unknown, managed, by_rule = [], [], {}
        for key, value in conf.items():
            if key not in table:
                canonical = lowered.get(str(key).lower())
                unknown.append(f"{key!r} (Slurm spells it {canonical})" if canonical else repr(key))
            elif key in role_keys:
                managed.append(f"{key} ({role_keys[key]} sets it)")
            elif not _removed(value):
                for rule, reason in _value_problems(key, value, table[key], mode).items():
                    by_rule.setdefault(rule, []).append(reason)
        if unknown:
            problems.append(
                f"{controller}: {variable} has keys that are not {filename} keys of Slurm 22.05, which would stop the "
                f"daemon at its start: {', '.join(unknown)}. Fix: use the keys of man {filename} spelled as there, "
                "e.g. SlurmdTimeout."
            )
        if managed:
            problems.append(
                f"{controller}: {variable} sets keys the role writes from its own settings: {', '.join(managed)}. "
                f"Fix: remove them from {variable} and set the role's variable instead."
            )
        for rule in sorted(by_rule):
            problems.append(f"{controller}: {variable}: {'; '.join(by_rule[rule])}. Fix: {RULE_FIXES[rule]}.")
    return problems


def _role_timeouts(controller, timeouts):
    """Rule 24 on the role's own waits."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import timeouts_problems
    return timeouts_problems(controller, timeouts, "keep the defaults")


def _overlap(first, second):
    return first[0] <= second[1] and second[0] <= first[1]


def _port_clashes(controller, workers, mode, config, dbd_config, accounting):
    """Rule 25: the daemons that share an address (a host in native mode, a container in container mode)."""
    ctld = _effective_port(config, "SlurmctldPort")
    slurmd = _effective_port(config, "SlurmdPort")
    srun = _effective_port(config, "SrunPortRange")
    dbd = _effective_port(dbd_config, "DbdPort")
    where_ctl = "the controller host" if mode == "native" else "the controller's container"
    ctl = [("slurmctld (SlurmctldPort)", ctld), ("srun (SrunPortRange)", srun)]
    if mode == "native":
        if controller in workers:
            ctl.append(("slurmd (SlurmdPort)", slurmd))
        if accounting:
            ctl += [("slurmdbd (DbdPort)", dbd), (f"MariaDB ({MARIADB_PORT})", (MARIADB_PORT, MARIADB_PORT))]
    groups = [(controller, where_ctl, ctl)]
    if workers:
        groups.append((", ".join(workers), "each worker" if mode == "native" else "each worker's container",
                       [("slurmd (SlurmdPort)", slurmd), ("srun (SrunPortRange)", srun)]))
    clashes = []
    for host, where, members in groups:
        members = [(label, ports) for label, ports in members if ports is not None]
        for i, (first, first_ports) in enumerate(members):
            for second, second_ports in members[i + 1:]:
                if _overlap(first_ports, second_ports):
                    port = max(first_ports[0], second_ports[0])
                    clashes.append(f"{host}: {first} and {second} would both listen on port {port} of {where}")
    if not clashes:
        return []
    return [
        f"{'; '.join(clashes)}. Fix: give each daemon its own port in slurm_master_config and slurm_master_dbd_config, "
        f"or keep Slurm's defaults (SlurmctldPort 6817, SlurmdPort 6818, DbdPort 6819; MariaDB {MARIADB_PORT})."
    ]


def _accounting_ports(controller, mode, config, dbd_config, accounting):
    """Rule 26."""
    if not accounting:
        return []
    reasons = []
    for variable, conf, key in (("slurm_master_config", config, "AccountingStoragePort"),
                                ("slurm_master_dbd_config", dbd_config, "DbdPort")):
        ports = _effective_port(conf, key)
        if ports is not None and ports != (DBD_PORT, DBD_PORT):
            reasons.append(f"{variable} {key} is {ports[0]}, but the role waits for slurmdbd on {DBD_PORT}")
    storage = _effective_port(dbd_config, "StoragePort")
    if mode == "container" and storage is not None and storage != (MARIADB_PORT, MARIADB_PORT):
        reasons.append(f"slurm_master_dbd_config StoragePort is {storage[0]}, but the MariaDB container listens on {MARIADB_PORT}")
    if not reasons:
        return []
    return [
        f"{controller}: with slurm_master_accounting, {'; '.join(reasons)}. Fix: leave AccountingStoragePort, DbdPort "
        f"and StoragePort at their defaults ({DBD_PORT}, {DBD_PORT}, {MARIADB_PORT})."
    ]


def _containers(controller, container, accounting):
    """Rules 27 to 30 (container mode), the database password file's path (rule 27, both modes)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import container_problems, is_within, mount_path_problem
    settings = dict(container or {})
    unknown = [v for v in settings if not v.startswith(("slurm_master_container_", "slurm_master_accounting_container_"))]
    if unknown:
        raise AnsibleFilterError(f"slurm_cluster_problems: unknown container settings {unknown!r}")
    if not accounting:
        settings = {v: value for v, value in settings.items() if not v.startswith("slurm_master_accounting_container_")}
    found = container_problems(settings)
    password_file = (accounting or {}).get("db_password_file")
    if isinstance(password_file, str) and password_file.startswith("/"):
        reason = mount_path_problem(password_file)
        dirs = {v: value for v, value in settings.items() if v.endswith("_dir") and not mount_path_problem(value)}
        inside = [v for v, path in dirs.items() if is_within(password_file, path)]
        if reason:
            found.append(("slurm_master_accounting_db_password_file", f"{password_file!r} {reason}"))
        elif inside:
            found.append(("slurm_master_accounting_db_password_file",
                          f"{password_file} is inside {inside[0]}, which a container mounts or owns"))
    problems = []
    for variable, reason in found:
        suffix = next((s for s in CONTAINER_FIXES if variable.endswith(s)), "_dir")
        problems.append(f"{controller}: {variable} {reason}. Fix: {CONTAINER_FIXES[suffix]}.")
    return problems


def _controller_is_worker(controller, workers, worker_group, mode):
    """Rule 32."""
    if mode != "container" or controller not in workers:
        return []
    return [
        f"{controller} is the controller and also a host of the worker group '{worker_group}' (variable "
        f"slurm_master_worker_group): in container mode its slurmctld and slurmd containers would both be named "
        f"{controller}. Fix: take {controller} out of '{worker_group}', or run the cluster with hpclab_slurm_mode: native."
    ]


def _cgroup(nodes, controller, workers, mode, value):
    """Rule 34."""
    from ansible_collections.hpclab.cluster.plugins.filter.slurm_cgroup_plan import cgroup_switch, node_cgroup_reasons

    switch = cgroup_switch(value)
    if switch is None:
        return [f"{controller}: slurm_master_cgroup is {value!r}. Fix: set auto (cgroup enforcement where every "
                "slurmd node allows it), true (required: the run fails where a node does not) or false."]
    if switch is not True:
        return []
    if mode != "native":
        return [f"{controller}: slurm_master_cgroup is true, but in {mode} mode slurmd runs in a Docker container "
                "that the roles start without the host's cgroup hierarchy. Fix: set slurm_master_cgroup: auto or false, "
                "or run the cluster with hpclab_slurm_mode: native."]
    problems = []
    for worker in workers:
        reasons = node_cgroup_reasons((nodes.get(worker) or {}).get("cgroup"))
        if reasons:
            problems.append(
                f"{worker}: Slurm cannot confine jobs with cgroups there, which slurm_master_cgroup: true requires: "
                f"{'; '.join(reasons)}. Fix: give slurmd a read-write cgroup hierarchy with those controllers on "
                f"{worker} (a node container needs --cgroupns=host -v /sys/fs/cgroup:/sys/fs/cgroup:rw), or set "
                "slurm_master_cgroup: auto to run the cluster without cgroup enforcement where a node cannot."
            )
    return problems


def _packages(controller, packages, mode, accounting):
    """Rule 31."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import package_problems
    problems = []
    for variable, names in (packages or {}).items():
        if variable == "slurm_master_accounting_packages" and not (mode == "native" and accounting):
            continue
        required = DAEMON_PACKAGES.get(variable, ())
        reasons = package_problems(names, required)
        if reasons:
            keep = f", keeping {', '.join(required)}" if required else ""
            problems.append(f"{controller}: {variable} {'; '.join(reasons)}. Fix: list Debian package names{keep}.")
    return problems


def slurm_cluster_problems(nodes, controller, workers, partitions, worker_group="slurm_worker", mode="container",
                           default_partition="", users=None, accounting=None, shared_home="",
                           shared_home_exists=True, munge_hosts=None, cluster_name=None, max_time=None,
                           memory_fraction=None, config=None, dbd_config=None, timeouts=None, container=None,
                           packages=None, shared_home_hosts=None, cgroup=None, accounts=None, min_uid=None):
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
    problems += _home_hosts(controller, workers, users, shared_home, shared_home_hosts)
    problems += _munge(nodes, controller, workers, list(munge_hosts or []))
    slurm_uid = (container or {}).get("slurm_master_container_slurm_uid", SLURM_UID) if mode == "container" else SLURM_UID
    problems += _name_lengths(controller, workers, mode, accounting)
    problems += _partition_names(controller, partitions)
    problems += _cluster_name(controller, cluster_name)
    if max_time is not None:
        problems += _max_time_rule(controller, max_time)
    if memory_fraction is not None:
        problems += _memory_fraction(controller, memory_fraction)
    problems += _gpu_values(nodes, workers)
    problems += _user_values(controller, users, slurm_uid)
    problems += _user_accounts(controller, users, accounts, min_uid)
    problems += _shared_home_path(controller, shared_home)
    problems += _conf_dicts(controller, config, dbd_config, accounting, mode)
    problems += _role_timeouts(controller, timeouts)
    if config is not None or dbd_config is not None:
        problems += _port_clashes(controller, workers, mode, config, dbd_config, accounting)
        problems += _accounting_ports(controller, mode, config, dbd_config, accounting)
    if mode == "container" and container is not None or accounting:
        problems += _containers(controller, container if mode == "container" else None, accounting)
    problems += _packages(controller, packages, mode, accounting)
    problems += _controller_is_worker(controller, workers, worker_group, mode)
    if cgroup is not None:
        problems += _cgroup(nodes, controller, workers, mode, cgroup)
    return problems


class FilterModule:
    """The Slurm layer's whole-cluster checks."""

    def filters(self):
        return {"slurm_cluster_problems": slurm_cluster_problems}
