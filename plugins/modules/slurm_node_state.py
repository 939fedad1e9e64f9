#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node_state
short_description: Drain, resume, down or undrain Slurm nodes, idempotently, and wait until they are drained
version_added: 0.1.0
description:
  - Puts one Slurm node or a set of nodes (names or a Slurm hostlist expression such as C(node[01-04])) into
    an administrative state, from a host that can reach slurmctld (the controller or a login node; use C(delegate_to)).
    Written for Slurm 22.05 (Debian bookworm 22.05.8), which has no C(scontrol --json).
  - Reads every node's state first with one C(scontrol show node -o) (the reason may contain spaces and C(=);
    it is parsed up to its C([user@time]) suffix), plans, and runs one C(scontrol update NodeName=... State=...)
    per node that needs a change, as an argv list, never through a shell. A multi-node C(scontrol update) is
    applied partially when one node refuses the change, so nodes are never batched.
  - Nodes already in the wanted state are left alone, so the module reports no change on a second run.
    Resuming a node that is in service is no change (Slurm itself answers C(Invalid node state specified)).
  - Everything that can be refused is refused before any command runs, naming every node at fault. That is an
    unknown node, a hostlist expression that does not parse (unbalanced brackets or a bad range, checked here
    because C(scontrol show hostnames) of Slurm 22.05 exits 0 on both), a missing reason, and a node with an
    invalid registration (C(INVALID_REG), which Slurm cannot resume).
  - With O(wait=true), O(state=drain) returns once every node is DRAINED (DRAIN set, no running or completing
    job) and O(state=resume) once every node is back in service (not drained, not down, slurmd responding).
    The jobs that ran on the nodes meanwhile are returned in RV(jobs). When O(timeout) passes first the
    module fails, naming the nodes and the jobs still running; the state change it made stays in place.
author:
  - hpclab.cluster contributors (@hpclab)
extends_documentation_fragment:
  - hpclab.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Runs only the read commands and returns the commands a real run would run and the predicted state. Does not wait.
  diff_mode:
    support: full
    details: Shows each node's state (as sinfo names it), base state, flags and reason before and after.
  idempotent:
    support: full
    details: A second run with the same parameters runs no C(scontrol update) and reports no change.
options:
  nodes:
    description:
      - The nodes, as node names, comma-separated names or Slurm hostlist expressions (C(gpu[01-04,07]),
        C(rack[1-2]-n[01-02])), in one string or a list. Expressions are expanded by C(scontrol show hostnames).
      - Every node must be in slurmctld's node table, otherwise the module fails before any change.
    type: list
    elements: str
    required: true
  state:
    description:
      - V(drain) sets DRAIN; running jobs go on, no new job starts. The node is DRAINING until its jobs end,
        then DRAINED. An already drained node is no change; see O(update_reason).
      - V(resume) returns drained, failed or down nodes to service (C(State=RESUME) clears DRAIN and FAIL, a
        DOWN node becomes IDLE). A node in service is no change.
      - V(down) sets the node DOWN, which B(kills the jobs running on it) (batch jobs that may be requeued are
        requeued). An already down node is no change. With C(ReturnToService=2) in slurm.conf a DOWN node whose
        slurmd answers is back in service at its next registration, seconds later; use V(drain) to keep a node out.
      - V(undrain) clears only DRAIN (and FAIL) and keeps the base state, so a DOWN node stays DOWN. A node
        that is not drained is no change.
    type: str
    required: true
    choices: [drain, resume, down, undrain]
  reason:
    description:
      - Why; shown by C(sinfo -R) and C(scontrol show node). Required for V(drain) and V(down), one line.
        Slurm strips one leading and one trailing double quote, and so does the comparison here.
    type: str
  update_reason:
    description:
      - For V(drain) and V(down), replace the reason of a node that is already drained (or down) with another
        reason. Off by default, so that a drain does not overwrite the reason an administrator or Slurm
        (C(Not responding), C(Low RealMemory ...)) gave; the node is then reported unchanged with its own reason.
    type: bool
    default: false
  wait:
    description:
      - For V(drain), wait until every node is DRAINED; for V(resume), until every node is back in service
        and its slurmd answers. Not allowed with V(down) or V(undrain).
    type: bool
    default: false
  timeout:
    description: Seconds to wait when O(wait=true). Zero checks once.
    type: int
    default: 3600
  poll_interval:
    description: Seconds between two reads of the node states while waiting.
    type: float
    default: 2
  container:
    description:
      - Run the Slurm commands inside this Docker container on the host, with C(docker exec CONTAINER); the
        slurmctld container of a containerized cluster (the hpclab.cluster.slurm_master role's container
        mode names it after its host). Empty runs them on the host itself.
    type: str
    default: ""
