"""The host_info module's parsers on real dpkg-query / systemctl output, and its path reader on real files."""

from __future__ import annotations

import hashlib
import os
import pathlib

import pytest

from ansible_collections.hpclab.cluster.plugins.modules import host_info

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "host_info"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_dpkg_query_installed_removed_and_unknown_packages():
    packages = host_info.parse_dpkg_query(text("dpkg-query.txt"), ["libmunge2", "munge", "slurmd"])
    assert packages == {
        "libmunge2": {"installed": True, "status": "installed", "version": "0.5.15-2+deb12u1"},
        # removed, its configuration files kept: not installed
        "munge": {"installed": False, "status": "config-files", "version": "0.5.15-2+deb12u1"},
        "slurmd": {"installed": False, "status": "unknown", "version": ""},
    }


def test_dpkg_query_arch_qualified_name_matches_its_package_line():
    assert host_info.parse_dpkg_query(text("dpkg-query.txt"), ["libmunge2:amd64"])["libmunge2:amd64"]["installed"]


def test_systemctl_show_stopped_disabled_static_and_missing_units():
    units = host_info.parse_systemctl_show(text("systemctl-show.txt"), ["munge", "dbus.service", "nosuch", "systemd-journald"])
    assert {n: (u["exists"], u["active"], u["enabled"]) for n, u in units.items()} == {
        "munge": (True, False, False),
        # static units are active but not "enabled": a role that wants enabled=true still runs its task
        "dbus.service": (True, True, False),
        "nosuch": (False, False, False),
        "systemd-journald": (True, True, False),
    }
    assert units["munge"]["unit_file_state"] == "disabled" and units["munge"]["sub_state"] == "dead"


def test_systemctl_show_running_enabled_unit():
    units = host_info.parse_systemctl_show(text("systemctl-show-running.txt"), ["munge"])
    assert units["munge"] == {
        "exists": True, "active": True, "enabled": True,
        "active_state": "active", "sub_state": "running", "unit_file_state": "enabled",
    }


def test_path_state_of_a_file_a_directory_and_a_missing_path(tmp_path):
    key = tmp_path / "munge.key"
    key.write_bytes(b"\x00secret\xff")
    key.chmod(0o400)
    info = host_info.path_state(str(key), "sha256")
    assert info["exists"] and info["type"] == "file" and info["mode"] == "0400"
    assert info["checksum"] == hashlib.sha256(b"\x00secret\xff").hexdigest()
    assert info["owner"] and info["group"]
    assert host_info.path_state(str(key), "sha1")["checksum"] == hashlib.sha1(b"\x00secret\xff").hexdigest()
    tmp_path.chmod(0o750)
    assert host_info.path_state(str(tmp_path), "sha1") == {
        "exists": True, "type": "directory", "owner": info["owner"], "group": info["group"], "mode": "0750",
    }
    assert host_info.path_state(str(tmp_path / "nothing"), "sha1") == {"exists": False}


def test_path_state_names_an_owner_without_a_name_by_number(tmp_path, monkeypatch):
    def no_name(_ident):
        raise KeyError(_ident)

    monkeypatch.setattr(host_info.pwd, "getpwuid", no_name)
    assert host_info.path_state(str(tmp_path), "sha1")["owner"] == str(os.stat(tmp_path).st_uid)


def setup_facts(gather_subset: str) -> dict:
    """ansible_facts of setup with GATHER_SUBSET, run on this machine."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local", "-m", "setup",
         "-a", "gather_subset=" + gather_subset, "-o"],
        capture_output=True, text=True, check=True, env={**os.environ, "ANSIBLE_LOAD_CALLBACK_PLUGINS": "0"},
    ).stdout
    return json.loads(out.split("=>", 1)[1])["ansible_facts"]


def test_hardware_facts_equal_setup_hardware_subset_on_this_machine():
    """The facts slurm.conf's node lines are made from, as host_info returns them and as setup does."""
    ours = host_info.hardware_facts()
    facts = setup_facts("!all,!min,hardware,platform")
    keys = ["processor_count", "processor_cores", "processor_threads_per_core", "processor_vcpus",
            "processor_nproc", "memtotal_mb", "memfree_mb", "swaptotal_mb", "swapfree_mb", "hostname", "architecture"]
    # memfree moves between the two reads; the rest must be equal.
    assert abs(ours.pop("memfree_mb") - facts.pop("ansible_memfree_mb")) < 256
    keys.remove("memfree_mb")
    assert {k: ours[k] for k in keys} == {k: facts["ansible_" + k] for k in keys}


