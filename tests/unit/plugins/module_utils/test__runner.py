"""_runner: argv lists through run_command, the binary looked up once, one failure message."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.module_utils._runner import CommandRunner, failure_message


class Failed(Exception):
    pass


class FakeModule:
    """Records get_bin_path and run_command calls; fail_json raises Failed with its arguments."""

    def __init__(self, answer=(0, "out\n", "")):
        self.answer = answer
        self.lookups = []
        self.calls = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        self.lookups.append((name, required, opt_dirs))
        return "/usr/sbin/" + name

    def run_command(self, args, **kwargs):
        self.calls.append((args, kwargs))
        return self.answer

    def fail_json(self, **kwargs):
        raise Failed(kwargs)


def test_run_resolves_the_command_once_and_passes_the_environment():
    module = FakeModule()
    runner = CommandRunner(module, environ={"LANG": "C"}, opt_dirs=["/usr/sbin"])
    assert runner.run(["gluster", "pool", "list"]) == (0, "out\n", "")
    assert runner.run(["gluster", "volume", "info"]) == (0, "out\n", "")
    assert module.lookups == [("gluster", True, ["/usr/sbin"])]
    assert [c[0] for c in module.calls] == [["/usr/sbin/gluster", "pool", "list"], ["/usr/sbin/gluster", "volume", "info"]]
    assert all(c[1] == {"environ_update": {"LANG": "C"}} for c in module.calls)


def test_run_returns_a_failure_without_failing():
    module = FakeModule((1, "", "no\n"))
    assert CommandRunner(module).run(["scontrol", "ping"]) == (1, "", "no\n")
    assert module.calls[0][1] == {"environ_update": {}}


def test_check_returns_stdout():
    assert CommandRunner(FakeModule()).check(["scontrol", "show", "node"]) == "out\n"


def test_check_fails_naming_the_object_the_command_rc_and_stderr():
    module = FakeModule((1, "", "slurm_load_node error: Unable to contact slurm controller (connect failure)\n"))
    with pytest.raises(Failed) as failed:
        CommandRunner(module).check(["scontrol", "show", "node", "-o"], "cannot read the nodes", "Is slurmctld up?", commands=[])
    result = failed.value.args[0]
    assert result["msg"] == (
        "cannot read the nodes: scontrol show node -o failed: rc=1, "
        "stderr: slurm_load_node error: Unable to contact slurm controller (connect failure). Is slurmctld up?"
    )
    assert (result["rc"], result["stdout"], result["commands"]) == (1, "", [])
    assert result["stderr"].startswith("slurm_load_node error")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((["a", "b"], 2, "", "bad\n"), "a b failed: rc=2, stderr: bad"),
        # some CLIs print their errors on stdout
        ((["gluster", "volume", "info"], 1, "Connection failed.\n", ""), "gluster volume info failed: rc=1, stderr: Connection failed."),
        ((["a"], 1, None, None), "a failed: rc=1, stderr: "),
        ((["scontrol", "update", 7], 1, "", "x", "node n1"), "node n1: scontrol update 7 failed: rc=1, stderr: x"),
        ((["a"], 1, "", "x", "", "Already changed: n1"), "a failed: rc=1, stderr: x. Already changed: n1"),
    ],
)
def test_failure_message(args, message):
    assert failure_message(*args) == message