notes:
  - Run it where C(scontrol) reaches slurmctld with a valid MUNGE credential as root or as SlurmUser
    (other users get C(Invalid user id)), typically C(delegate_to) the controller with C(run_once).
  - When slurmctld cannot be reached the module fails with scontrol's message. (C(sinfo --json) would exit 0
    with an C(errors) list in that case, which is one reason this module reads C(scontrol show node -o).)
  - A node with an invalid registration (slurmd reported fewer CPUs or less memory than slurm.conf says) is
    refused for V(resume) and V(undrain) with what slurmctld reported; fix slurm.conf or the node first.
requirements:
  - Slurm client commands (Debian C(slurm-client)) and a MUNGE key valid for the cluster.
seealso:
  - name: scontrol update NodeName
    description: Node states and their transitions.
    link: https://slurm.schedmd.com/archive/slurm-22.05.8/scontrol.html
"""

EXAMPLES = r"""
- name: Take a worker out of service and wait until its jobs have ended
  hpclab.cluster.slurm_node_state:
    nodes: "{{ inventory_hostname }}"
    state: drain
    reason: "kernel update (change 4711)"
    wait: true
    timeout: 7200
  delegate_to: "{{ groups['slurm_master'][0] }}"

- name: Return the worker to service once slurmd has registered
  hpclab.cluster.slurm_node_state:
    nodes: "{{ inventory_hostname }}"
    state: resume
    wait: true
    timeout: 120
  delegate_to: "{{ groups['slurm_master'][0] }}"

- name: Drain a rack by hostlist expression, without waiting
  hpclab.cluster.slurm_node_state:
    nodes: "rack1-n[01-16]"
    state: drain
    reason: PDU replacement
  run_once: true
  delegate_to: "{{ groups['slurm_master'][0] }}"

- name: Down two nodes now (their jobs are killed)
  hpclab.cluster.slurm_node_state:
    nodes: [gpu01, gpu02]
    state: down
    reason: GPU fell off the bus
  run_once: true
  delegate_to: "{{ groups['slurm_master'][0] }}"
"""

RETURN = r"""
nodes:
  description:
    - Per node, C(before) and C(after) (as read after the run; in check mode, as predicted), and C(command),
      the C(scontrol update) argv run for it (null when none was needed).
    - C(state) is the name sinfo shows (C(IDLE), C(MIXED), C(ALLOCATED), C(DRAINING), C(DRAINED), C(DOWN),
      C(FAIL), C(INVAL), ...), C(base) and C(flags) are the words of C(scontrol show node)'s C(State=).
  returned: always
  type: dict
  sample:
    slurmd1:
      before: {state: MIXED, base: MIXED, flags: [], reason: "", reason_user: "", reason_time: "", cpus: 2,
               cpus_allocated: 1, real_memory: 3800, slurmd_start_time: "2024-05-01T10:00:00"}
      after: {state: DRAINING, base: MIXED, flags: [DRAIN], reason: kernel update, reason_user: root,
              reason_time: "2024-05-01T10:05:00", cpus: 2, cpus_allocated: 1, real_memory: 3800,
              slurmd_start_time: "2024-05-01T10:00:00"}
      command: [scontrol, update, NodeName=slurmd1, State=DRAIN, Reason=kernel update]
commands:
  description: The C(scontrol update) argv lists run (in check mode, that a real run would run), one per changed node.
  returned: always
  type: list
  elements: list
  sample: [[scontrol, update, NodeName=slurmd1, State=DRAIN, Reason=kernel update]]
