"""Helpers shared by the Molecule scenarios' testinfra verifiers.

Each verifier asserts what a user would check on the real daemons. Cross-node checks reach other
nodes through the scenario's inventory; bad-input checks run the scenario's own converge playbook
with ansible-playbook and assert that it fails before any change.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import testinfra
import testinfra.utils.ansible_runner

INVENTORY = os.environ.get("MOLECULE_INVENTORY_FILE", "")
SCENARIO_DIR = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", "."))
RECAP_LINE = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
# A task's result for a host in the default callback's output: "ok: [node1]", "changed: [node1 -> ctrl1]",
# "fatal: [node2]: FAILED! ...", "skipping: [node3] => (item=...)".
RESULT_LINE = re.compile(r"^(?:ok|changed|skipping|fatal|failed|unreachable|ignored): \[([^\]\s]+)[\] ]", re.M)


def inventory_hosts(group: str = "all") -> list[str]:
    """Host names of a group of the scenario's inventory, in inventory order."""
    runner = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY)
    return sorted(runner.get_hosts(group))


def get_host(name: str):
    """A testinfra host for another node of the scenario: its container, with `docker exec` as root, whatever path the
    scenario deploys over (slurm_native reaches its nodes over SSH as a sudo user)."""
    return testinfra.get_host(f"docker://{name}")


class PlaybookRun:
    """The outcome of one ansible-playbook run against the scenario's nodes."""

    def __init__(self, proc: subprocess.CompletedProcess):
        self.rc = proc.returncode
        # One line per result and single spaces, so that a message can be matched whatever the
        # callback's line folding.
        self.output = " ".join((proc.stdout + proc.stderr).split())
        self.recap = {
            m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)), "unreachable": int(m.group(4)), "failed": int(m.group(5))}
            for m in RECAP_LINE.finditer(proc.stdout)
        }
        # Every host that some task ran on (or failed on): the hosts of the run's plays.
        self.hosts = sorted(set(RESULT_LINE.findall(proc.stdout)))

    @property
    def total_changed(self) -> int:
        """The changes of all hosts, from the recap. A recap that was not printed, or that the regex no longer reads
        (a reformatted callback), would sum to 0 and pass every "changed=0" assertion: it must name every host that a
        task ran on, and at least one."""
        assert self.recap, f"no PLAY RECAP line could be read: {self!r}"
        missing = [h for h in self.hosts if h not in self.recap]
        assert not missing, f"the recap does not name {missing}, hosts that tasks ran on: {self!r}"
        return sum(r["changed"] for r in self.recap.values())

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"PlaybookRun(rc={self.rc}, recap={self.recap})\n{self.output[-6000:]}"


def run_playbook(playbook: str = "converge.yml", *args: str, check: bool = False, extra_vars: dict | None = None) -> PlaybookRun:
    """Run a playbook of the scenario against its inventory, as Molecule's converge does."""
    cmd = ["ansible-playbook", "-i", INVENTORY, str(SCENARIO_DIR / playbook)]
    if check:
        cmd += ["--check", "--diff"]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    cmd += list(args)
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    return PlaybookRun(subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False))


def run_playbooks_side_by_side(playbook: str, cases: list[dict], *args: str, workers: int = 3) -> dict[str, PlaybookRun]:
    """Runs of one playbook (with ARGS, the same for all), one per case (its extra vars), side by side; each case's
    run is at runs[case_key(extra_vars)]. For bad-input cases only: each must fail before any change, so that none
    can disturb another (and a case that changes something fails its own test). What a case must leave as it was
    is read before all of them."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {case_key(extra_vars): pool.submit(run_playbook, playbook, *args, extra_vars=extra_vars) for extra_vars in cases}
        return {key: future.result() for key, future in futures.items()}


def case_key(extra_vars: dict) -> str:
    """The key of a case's run in run_playbooks_side_by_side's answer."""
    return json.dumps(extra_vars, sort_keys=True)


def _gluster_busy_messages() -> tuple:
    """glusterd's answers while another command holds a lock: BUSY_MESSAGES of the collection's
    plugins/module_utils/_gluster.py (pure Python, no Ansible import), loaded from the checkout by its path."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "plugins" / "module_utils" / "_gluster.py"
    spec = importlib.util.spec_from_file_location("hpclab_gluster", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BUSY_MESSAGES


GLUSTER_BUSY = _gluster_busy_messages()


def gluster_xml(host, *args: str, timeout: float = 30):
    """Parsed `gluster ... --xml` output from a node (ElementTree root), asserting opRet 0. glusterd refuses a command
    while another holds the volume's lock ("Another transaction is in progress", e.g. the monitoring collectors'
    `volume status` every 5 s): asked again, once a second, for up to TIMEOUT seconds, as the gluster_volume module does."""
    import time
    import xml.etree.ElementTree as ET

    deadline = time.monotonic() + timeout
    while True:
        root = ET.fromstring(host.check_output("gluster --mode=script %s --xml" % " ".join(args)))
        busy = root.findtext("opRet") != "0" and any(b in (root.findtext("opErrstr") or "") for b in GLUSTER_BUSY)
        if not busy or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert root.findtext("opRet") == "0", root.findtext("opErrstr")
    return root


# A GET made on a node: its HTTP status, or "no-http ERROR" where the port speaks no HTTP.
HTTP_STATUS = """
import base64, sys, urllib.error, urllib.request
request = urllib.request.Request(sys.argv[1])
if sys.argv[2]:
    request.add_header("Authorization", "Basic " + base64.b64encode(sys.argv[2].encode()).decode())
try:
    with urllib.request.urlopen(request, timeout=10) as response:
        print(response.status)
except urllib.error.HTTPError as error:
    print(error.code)
except Exception as error:
    print("no-http", type(error).__name__)
"""


def http_status(host: str, url: str, credentials: str = "") -> str:
    """What a GET of url made on node HOST gets: the HTTP status ("401"), or "no-http ERROR"; without credentials,
    or with USER:PASSWORD."""
    return get_host(host).check_output(f"python3 -c {shlex.quote(HTTP_STATUS)} {shlex.quote(url)} {shlex.quote(credentials)}")


@contextlib.contextmanager
def journal_on_failure(host, unit: str, lines: int = 50):
    """Print the unit's journal when what runs inside fails: an assertion, or any other error (a browser's wait that
    timed out raises selenium's TimeoutException, which left no journal in a clean-clone run of 2026-12-06)."""
    try:
        yield
    except Exception:
        print(f"--- journalctl -u {unit} on {host.backend.get_hostname()} ---")
        print(host.run(f"journalctl -u {unit} -n {lines} --no-pager").stdout)
        raise
