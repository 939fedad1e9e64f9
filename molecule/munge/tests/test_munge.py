"""The munge role on three real nodes: one key, credentials that decode across nodes, safe failures."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook

testinfra_hosts = inventory_hosts("munge")
KEY = "/etc/munge/munge.key"
FIRST = testinfra_hosts[0]


def key_sha256(host) -> str:
    return host.check_output(f"sha256sum {KEY}").split()[0]


def test_munged_running(host):
    with journal_on_failure(host, "munge"):
        assert host.service("munge").is_running


def test_munged_enabled(host):
    assert host.service("munge").is_enabled


def test_munged_started_once_with_the_cluster_key(host):
    """The package's own start is held back (install.yml, policy_rc_d): after converge and the idempotence run,
    munged has started exactly once on each fresh node, with the cluster key, and never with the package's key."""
    starts = host.check_output("grep -c 'Starting munge-' /var/log/munge/munged.log || true")
    assert starts == "1", host.check_output("cat /var/log/munge/munged.log")


def test_key_mode_0400(host):
    assert host.file(KEY).mode == 0o400


def test_key_owner_munge(host):
    key = host.file(KEY)
    assert (key.user, key.group) == ("munge", "munge")


def test_key_directory_mode_0700(host):
    directory = host.file("/etc/munge")
    assert (directory.mode, directory.user, directory.group) == (0o700, "munge", "munge")


def test_key_identical_to_first_node(host):
    assert key_sha256(host) == key_sha256(get_host(FIRST))


def test_no_key_left_in_temp_files(host):
    assert host.run("find /etc/munge /tmp /var/tmp -name '.munge.key.*'").stdout == ""


def test_credential_from_first_node_decodes(host):
    credential = get_host(FIRST).check_output("munge -n")
    result = host.run("echo %s | unmunge", credential)
    with journal_on_failure(host, "munge"):
        assert result.rc == 0, result.stderr
        assert "STATUS:          Success (0)" in result.stdout


def test_credential_from_here_decodes_on_first_node(host):
    credential = host.check_output("munge -n")
    assert get_host(FIRST).run("echo %s | unmunge", credential).rc == 0


# Runs once (no `host` argument): whole-cluster properties through ansible-playbook.


def test_check_mode_changes_nothing():
    run = run_playbook(check=True)
    assert run.rc == 0, run
    assert run.total_changed == 0, run


def assert_credentials_still_decode():
    """After a refused run munged still answers as before: a credential of the first node decodes on every node."""
    credential = get_host(FIRST).check_output("munge -n")
    for h in testinfra_hosts:
        result = get_host(h).run("echo %s | unmunge", credential)
        assert result.rc == 0 and "STATUS:          Success (0)" in result.stdout, (h, result.stderr)


def test_packages_without_munge_fail_before_any_change():
    before = {h: key_sha256(get_host(h)) for h in testinfra_hosts}
    run = run_playbook(extra_vars={"munge_packages": ["libmunge2"]})
    assert run.rc != 0, run
    for host in testinfra_hosts:
        assert f"{host}: munge_packages lacks munge" in run.output, (host, run)
    assert "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert {h: key_sha256(get_host(h)) for h in testinfra_hosts} == before
    assert_credentials_still_decode()


def test_invalid_base64_key_fails_before_any_change():
    before = {h: key_sha256(get_host(h)) for h in testinfra_hosts}
    run = run_playbook(extra_vars={"munge_key": "not*base64"})
    assert run.rc != 0, run
    assert "munge_key is not valid base64" in run.output, run
    assert run.total_changed == 0, run
    assert {h: key_sha256(get_host(h)) for h in testinfra_hosts} == before
    assert_credentials_still_decode()


def test_short_key_fails_before_any_change():
    run = run_playbook(extra_vars={"munge_key": base64.b64encode(b"k" * 16).decode()})
    assert run.rc != 0, run
    assert "munge_key decodes to 16 bytes; munged needs at least 32" in run.output, run
    assert run.total_changed == 0, run


def test_other_supplied_key_is_refused_without_rotate():
    before = {h: key_sha256(get_host(h)) for h in testinfra_hosts}
    run = run_playbook(extra_vars={"munge_key": base64.b64encode(os.urandom(64)).decode()})
    assert run.rc != 0, run
    assert "munge_rotate" in run.output, run
    assert all(h in run.output for h in testinfra_hosts), run
    assert run.total_changed == 0, run
    assert {h: key_sha256(get_host(h)) for h in testinfra_hosts} == before
    assert_credentials_still_decode()


