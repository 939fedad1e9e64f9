# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_worker_problems
short_description: What is wrong with one Slurm worker's input, before any change on it
version_added: 0.2.0
description:
  - The slurm_worker role's checks of its own host. The controller's role checks the whole cluster
    first; these keep a worker-only run (C(--limit)) from writing a wrong file. Returns a list of
    problems, each naming the host, the variable and the fix.
  - "Rules: (1) the mode is V(container) or V(native); (2) the controller group holds exactly one host
    and, when O(check_controller) (the role's main entry point, after the controller's play), the
    controller published its settings; (3) it lists this host among its workers; (4) the host holds the
    MUNGE key, or gets it later in the run (O(munge_hosts))."
  - "Rules added for issue 18, each applied only when its argument is given: (5) O(gpus) is
    C({count, type, files}) with as many files as GPUs, a one-word type and canonical device files under
    C(/dev), none twice; (6) O(users) are well formed (POSIX names of at most 32 characters, numeric
    IDs, no name or UID twice, not root's, nobody's or the slurm user's IDs, group names);
    (7) O(shared_home) is a canonical absolute path a bind mount can hold; (8) in container mode, the
    O(container) settings: the host directories canonical and apart, the slurm UID, the base image, the
    network, the apt proxy and the addresses; (9) O(packages) are Debian package names and
    C(slurm_worker_packages) holds slurmd; (10) O(timeouts) are at least 1 second."
  - "Rule added for issue 54, applied with O(users): (11) no user takes a name the collection's services use (munge,
    slurm, mysql, prometheus, nginx, the LLM service user, Docker's group, root, nobody...), nor the name of a system
    account or group of this node (O(accounts), its ID below O(min_uid)), nor a UID or GID below O(min_uid), nor a UID
    another account of this node has: C(ansible.builtin.user) would rewrite that account (the collection's
    C(plugin_utils/_users.py), shared with P(hpclab.cluster.slurm_cluster_problems#filter))."
  - "Rule added for issue 53, applied with O(shared_home_mount): (12) it is empty, or a canonical absolute path other
    than C(/) that holds O(shared_home) (native slurmd waits for that mount point after a boot)."
  - "Rule added for issue 56, applied in container mode: (13) where jobs call services on this host's own address
    (O(host_services), e.g. the LLM gateway on the first llm host), its containers reach that address
    (O(container_host_route): the docker_macvlan shim); a container on a macvlan network cannot reach its own host's
    address otherwise (C(No route to host))."
options:
  _input:
    description: The worker's inventory name.
    type: str
    required: true
  mode:
    description: C(slurm_worker_mode).
    type: str
    required: true
  controllers:
    description: The hosts of the controller group.
    type: list
    elements: str
    required: true
  master_group:
    description: The controller group's name (C(slurm_worker_master_group)), for the messages.
    type: str
    default: slurm_master
  check_controller:
    description: Whether to check O(controller_result) (false in the whole-inventory preflight, before any controller ran).
    type: bool
    default: true
  controller_result:
    description: The controller's fact C(slurm_master_result), or null when it has none.
    type: dict
  munge_key:
    description: Whether C(/etc/munge/munge.key) exists on the worker.
    type: bool
    default: true
  munge_hosts:
    description: Hosts that get the MUNGE key later in this run.
    type: list
    elements: str
    default: []
  gpus:
    description: C(slurm_worker_gpus); null skips rule 5.
    type: raw
  users:
    description: C(slurm_worker_users); null skips rule 6.
    type: list
    elements: dict
  shared_home:
    description: C(slurm_worker_shared_home); null skips rule 7.
    type: str
  shared_home_mount:
    description: C(slurm_worker_shared_home_mount); null skips rule 12.
    type: str
  host_services:
    description: C(slurm_worker_host_services), what jobs call on this host's own address (rule 13).
    type: list
    elements: str
    default: []
  container_host_route:
    description: C(slurm_worker_container_host_route), whether this host's containers reach its own address (rule 13).
    type: bool
    default: false
  accounts:
    description:
      - This node's account databases as read before any change, C({passwd, group}), each the text of
        C(getent passwd) and C(getent group); null judges rule 11 on the names and IDs only.
    type: dict
  min_uid:
    description: C(slurm_worker_users_min_uid), the first UID and GID of a cluster user (rule 11); null judges
      no ID against a minimum (the accounts of O(accounts) against Debian's, 1000).
    type: raw
  container:
    description:
      - "Container mode settings by variable name, for rule 8: C(slurm_worker_container_conf_dir),
        C(slurm_worker_container_spool_dir), C(slurm_worker_container_slurm_uid),
        C(slurm_worker_container_base_image), C(slurm_worker_container_network),
        C(slurm_worker_container_apt_proxy), C(slurm_worker_container_addresses)."
    type: dict
  packages:
    description: Package lists by variable name (C(slurm_worker_packages), C(slurm_worker_mpi_packages)), for rule 9.
    type: dict
  timeouts:
    description: Role variables that are seconds to wait, by name (C(slurm_worker_register_timeout)), for rule 10.
    type: dict
"""

EXAMPLES = r"""
# "n3" | hpclab.cluster.slurm_worker_problems(mode="native", controllers=["c1"], controller_result={"workers": ["n1"]})
# => ["n3 runs the slurm_worker role but is not in the controller's worker group ... Fix: add it to that group."]
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

MODES = ("container", "native")
# Debian's slurm user (fixed by the slurm-wlm packages) and the images' default.
SLURM_UID = 64030
DAEMON_PACKAGES = {"slurm_worker_packages": ("slurmd",)}
CONTAINER_FIXES = {
    "_dir": "give each its own directory (the defaults: /etc/hpclab/slurm and /var/lib/hpclab/slurm/slurmd)",
    "_slurm_uid": f"keep {SLURM_UID}, Debian's slurm UID, the same on every node",
    "_base_image": "name a local Debian bookworm image, e.g. debian:bookworm-slim",
    "_network": "keep the docker_macvlan role's network (playbooks/slurm.yml passes it)",
    "_apt_proxy": "set auto (the host's own apt proxy), \"\" for none, or a URL such as http://10.0.0.1:3142",
    "_addresses": "let playbooks/slurm.yml pass the docker_macvlan role's docker_macvlan_result.addresses",
}


def _gpus(host, gpus):
    """Rule 5."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import gpus_shape_ok, gpus_value_problems
    if gpus is None:
        return []
    reasons = ["is not {count: N, type: WORD, files: [N device files]}"] if not gpus_shape_ok(gpus) else gpus_value_problems(gpus)
    if not reasons:
        return []
    return [
        f"{host}: slurm_worker_gpus {'; '.join(reasons)}. Fix: e.g. slurm_worker_gpus: {{count: 2, type: a100, files: "
        "[/dev/nvidia0, /dev/nvidia1]} (files default to /dev/nvidia0..N-1)."
    ]


def _users(host, users, slurm_uid):
    """Rule 6."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import user_value_problems, users_well_formed
    if users is None:
        return []
    users = list(users)
    reasons = (["is not a list of {name, uid, gid, groups} with lower-case POSIX names, numeric uid and gid, no name "
                "or uid twice"] if not users_well_formed(users) else user_value_problems(users, [slurm_uid]))
    if not reasons:
        return []
    return [
        f"{host}: slurm_worker_users (default hpclab_cluster_users) {'; '.join(reasons)}. Fix: use the controller's "
        "list (hpclab_cluster_users), e.g. [{name: alice, uid: 2001, gid: 2001}], with IDs no system account uses."
    ]


def _user_accounts(host, users, accounts, min_uid):
    """Rule 11 (on users rule 6 accepts as well formed)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import users_well_formed
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._users import cluster_user_problems
    if users is None or not users_well_formed(list(users)):
        return []
    return cluster_user_problems(host, "slurm_worker_users", list(users), min_uid, accounts, "slurm_worker_users_min_uid")


def _shared_home(host, shared_home):
    """Rule 7."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import mount_path_problem
    reason = mount_path_problem(shared_home) if shared_home is not None else None
    if not reason:
        return []
    return [
        f"{host}: slurm_worker_shared_home {shared_home!r} {reason}. Fix: point it at the home directory on the shared "
        "volume, the controller's slurm_master_shared_home, e.g. /gfsv/home."
    ]


def _shared_home_mount(host, mount, shared_home):
    """Rule 12."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import mount_path_problem
    if mount is None or mount == "":
        return []
    reason = mount_path_problem(mount)
    if not reason and isinstance(shared_home, str) and not (shared_home == mount or shared_home.startswith(mount + "/")):
        reason = f"does not hold slurm_worker_shared_home {shared_home!r}"
    if not reason:
        return []
    return [
        f"{host}: slurm_worker_shared_home_mount {mount!r} {reason}. Fix: set it to the mount point of the shared "
        "volume that holds the homes (hpclab_shared_path, e.g. /gfsv), or \"\" where the homes are on no mount of their own."
    ]


def _host_route(host, mode, services, route):
    """Rule 13."""
    if mode != "container" or not services or route:
        return []
    return [
        f"{host}: jobs in its slurmd container call {', '.join(services)} on {host}'s own address, which a container on "
        "a macvlan network cannot reach (No route to host). Fix: give the host the macvlan shim, in "
        f"host_vars/{host}.yml: docker_macvlan_host_shim: true and docker_macvlan_host_shim_ip: an unused address of "
        "docker_macvlan_ip_range."
    ]


def _container(host, mode, container):
    """Rule 8."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import container_problems
    if mode != "container" or container is None:
        return []
    unknown = [v for v in container if not v.startswith("slurm_worker_container_")]
    if unknown:
        raise AnsibleFilterError(f"slurm_worker_problems: unknown container settings {unknown!r}")
    problems = []
    for variable, reason in container_problems(dict(container)):
        suffix = next((s for s in CONTAINER_FIXES if variable.endswith(s)), "_dir")
        problems.append(f"{host}: {variable} {reason}. Fix: {CONTAINER_FIXES[suffix]}.")
    return problems


def _packages(host, packages):
    """Rule 9."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import package_problems
    problems = []
    for variable, names in (packages or {}).items():
        required = DAEMON_PACKAGES.get(variable, ())
        reasons = package_problems(names, required)
        if reasons:
            keep = f", keeping {', '.join(required)}" if required else ""
            problems.append(f"{host}: {variable} {'; '.join(reasons)}. Fix: list Debian package names{keep}.")
    return problems


def _timeouts(host, timeouts):
    """Rule 10."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import timeouts_problems
    return timeouts_problems(host, timeouts, "keep the default")


def slurm_worker_problems(host, mode, controllers, master_group="slurm_master", check_controller=True,
                          controller_result=None, munge_key=True, munge_hosts=None, gpus=None, users=None,
                          shared_home=None, container=None, packages=None, timeouts=None, accounts=None, min_uid=None,
                          shared_home_mount=None, host_services=None, container_host_route=False):
    """Filter entry point: see DOCUMENTATION."""
    problems = []
    if mode not in MODES:
        problems.append(
            f"slurm_worker_mode '{mode}' on {host} is neither 'container' nor 'native'. Fix: set slurm_worker_mode: "
            "container (slurmd in a Docker container on the macvlan network) or native."
        )
    controllers = list(controllers or [])
    if len(controllers) != 1 or check_controller and not isinstance(controller_result, Mapping):
        problems.append(
            f"The group '{master_group}' (variable slurm_worker_master_group) must hold exactly one controller, "
            f"{', '.join(controllers) or 'none found'}, and the slurm_master role must run on it earlier in the same "
            "run: workers write the slurm.conf it computes. Fix: run playbooks/slurm.yml (with --limit, include the "
            "controller)."
        )
    elif check_controller and host not in controller_result.get("workers", []):
        problems.append(
            f"{host} runs the slurm_worker role but is not in the controller's worker group (variable "
            f"slurm_master_worker_group on {controllers[0]}). Fix: add it to that group."
        )
    if not munge_key and host not in (munge_hosts or []):
        problems.append(
            f"/etc/munge/munge.key is missing on {host}; slurmd authenticates with the cluster's MUNGE key. Fix: add "
            f"{host} to the munge inventory group (variable munge_group) and run the munge role first (playbooks/munge.yml)."
        )
    slurm_uid = (container or {}).get("slurm_worker_container_slurm_uid", SLURM_UID) if mode == "container" else SLURM_UID
    problems += _gpus(host, gpus)
    problems += _users(host, users, slurm_uid)
    problems += _user_accounts(host, users, accounts, min_uid)
    problems += _shared_home(host, shared_home)
    problems += _shared_home_mount(host, shared_home_mount, shared_home)
    problems += _host_route(host, mode, list(host_services or []), bool(container_host_route))
    problems += _container(host, mode, container)
    problems += _packages(host, packages)
    problems += _timeouts(host, timeouts)
    return problems


class FilterModule:
    """One Slurm worker's checks."""

    def filters(self):
        return {"slurm_worker_problems": slurm_worker_problems}
