# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for Slurm node states: parse ``scontrol show node -o``, ``sinfo --json`` and
``squeue`` output, decide what a node needs, and build ``scontrol update`` argv lists.

Nothing here runs a command. An empty plan means every node is already where it should be.

Facts come from Slurm 22.05.8 (``SchedMD/slurm`` at ``slurm-22-05-8-1``: ``src/api/node_info.c``,
``src/scontrol/update_node.c``, ``src/slurmctld/node_mgr.c``) and from the output captured in
``tests/unit/fixtures/slurm`` (see capture.sh there). Slurm 22.05 has no ``scontrol --json``.

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import json
import re

SCONTROL = "scontrol"
SQUEUE = "squeue"
# Reasons and times are compared and returned, so fix their language and time format.
ENVIRON = {"LANG": "C", "LC_ALL": "C", "SLURM_TIME_FORMAT": "standard"}

STATES = ("drain", "resume", "down", "undrain")
# node_states[] (src/common/slurm_protocol_defs.c): the base state is the first word of State=.
BASE_STATES = frozenset({"DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE", "UNKNOWN"})
BUSY = frozenset({"ALLOCATED", "MIXED"})
# _valid_node_state_change (node_mgr.c): RESUME is valid only from these flags or base states.
RESUMABLE_FLAGS = frozenset({"DRAIN", "FAIL", "REBOOT_REQUESTED", "REBOOT_ISSUED"})
RESUMABLE_BASES = frozenset({"DOWN", "FUTURE"})
IN_SERVICE_BASES = frozenset({"IDLE", "MIXED", "ALLOCATED"})
# Fields whose value may contain spaces, printed last by slurm_sprint_node_table (node_info.c):
# Reason=<text> [<user>@<time>] and then only Comment= and Extra=.
_TAIL_KEYS = ("Comment", "Extra")
_REASON_SUFFIX = re.compile(r"^(?P<reason>.*) \[(?P<user>[^\]@ ]+)@(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\](?P<tail> (?:Comment|Extra)=.*)?$")
# A key of the head of the line: a space, then a word of letters/digits/_ and '='. OS= (kernel
# version string) is the only head value with spaces, and it holds no '='.
_HEAD_SPLIT = re.compile(r" (?=[A-Za-z][A-Za-z0-9_/]*=)")
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class SlurmError(ValueError):
    """A request the module refuses before running anything."""


class SlurmCliError(Exception):
    """A Slurm command's output says it failed (controller unreachable, ...)."""


# --------------------------------------------------------------------------------------------
# parse


def parse_node_line(line: str) -> dict:
    """One line of ``scontrol show node -o`` as a dict of its fields (strings).

    ``Reason=`` is split into ``Reason`` (the text, which may contain spaces and ``=``),
    ``ReasonUser`` and ``ReasonTime``; a ``Comment=``/``Extra=`` after it is kept under its key.
    """
    head, sep, reason_part = line.rstrip("\n").partition(" Reason=")
    fields = {}
    for token in _HEAD_SPLIT.split(head.strip()):
        key, eq, value = token.partition("=")
        if eq:
            # Some fields are followed by two spaces (``CoresPerSocket=2  CPUAlloc=``).
            fields[key] = value.strip()
    if not sep:
        # No reason; a Comment=/Extra= tail may still follow the head (it was split as head keys).
        return fields
    match = _REASON_SUFFIX.match(reason_part)
    if match is None:
        fields["Reason"] = reason_part
        return fields
    fields["Reason"] = match.group("reason")
    fields["ReasonUser"] = match.group("user")
    fields["ReasonTime"] = match.group("time")
    tail = match.group("tail")
    if tail:
        # Comment= is printed before Extra=; both are free text, so split only on the known keys.
        parts = re.split(r" (Comment|Extra)=", tail)
        for key, value in zip(parts[1::2], parts[2::2]):
            fields[key] = value
    return fields


