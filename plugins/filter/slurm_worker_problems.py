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
  - "Checks: the mode is V(container) or V(native); the controller group holds exactly one host; when
    O(controller_result) is passed (the role's main entry point, after the controller's play), that the
    controller published its settings and lists this host among its workers; the host holds the MUNGE
    key, or gets it later in the run (O(munge_hosts))."
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

MODES = ("container", "native")


def slurm_worker_problems(host, mode, controllers, master_group="slurm_master", check_controller=True,
                          controller_result=None, munge_key=True, munge_hosts=None):
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
    return problems


class FilterModule:
    """One Slurm worker's checks."""

    def filters(self):
        return {"slurm_worker_problems": slurm_worker_problems}