def setup_cpu_facts(monkeypatch, cpuinfo: str, architecture: str, xen: bool) -> dict:
    """What setup's own LinuxHardware.get_cpu_facts makes of CPUINFO (its file reads fed from the text)."""
    from ansible.module_utils.basic import AnsibleModule
    from ansible.module_utils.facts.hardware import linux
    from ansible.module_utils.testing import patch_module_args

    monkeypatch.setattr(linux.os.path, "exists", lambda path: xen and path == "/proc/xen")
    monkeypatch.setattr(linux.os, "access", lambda path, mode: True)
    monkeypatch.setattr(linux, "get_file_lines", lambda path: cpuinfo.splitlines() if path == "/proc/cpuinfo" else [])
    with patch_module_args({}):
        module = AnsibleModule(argument_spec={})
    facts = linux.LinuxHardware(module).get_cpu_facts(collected_facts={"ansible_architecture": architecture})
    return facts


@pytest.mark.parametrize("architecture", ["x86_64", "aarch64", "armv7l", "ppc64le", "s390x"])
@pytest.mark.parametrize("xen", [False, True, "paravirt"])
def test_cpu_facts_follow_setup_rules(monkeypatch, architecture, xen):
    cpuinfo = text("cpuinfo-x86_64-kvm.txt")
    if xen == "paravirt":
        # A Xen paravirt guest lacks the vme flag.
        cpuinfo, xen = cpuinfo.replace(" vme ", " "), True
    if architecture == "s390x":
        # s390x counts come from its own cpuinfo lines; the x86 text has none.
        cpuinfo += "# processors    : 4\nmax thread id   : 1\n"
    theirs = setup_cpu_facts(monkeypatch, cpuinfo, architecture, xen)
    ours = host_info.cpu_facts(cpuinfo, architecture, xen)
    keys = ["processor_count", "processor_cores", "processor_threads_per_core", "processor_vcpus"]
    assert {k: ours[k] for k in keys} == {k: theirs[k] for k in keys}


def test_cpu_facts_of_this_kvm_guest():
    assert host_info.cpu_facts(text("cpuinfo-x86_64-kvm.txt"), "x86_64") == {
        "processor_count": 1, "processor_cores": 2, "processor_threads_per_core": 1,
        "processor_vcpus": 2, "processor_nproc": 2,
    }


def test_memory_facts_as_setup_names_them(monkeypatch):
    from ansible.module_utils.basic import AnsibleModule
    from ansible.module_utils.facts.hardware import linux
    from ansible.module_utils.testing import patch_module_args

    meminfo = text("meminfo.txt")
    monkeypatch.setattr(linux.os, "access", lambda path, mode: True)
    monkeypatch.setattr(linux, "get_file_lines", lambda path: meminfo.splitlines())
    with patch_module_args({}):
        module = AnsibleModule(argument_spec={})
    theirs = linux.LinuxHardware(module).get_memory_facts()
    ours = host_info.memory_facts(meminfo)
    assert ours == {k: theirs[k] for k in ("memtotal_mb", "memfree_mb", "swaptotal_mb", "swapfree_mb")}
    assert ours["memtotal_mb"] > 1000


def test_dpkg_query_every_package_lists_installed_ones_only():
    known = host_info.list_dpkg_query(text("dpkg-query-all.txt"))
    installed = sorted(n for n, info in known.items() if info["installed"])
    assert "bash" in installed and "slurm-wlm-basic-plugins" in installed
    # removed with their configuration files kept: known to dpkg, not installed
    for name in ("munge", "slurmctld"):
        assert known[name]["status"] == "config-files" and name not in installed
    assert len(known) == len(text("dpkg-query-all.txt").splitlines())


def test_route_get_gives_the_default_interface_address_and_gateway():
    assert host_info.parse_route_get(text("ip-route-get.txt")) == {
        "interface": "eth0", "address": "172.17.0.2", "gateway": "172.17.0.1"}


def test_no_route_is_no_default_ipv4():
    # ip prints the error on stderr and nothing on stdout; neither is a route.
    assert host_info.parse_route_get("") == {}
    assert host_info.parse_route_get(text("ip-route-get-unreachable.stderr")) == {}


def test_every_ipv4_address_but_loopback_in_order():
    assert host_info.parse_ipv4_addresses(text("ip-addr-o4.txt")) == ["172.17.0.2", "10.9.9.9"]


def test_network_facts_equal_setup_network_subset_on_this_machine():
    """The facts docker_macvlan reads (parent interface, host addresses), as host_info and setup find them."""
    from ansible.module_utils.basic import AnsibleModule
    from ansible.module_utils.testing import patch_module_args

    with patch_module_args({}):
        module = AnsibleModule(argument_spec={})
    if module.get_bin_path("ip") is None:
        pytest.skip("no ip command on this machine: setup and host_info both return no network facts")
    ours = host_info.network_facts(module)
    facts = setup_facts("!all,!min,network")
    assert ours["interfaces"] == sorted(facts["ansible_interfaces"])
    default = facts["ansible_default_ipv4"]
    assert ours["default_ipv4"] == {k: default[k] for k in ("interface", "address", "gateway") if k in default}
    assert sorted(ours["all_ipv4_addresses"]) == sorted(facts["ansible_all_ipv4_addresses"])