def node_from_fields(fields: dict) -> dict:
    """The node facts this collection uses, from parsed ``scontrol show node`` fields."""
    words = [w for w in fields.get("State", "").split("+") if w]
    base = words[0] if words else "UNKNOWN"
    # scontrol prints a trailing '*' etc. only in sinfo; State= words are plain, but be lenient.
    base = base.rstrip("*~#!%$@^-")
    flags = sorted(set(words[1:]))
    return {
        "name": fields.get("NodeName", ""),
        "base": base,
        "flags": flags,
        "state": display_state(base, flags),
        "reason": fields.get("Reason", ""),
        "reason_user": fields.get("ReasonUser", ""),
        "reason_time": fields.get("ReasonTime", ""),
        "cpus": _int(fields.get("CPUTot")),
        "cpus_allocated": _int(fields.get("CPUAlloc")),
        "real_memory": _int(fields.get("RealMemory")),
        "slurmd_version": fields.get("Version", ""),
        "slurmd_start_time": fields.get("SlurmdStartTime", ""),
        "boot_time": fields.get("BootTime", ""),
        "partitions": [p for p in fields.get("Partitions", "").split(",") if p],
    }


def parse_show_node(text: str) -> dict:
    """``scontrol show node -o`` (all nodes, one line each) as {name: node}, in Slurm's order."""
    nodes = {}
    for line in (text or "").splitlines():
        if not line.startswith("NodeName="):
            continue
        node = node_from_fields(parse_node_line(line))
        nodes[node["name"]] = node
    return nodes