jobs:
  description:
    - With O(wait=true), the jobs seen on the nodes while waiting, with their last seen state; empty otherwise.
  returned: always
  type: list
  elements: dict
  sample: [{job_id: "12", state: RUNNING, user: alice, name: sleep30, nodes: slurmd1}]
waited:
  description: Seconds spent waiting (0 without O(wait)).
  returned: always
  type: float
  sample: 31.2
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpclab.cluster.plugins.module_utils._runner import CommandRunner
from ansible_collections.hpclab.cluster.plugins.module_utils._slurm import (
    ENVIRON,
    SCONTROL,
    SQUEUE,
    SQUEUE_FORMAT,
    SlurmCliError,
    SlurmError,
    check_hostlist_syntax,
    describe,
    needs_hostlist_expansion,
    parse_hostnames,
    parse_show_node,
    parse_squeue,
    plan_nodes,
    predict,
    split_plain_names,
    unfinished,
    unique,
    validate_node_names,
    validate_request,
    view,
)

FACT_KEYS = ("state", "base", "flags", "reason", "reason_user", "reason_time", "cpus", "cpus_allocated", "real_memory", "slurmd_start_time")


def facts(node: dict) -> dict:
    return {key: node[key] for key in FACT_KEYS}


class Slurm:
    """Runs Slurm client argv lists, on the host or in the controller's container."""

    def __init__(self, module: AnsibleModule, result: dict, container: str = ""):
        self.module = module
        self.result = result
        self.container = container
        # In a container the environment travels as `docker exec -e`, not as the docker client's own.
        self.runner = CommandRunner(module, environ={} if container else ENVIRON)

    def argv(self, argv: list) -> list:
        """ARGV as it runs: in the container, with the command's own path there."""
        if not self.container:
            return argv
        env = [item for key, value in ENVIRON.items() for item in ("-e", f"{key}={value}")]
        return ["docker", "exec", *env, self.container, *argv]

    def run(self, argv: list) -> tuple:
        return self.runner.run(self.argv(argv))

    def read(self, argv: list, what: str, hint: str = "") -> str:
        rc, out, err = self.run(argv)
        if rc != 0:
            self.runner.fail(argv, rc, out, err, what, hint, **self.result)
        return out

    def nodes(self) -> dict:
        out = self.read(
            [SCONTROL, "show", "node", "-o"],
            "cannot read the node states from slurmctld",
            "Check that slurmctld runs and answers (`scontrol ping`), and that this host has the cluster's "
            "slurm.conf and MUNGE key",
        )
        return parse_show_node(out)

    def jobs(self, names: list) -> list:
        rc, out, _err = self.run([SQUEUE, "--noheader", f"--nodelist={','.join(names)}", SQUEUE_FORMAT])
        return parse_squeue(out) if rc == 0 else []


def expand(slurm: Slurm, items: list) -> list:
    if not needs_hostlist_expansion(items):
        return split_plain_names(items)
    expression = ",".join(item.strip() for item in items)
    try:
        check_hostlist_syntax(expression)
    except SlurmError as exc:
        slurm.module.fail_json(msg=f"nodes: {exc}. Use names or ranges such as node[01-04,07]", **slurm.result)
    rc, out, err = slurm.run([SCONTROL, "show", "hostnames", expression])
    try:
        names = parse_hostnames(rc, out, err)
    except SlurmCliError as exc:
        slurm.module.fail_json(
            msg=f"nodes: the hostlist expression {expression!r} does not parse: scontrol show hostnames says: {exc}. "
            "Use names or ranges such as node[01-04,07]",
            **slurm.result,
        )
    return unique(names)


