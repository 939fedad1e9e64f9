"""Check before touching a real machine (issue 60): playbooks/preflight.yml alone, over this scenario's deploy path (SSH
as the sudo user admin), reads every host without changing anything and prints one table of what is ready
(playbooks/ready.yml, filter hosts_ready). Here every node is ready; a brick device that does not exist, or an
inventory user without sudo, makes it fail before any change, the table and the message naming the host and the fix."""

from __future__ import annotations

import re

import pytest
from helpers import get_host, inventory_hosts, run_playbook

NODES = inventory_hosts("all")
BRICK_NODES = inventory_hosts("glusterfs")
PREFLIGHT = "../../playbooks/preflight.yml"
# A user that logs in with admin's key but has no sudo.
NO_SUDO = "nosudo"


def row(output: str, host: str) -> str:
    """The host's line of the table (the helper's output has single spaces)."""
    found = re.search(rf'"{re.escape(host)} (yes|NO) [^"]*"', output)
    assert found, output[-3000:]
    return found.group(0)


def test_every_node_is_ready_and_nothing_changes():
    run = run_playbook(PREFLIGHT, check=True)
    assert run.rc == 0 and run.total_changed == 0, run
    assert '"host reached sudo release memory brick devices models macvlan range"' in run.output, run
    for node in NODES:  # native mode: no macvlan range to probe
        assert re.fullmatch(rf'"{node} yes yes Debian 12\.\d+ [\d.]+ GiB - - -"', row(run.output, node)), row(run.output, node)


def test_a_brick_device_that_does_not_exist_fails_before_any_change():
    run = run_playbook(PREFLIGHT, extra_vars={"glusterfs_brick_devices": [{"device": "/dev/disk/by-id/usb-no-such-stick", "fstype": "xfs",
                                                                           "mount": "/bricks/gv0"}]})
    assert run.rc != 0 and run.total_changed == 0, run
    for node in BRICK_NODES:
        assert "/dev/disk/by-id/usb-no-such-stick MISSING" in row(run.output, node)
        assert (f"{node}: brick device /dev/disk/by-id/usb-no-such-stick (glusterfs_brick_devices) is not a block device "
                "on it") in run.output, run
    assert "Fix: name the disk or USB stick as the host sees it" in run.output
    # The layers' own checks did not run: the run stopped at the table.
    assert "Check the MUNGE and Slurm layers' input" not in run.output, run


@pytest.fixture
def user_without_sudo():
    for node in NODES:
        get_host(node).check_output(
            f"id {NO_SUDO} || useradd -m -s /bin/bash {NO_SUDO}; install -d -o {NO_SUDO} -g {NO_SUDO} -m 0700 ~{NO_SUDO}/.ssh;"
            f" install -o {NO_SUDO} -g {NO_SUDO} -m 0600 ~admin/.ssh/authorized_keys ~{NO_SUDO}/.ssh/authorized_keys")
    yield NO_SUDO
    for node in NODES:
        get_host(node).check_output(f"userdel -r {NO_SUDO}")


def test_an_inventory_user_without_sudo_fails_before_any_change(user_without_sudo):
    run = run_playbook(PREFLIGHT, extra_vars={"ansible_user": user_without_sudo})
    assert run.rc != 0 and run.total_changed == 0, run
    for node in NODES:
        assert row(run.output, node).startswith(f'"{node} yes NO Debian'), row(run.output, node)
        assert f"{node}: a command with sudo (become) failed: Missing sudo password. Fix:" in run.output, run
