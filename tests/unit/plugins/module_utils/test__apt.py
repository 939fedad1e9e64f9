"""deb_packages' pure code on real dpkg-query and apt-get output (tests/unit/fixtures/apt/README.md)."""

from __future__ import annotations

import pathlib

import pytest

from ansible_collections.hpclab.cluster.plugins.module_utils import _apt

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "apt"
SIX = ["munge", "slurmd", "slurm-client", "openmpi-bin", "python3-mpi4py", "python3-numpy"]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_dpkg_status_of_a_removed_a_never_installed_and_installed_packages():
    names = ["munge", "slurmd", "python3", "python3-apt", "libmunge2", "no-such-package"]
    packages = _apt.parse_dpkg_query(fixture("dpkg-query-mixed.stdout"), names)
    assert packages["munge"] == {"installed": False, "status": "config-files", "version": "0.5.15-2+deb12u1"}
    assert packages["slurmd"]["status"] == "unknown" and packages["libmunge2"]["installed"]
    assert _apt.missing_packages(names, packages) == ["munge", "slurmd", "no-such-package"]


def test_nothing_missing_once_installed():
    packages = _apt.parse_dpkg_query(fixture("dpkg-query-installed.stdout"), SIX)
    assert _apt.missing_packages(SIX, packages) == []


def test_names_keep_their_order_once_and_an_architecture_matches_its_name():
    text = "libc6\tinstalled\t2.36-9\nzlib1g\tconfig-files\t1:1.2.13\n"
    names = ["zlib1g", "libc6:amd64", "zlib1g", "curl"]
    assert _apt.missing_packages(names, _apt.parse_dpkg_query(text, names)) == ["zlib1g", "curl"]


@pytest.mark.parametrize("name", ["munge", "python3-mpi4py", "libc6:amd64", "g++", "libstdc++6", "r-base-core"])
def test_package_names_accepted(name):
    assert _apt.bad_names([name]) == []


@pytest.mark.parametrize("name", ["slurmd=22.05.8-4", "slurm*", "Munge", "-y", "a", "munge; rm -rf /", "", 3])
def test_versions_wildcards_and_options_refused(name):
    assert _apt.bad_names(["munge", name]) == [name]


def test_simulation_lists_every_package_to_unpack():
    plan = _apt.parse_simulation(fixture("apt-get-simulate.stdout"))
    assert len(plan) == 50
    names = {p["name"] for p in plan}
    assert set(SIX) <= names and "libicu72" in names
    munge = next(p for p in plan if p["name"] == "munge")
    assert munge == {"name": "munge", "version": "0.5.15-2+deb12u1", "from": None}


def test_simulation_of_an_upgrade_keeps_the_old_version():
    plan = _apt.parse_simulation(fixture("apt-get-simulate-upgrade.stdout"))
    assert plan == [
        {"name": "libapt-pkg6.0", "version": "2.6.2", "from": "2.6.1"},
        {"name": "apt", "version": "2.6.2", "from": "2.6.1"},
        {"name": "apt-utils", "version": "2.6.2", "from": None},
    ]


def test_simulation_that_failed_plans_nothing():
    assert _apt.parse_simulation(fixture("apt-get-simulate-unknown.stdout")) == []
    assert "Unable to locate package no-such-package" in fixture("apt-get-simulate-unknown.stderr")


def test_install_output_names_what_was_unpacked_as_the_simulation_did():
    done = _apt.parse_unpacked(fixture("apt-get-install.stdout"))
    planned = _apt.parse_simulation(fixture("apt-get-simulate.stdout"))
    assert sorted(p["name"] for p in done) == sorted(p["name"] for p in planned)
    assert {(p["name"], p["version"]) for p in done} == {(p["name"], p["version"]) for p in planned}
    assert {"name": "libibverbs1", "version": "44.0-2", "from": None} in done


def test_install_output_of_an_upgrade():
    done = _apt.parse_unpacked(fixture("apt-get-install-upgrade.stdout"))
    assert done == _apt.parse_simulation(fixture("apt-get-simulate-upgrade.stdout"))


def test_diff_one_line_a_package_sorted():
    text = _apt.diff_text(_apt.parse_simulation(fixture("apt-get-simulate-upgrade.stdout")))
    assert text == "apt 2.6.1 -> 2.6.2\napt-utils 2.6.2\nlibapt-pkg6.0 2.6.1 -> 2.6.2\n"
    assert _apt.diff_text([{"name": "munge", "version": None, "from": None}]) == "munge\n"
    assert _apt.diff_text([]) == ""


def test_install_argv():
    argv = _apt.install_argv(["munge", "slurmd"], False, 60)
    assert argv[:2] == ["apt-get", "install"] and argv[-2:] == ["munge", "slurmd"]
    assert "--no-install-recommends" in argv and "--simulate" not in argv
    assert "DPkg::Lock::Timeout=60" in argv and "Dpkg::Options::=--force-confold" in argv
    simulated = _apt.install_argv(["munge"], True, 5, simulate=True)
    assert "--install-recommends" in simulated and "--simulate" in simulated
    assert _apt.update_argv(30) == ["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=30"]


@pytest.mark.parametrize("mtimes, valid, fresh", [
    ([1000.0], 3600, True),
    ([1000.0 - 3600], 3600, False),
    ([0.0, 900.0], 3600, True),
    ([], 3600, False),
    ([1000.0], 0, False),
])
def test_lists_are_fresh(mtimes, valid, fresh):
    assert _apt.lists_are_fresh(1000.0 + 1, mtimes, valid) is fresh