def wait_for(slurm: Slurm, names: list, state: str, timeout: float, interval: float, result: dict) -> dict:
    """Poll until every node is DRAINED (drain) or in service (resume); fail naming what is left."""
    start = time.monotonic()
    deadline = start + timeout
    seen = {}
    while True:
        nodes = slurm.nodes()
        left = unfinished(nodes, names, state)
        if state == "drain":
            busy = [n for n in left if nodes[n]["base"] != "DOWN"]
            if busy:
                for job in slurm.jobs(busy):
                    seen[job["job_id"]] = job
        result["jobs"] = list(seen.values())
        result["waited"] = round(time.monotonic() - start, 1)
        if not left:
            return nodes
        if time.monotonic() >= deadline:
            still = slurm.jobs(left) if state == "drain" else []
            goal = "DRAINED (no running or completing job)" if state == "drain" else "back in service with slurmd responding"
            msg = f"after {timeout} s these nodes are still not {goal}: {', '.join(describe(nodes[n]) for n in left)}"
            if state == "drain":
                msg += ". Jobs still running on them: " + (
                    ", ".join(f"{j['job_id']} ({j['name']}, {j['user']}, {j['state']}, on {j['nodes']})" for j in still) or "none listed"
                )
                msg += ". The nodes stay drained; raise timeout, or end the jobs (scancel) and run again"
            else:
                msg += ". Check slurmd on them (systemctl status slurmd; journalctl -u slurmd) and the controller's log"
            for name in names:
                result["nodes"][name]["after"] = facts(nodes[name])
            slurm.module.fail_json(msg=msg, **result)
        time.sleep(interval)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "str", "required": True},
            "state": {"type": "str", "required": True, "choices": ["drain", "resume", "down", "undrain"]},
            "reason": {"type": "str"},
            "update_reason": {"type": "bool", "default": False},
            "wait": {"type": "bool", "default": False},
            "timeout": {"type": "int", "default": 3600},
            "poll_interval": {"type": "float", "default": 2},
            "container": {"type": "str", "default": ""},
        },
        required_if=[("state", "drain", ["reason"]), ("state", "down", ["reason"])],
        supports_check_mode=True,
    )
    params = module.params
    state, reason, update_reason = params["state"], params["reason"], params["update_reason"]
    result = {"changed": False, "commands": [], "nodes": {}, "jobs": [], "waited": 0.0}
    try:
        validate_request(state, reason, params["wait"])
        if not [item for item in params["nodes"] if item.strip()]:
            raise SlurmError("nodes is empty")
        if params["timeout"] < 0 or params["poll_interval"] <= 0:
            raise SlurmError("timeout must be 0 or more and poll_interval more than 0 seconds")
    except SlurmError as exc:
        module.fail_json(msg=str(exc), **result)

    slurm = Slurm(module, result, params["container"])
    names = expand(slurm, params["nodes"])
    try:
        validate_node_names(names)
    except SlurmError as exc:
        module.fail_json(msg=str(exc), **result)
    before = slurm.nodes()
    try:
        plan = plan_nodes(before, names, state, reason, update_reason)
    except SlurmError as exc:
        result["nodes"] = {n: {"before": facts(before[n]), "after": facts(before[n]), "command": None} for n in names if n in before}
        module.fail_json(msg=str(exc), **result)

    predicted = {n: predict(before[n], state, reason, update_reason) for n in names}
    result["nodes"] = {n: {"before": facts(before[n]), "after": facts(predicted[n]), "command": plan.get(n)} for n in names}
    result["commands"] = [plan[n] for n in names if n in plan]
    result["changed"] = bool(plan)
    if module._diff:
        result["diff"] = {
            "before": {n: view(before[n]) for n in names},
            "after": {n: view(predicted[n]) for n in names},
        }
    if module.check_mode:
        module.exit_json(**result)

    done = []
    for name in names:
        if name not in plan:
            continue
        rc, out, err = slurm.run(plan[name])
        if rc != 0:
            result["commands"] = [plan[n] for n in done + [name]]
            hint = f"Already changed: {', '.join(done)}" if done else ""
            slurm.runner.fail(plan[name], rc, out, err, f"node {name}", hint, failed_command=plan[name], **result)
        done.append(name)

    if params["wait"]:
        after = wait_for(slurm, names, state, params["timeout"], params["poll_interval"], result)
    else:
        after = slurm.nodes() if plan else before
    for name in names:
        result["nodes"][name]["after"] = facts(after[name])
    if module._diff:
        result["diff"]["after"] = {n: view(after[n]) for n in names}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