@pytest.fixture
def foreign_key_on_last_node():
    """The last node holds a different key, as if set up by hand earlier; restored afterwards."""
    node = get_host(testinfra_hosts[-1])
    node.check_output(f"cp -p {KEY} /root/munge.key.orig")
    node.check_output(f"head -c 64 /dev/urandom > {KEY}.new && chown munge:munge {KEY}.new && chmod 0400 {KEY}.new && mv {KEY}.new {KEY}")
    yield node
    node.check_output(f"cp -p /root/munge.key.orig {KEY} && rm -f /root/munge.key.orig")


def test_node_with_foreign_key_is_named_and_left_alone(foreign_key_on_last_node):
    foreign = key_sha256(foreign_key_on_last_node)
    run = run_playbook()
    assert run.rc != 0, run
    assert "The hosts hold different MUNGE keys" in run.output, run
    assert f"{testinfra_hosts[-1]} (sha256 {foreign[:12]})" in run.output, run
    assert "munge_rotate=true" in run.output, run
    assert run.total_changed == 0, run
    assert key_sha256(foreign_key_on_last_node) == foreign


# The checks are tagged always: a run limited to the key step by --tags names the host and leaves its key alone too.
def test_run_limited_by_tags_checks_first_and_leaves_a_foreign_key_alone(foreign_key_on_last_node):
    foreign = key_sha256(foreign_key_on_last_node)
    run = run_playbook("converge.yml", "--tags", "munge_configure")
    assert run.rc != 0, run
    assert "The hosts hold different MUNGE keys" in run.output, run
    assert f"{testinfra_hosts[-1]} (sha256 {foreign[:12]})" in run.output, run
    assert run.total_changed == 0, run
    assert key_sha256(foreign_key_on_last_node) == foreign


def test_run_limited_by_tags_to_the_service_step_changes_nothing():
    run = run_playbook("converge.yml", "--tags", "munge_service")
    assert run.rc == 0, run
    assert run.total_changed == 0, run


def test_rotation_replaces_every_key_and_credentials_still_decode():
    new_key = base64.b64encode(os.urandom(128)).decode()
    run = run_playbook(extra_vars={"munge_key": new_key, "munge_rotate": True})
    assert run.rc == 0, run
    expected = __import__("hashlib").sha256(base64.b64decode(new_key)).hexdigest()
    assert {key_sha256(get_host(h)) for h in testinfra_hosts} == {expected}
    credential = get_host(FIRST).check_output("munge -n")
    assert all(get_host(h).run("echo %s | unmunge", credential).rc == 0 for h in testinfra_hosts)
    again = run_playbook()  # no munge_key: the hosts' shared (new) key is adopted, nothing changes
    assert again.rc == 0 and again.total_changed == 0, again


def vaulted_inventory(tmp_path, secrets: str, password: str) -> tuple:
    """README's "The secrets: a vault file": an inventory source whose group_vars/all/vault.yml holds SECRETS, encrypted
    with ansible-vault; the arguments that add it to a run (its password from a file, as --ask-vault-pass would)."""
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "hosts.yml").write_text("all: {}\n")
    vault, password_file = tmp_path / "group_vars" / "all" / "vault.yml", tmp_path / "vault-password"
    vault.write_text(secrets)
    password_file.write_text(password + "\n")
    subprocess.run(["ansible-vault", "encrypt", "--vault-password-file", str(password_file), str(vault)], check=True, capture_output=True)
    assert vault.read_text().startswith("$ANSIBLE_VAULT;1.1;AES256")
    return ("-i", str(tmp_path / "hosts.yml"), "--vault-password-file", str(password_file))


def test_a_vaulted_key_rotates_every_node_and_never_shows(tmp_path):
    """The key given as the README says, in an encrypted vault.yml of the inventory: munge_key from a vault variable,
    rotated with munge_rotate. Every node holds the vaulted key, the run prints neither the key nor its decoded
    bytes; a second run with the vault changes nothing, and one with a wrong vault password fails before any change."""
    new_key = base64.b64encode(os.urandom(128)).decode()
    secrets = f'vault_munge_key: "{new_key}"\nmunge_key: "{{{{ vault_munge_key }}}}"\n'
    args = vaulted_inventory(tmp_path, secrets, base64.b64encode(os.urandom(24)).decode())
    run = run_playbook("converge.yml", *args, extra_vars={"munge_rotate": True})
    assert run.rc == 0, run
    expected = hashlib.sha256(base64.b64decode(new_key)).hexdigest()
    assert {key_sha256(get_host(h)) for h in testinfra_hosts} == {expected}
    assert new_key not in run.output and new_key[:24] not in run.output
    again = run_playbook("converge.yml", *args)
    assert again.rc == 0 and again.total_changed == 0, again
    wrong = run_playbook("converge.yml", *args[:2], "--vault-password-file", str(tmp_path / "hosts.yml"))
    assert wrong.rc != 0 and "Decryption failed" in wrong.output, wrong
    assert {key_sha256(get_host(h)) for h in testinfra_hosts} == {expected}