def parse_sinfo_json(text: str) -> dict:
    """``sinfo --json`` of Slurm 22.05 (openapi v0.0.38) as {name: {base, flags, state, reason}}.

    sinfo exits 0 even when slurmctld cannot be reached: it then prints ``errors`` and no nodes,
    so a non-empty ``errors`` list raises SlurmCliError.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SlurmCliError(f"sinfo --json printed no JSON: {exc}") from None
    errors = data.get("errors") or []
    if errors:
        raise SlurmCliError("sinfo --json reported errors: " + "; ".join(f"{e.get('error', e)} (errno {e.get('errno')})" for e in errors))
    nodes = {}
    for item in data.get("nodes", []):
        base = str(item.get("state", "unknown")).upper()
        flags = sorted(set(item.get("state_flags") or []))
        nodes[item["name"]] = {
            "name": item["name"],
            "base": base,
            "flags": flags,
            "state": display_state(base, flags),
            "reason": item.get("reason") or "",
        }
    return nodes


_RANGES = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def check_hostlist_syntax(expression: str) -> None:
    """Refuse what Slurm 22.05's parser gets wrong without failing: ``scontrol show hostnames
    'n[1-'`` exits 0 and prints ``n]`` (see hostnames_bad_open.json). Every ``[`` must close, and
    hold numbers and ranges only."""
    depth_open = None
    for pos, char in enumerate(expression):
        if char == "[":
            if depth_open is not None:
                raise SlurmError(f"the hostlist expression {expression!r} does not parse: nested '[' at position {pos}")
            depth_open = pos
        elif char == "]":
            if depth_open is None:
                raise SlurmError(f"the hostlist expression {expression!r} does not parse: ']' without '[' at position {pos}")
            inner = expression[depth_open + 1 : pos]
            if not _RANGES.match(inner):
                raise SlurmError(f"the hostlist expression {expression!r} does not parse: [{inner}] is not a list of numbers and ranges")
            depth_open = None
    if depth_open is not None:
        raise SlurmError(f"the hostlist expression {expression!r} does not parse: '[' at position {depth_open} is not closed")


def parse_hostnames(rc: int, stdout: str, stderr: str) -> list:
    """``scontrol show hostnames EXPR``: one name a line. It exits 0 on a bad range and prints
    ``Invalid hostlist: EXPR`` (see hostnames_bad_range.json), so errors are read from the text."""
    lines = [line.strip() for line in (stdout or "").splitlines() if line.strip()]
    errors = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    errors += [line for line in lines if line.startswith("Invalid hostlist")]
    if rc != 0 or errors or not lines:
        raise SlurmCliError("; ".join(errors) or f"rc={rc}, no names")
    return lines


SQUEUE_FORMAT = "--format=%i|%T|%u|%j|%N"


def parse_squeue(text: str) -> list:
    """``squeue --noheader --format=%i|%T|%u|%j|%N`` as a list of jobs."""
    jobs = []
    for line in (text or "").splitlines():
        parts = line.strip().split("|", 4)
        if len(parts) != 5:
            continue
        jobs.append({"job_id": parts[0], "state": parts[1], "user": parts[2], "name": parts[3], "nodes": parts[4]})
    return jobs


def parse_version(text: str) -> str:
    """``sinfo --version``: ``slurm-wlm 22.05.8`` (Debian) or ``slurm 23.02.1``; the version."""
    match = re.search(r"(\d+\.\d+\.\d+)", text or "")
    return match.group(1) if match else ""


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------------------------------------
# states


def display_state(base: str, flags) -> str:
    """The state name sinfo shows (%T), from base state and flags (node_state_string, 22.05).

    DRAINED/DRAINING/FAILING are derived: DRAIN with running or completing jobs is DRAINING.
    """
    flags = set(flags)
    busy = base in BUSY or "COMPLETING" in flags
    if "INVALID_REG" in flags:
        return "INVAL"
    if "MAINTENANCE" in flags:
        return "MAINT"
    if "DRAIN" in flags:
        return "DRAINING" if busy else "DRAINED"
    if "FAIL" in flags:
        return "FAILING" if busy else "FAIL"
    if "COMPLETING" in flags and base == "IDLE":
        return "COMPLETING"
    return base


def is_drained(node: dict) -> bool:
    """DRAIN set and no running or completing job (IS_NODE_DRAINED and not COMPLETING)."""
    return "DRAIN" in node["flags"] and node["base"] not in BUSY and "COMPLETING" not in node["flags"]


def is_in_service(node: dict) -> bool:
    """Schedulable and answering: no DRAIN/FAIL, base IDLE/MIXED/ALLOCATED, slurmd responding."""
    flags = set(node["flags"])
    return node["base"] in IN_SERVICE_BASES and not flags & {"DRAIN", "FAIL", "NOT_RESPONDING", "INVALID_REG"}


def normalise_reason(reason: str | None) -> str:
    """The reason as slurmctld will store it: scontrol strips one leading and one trailing '"'
    (update_node.c), and surrounding blanks are not kept apart in ``show node`` output."""
    text = (reason or "").strip()
    if text.startswith('"'):
        text = text[1:]
    if text.endswith('"'):
        text = text[:-1]
    return text.strip()


def invalid_reg_message(node: dict, state: str) -> str:
    return (
        f"node {node['name']} has an invalid registration (State={node['base']}+{'+'.join(node['flags'])}): "
        f"slurmctld says '{node['reason'] or 'no reason given'}': slurmd reported less than slurm.conf configures "
        f"(configured: CPUTot={node['cpus']}, RealMemory={node['real_memory']} MB). Slurm refuses state={state} "
        "for such a node. Fix the NodeName line in slurm.conf (or the node's hardware) so that it matches "
        "`slurmd -C` on the node, run `scontrol reconfigure` (or restart slurmctld), restart slurmd on the node, "
        "then resume it: the DRAIN flag stays after the fix."
    )


def validate_request(state: str, reason: str | None, wait: bool) -> None:
    if state not in STATES:
        raise SlurmError(f"state must be one of {', '.join(STATES)}, not {state!r}")
    if state in ("drain", "down") and not normalise_reason(reason):
        raise SlurmError(f"state={state} needs a reason: Slurm refuses to drain or down a node without one")
    if reason is not None and ("\n" in reason or "\r" in reason):
        raise SlurmError("reason must be one line: scontrol show node -o prints it on the node's line")
    if wait and state not in ("drain", "resume"):
        raise SlurmError(f"wait works with state=drain (until DRAINED) and state=resume (until back in service), not state={state}")


def validate_node_names(names: list) -> None:
    bad = [n for n in names if not _NODE_NAME.match(n)]
    if bad:
        raise SlurmError(f"not a Slurm node name: {', '.join(repr(n) for n in bad)}")


def needs_hostlist_expansion(items: list) -> bool:
    """Only an expression with brackets needs Slurm's parser; plain names are split on commas."""
    return any("[" in item or "]" in item for item in items)


def split_plain_names(items: list) -> list:
    names = []
    for item in items:
        names.extend(n.strip() for n in item.split(",") if n.strip())
    return unique(names)


def unique(names: list) -> list:
    seen = set()
    return [n for n in names if not (n in seen or seen.add(n))]


# --------------------------------------------------------------------------------------------
# plan


def update_argv(name: str, state: str, reason: str = "") -> list:
    argv = [SCONTROL, "update", f"NodeName={name}", f"State={state.upper()}"]
    if state in ("drain", "down"):
        argv.append(f"Reason={reason}")
    return argv


def plan_node(node: dict, state: str, reason: str | None = None, update_reason: bool = False) -> list:
    """The ``scontrol update`` argv for one node, or [] when it is already in the wanted state.

    Raises SlurmError for a request Slurm would refuse (INVALID_REG nodes cannot be resumed or
    undrained).
    """
    flags = set(node["flags"])
    wanted_reason = normalise_reason(reason)
    same_reason = node["reason"] == wanted_reason
    if state == "drain":
        if "DRAIN" in flags and (same_reason or not update_reason):
            return []
        return update_argv(node["name"], "drain", wanted_reason)
    if state == "down":
        if node["base"] == "DOWN" and (same_reason or not update_reason):
            return []
        return update_argv(node["name"], "down", wanted_reason)
    if state == "resume":
        if not (flags & RESUMABLE_FLAGS or node["base"] in RESUMABLE_BASES):
            return []
        if "INVALID_REG" in flags:
            raise SlurmError(invalid_reg_message(node, state))
        return update_argv(node["name"], "resume")
    if state == "undrain":
        if not flags & {"DRAIN", "FAIL"}:
            return []
        if "INVALID_REG" in flags:
            raise SlurmError(invalid_reg_message(node, state))
        return update_argv(node["name"], "undrain")
    raise SlurmError(f"unknown state {state!r}")


def plan_nodes(nodes: dict, names: list, state: str, reason: str | None = None, update_reason: bool = False) -> dict:
    """{name: argv} for the named nodes that need a change. Every refusal is collected first, so
    one message names every node at fault and nothing runs."""
    unknown = [n for n in names if n not in nodes]
    if unknown:
        raise SlurmError(
            f"unknown node{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: not in slurmctld's node table "
            f"(known: {', '.join(nodes) or 'none'}). Check the name against `scontrol show node` / slurm.conf"
        )
    plan, errors = {}, []
    for name in names:
        try:
            argv = plan_node(nodes[name], state, reason, update_reason)
        except SlurmError as exc:
            errors.append(str(exc))
            continue
        if argv:
            plan[name] = argv
    if errors:
        raise SlurmError(" | ".join(errors))
    return plan


def predict(node: dict, state: str, reason: str | None = None, update_reason: bool = False) -> dict:
    """The node as it should look once its planned command ran (for check and diff mode)."""
    if not plan_node(node, state, reason, update_reason):
        return dict(node)
    after = dict(node, flags=list(node["flags"]))
    flags = set(node["flags"])
    base = node["base"]
    if state == "drain":
        flags = (flags - {"FAIL"}) | {"DRAIN"}
        after["reason"] = normalise_reason(reason)
    elif state == "down":
        # DOWN kills the node's jobs (kill_running_job_by_node_name) and keeps DRAIN.
        base = "DOWN"
        flags -= {"COMPLETING"}
        after["reason"] = normalise_reason(reason)
        after["cpus_allocated"] = 0
    elif state == "resume":
        flags -= RESUMABLE_FLAGS
        if base in RESUMABLE_BASES:
            base = "IDLE"
        after["reason"] = ""
    elif state == "undrain":
        flags -= {"DRAIN", "FAIL"}
        if base != "DOWN":
            after["reason"] = ""
    if after["reason"] == "":
        after["reason_user"] = after["reason_time"] = ""
    after["base"], after["flags"] = base, sorted(flags)
    after["state"] = display_state(base, flags)
    return after


VIEW_KEYS = ("state", "base", "flags", "reason")


def view(node: dict) -> dict:
    """What diff mode shows for a node."""
    return {key: node[key] for key in VIEW_KEYS}


def unfinished(nodes: dict, names: list, state: str) -> list:
    """Nodes of ``names`` not yet where ``wait`` wants them (DRAINED, or back in service)."""
    done = is_drained if state == "drain" else is_in_service
    return [n for n in names if n in nodes and not done(nodes[n])]


def describe(node: dict) -> str:
    text = f"{node['name']} ({node['state']}, State={'+'.join([node['base'], *node['flags']])}"
    if node["reason"]:
        text += f", reason '{node['reason']}'"
    return text + ")"
