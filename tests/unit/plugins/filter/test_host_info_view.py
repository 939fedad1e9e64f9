"""host_info_view on real host_info results, as playbooks/node_info.yml reads a node
(tests/unit/fixtures/host_info/README.md): a fresh lab node, and one where only the packages are installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.host_info_view import host_info_view

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "host_info"
FRESH = json.loads((FIXTURES / "node_info-fresh.json").read_text())
INSTALLED = json.loads((FIXTURES / "node_info-packages-installed.json").read_text())
KEY, KEY_DIR, CONF = "/etc/munge/munge.key", "/etc/munge", "/etc/slurm/slurm.conf"
WORKER_PACKAGES = ["slurmd", "slurm-client", "openmpi-bin", "python3-mpi4py", "python3-numpy"]
MUNGE = {"packages": ["munge"], "paths": [KEY_DIR, KEY], "services": ["munge"], "checksum_algorithm": "sha256"}


def test_fresh_node_lacks_every_package_and_has_no_key():
    view = host_info_view(FRESH, **MUNGE)
    assert view["missing_packages"] == ["munge"]
    assert view["paths"] == {KEY_DIR: FRESH["paths"][KEY_DIR], KEY: {"exists": False}}
    assert view["services"]["munge"]["exists"] is False
    assert host_info_view(FRESH, packages=WORKER_PACKAGES, paths=[KEY], services=["slurmd"])["missing_packages"] == WORKER_PACKAGES


def test_installed_packages_are_not_missing_and_the_view_holds_only_what_was_asked():
    view = host_info_view(INSTALLED, packages=["munge"] + WORKER_PACKAGES, paths=[KEY], services=["slurmd"])
    assert view == {"paths": {KEY: INSTALLED["paths"][KEY]}, "services": {"slurmd": INSTALLED["services"]["slurmd"]}, "missing_packages": []}
    # The package's own key, as munge's postinst leaves it: there, but not at the role's 0400.
    assert view["paths"][KEY]["exists"] and view["paths"][KEY]["mode"] == "0600"


def test_the_reads_own_missing_packages_are_not_trusted():
    # node_info.yml asks for no package by name, so the read's missing_packages is always empty: the
    # view works out what is missing from installed_packages.
    assert FRESH["missing_packages"] == []
    assert host_info_view(FRESH, packages=["munge", "slurmctld"])["missing_packages"] == ["munge", "slurmctld"]


def test_a_name_with_an_architecture_matches_the_bare_name_and_duplicates_count_once():
    assert host_info_view(INSTALLED, packages=["munge:amd64", "munge", "nosuch", "nosuch"])["missing_packages"] == ["nosuch"]


@pytest.mark.parametrize(
    "read, request_",
    [
        ({}, MUNGE),
        (None, MUNGE),
        ({k: v for k, v in INSTALLED.items() if k != "installed_packages"}, MUNGE),
        (INSTALLED, dict(MUNGE, paths=[KEY, "/etc/slurm/cgroup.conf"])),
        (INSTALLED, dict(MUNGE, services=["munge", "slurmdbd"])),
        (INSTALLED, dict(MUNGE, checksum_algorithm="sha1")),
    ],
    ids=["empty", "undefined-defaulted-to-none", "not-all-packages", "path-not-read", "unit-not-read", "other-checksum"],
)
def test_a_read_that_does_not_cover_the_request_gives_an_empty_view(read, request_):
    assert host_info_view(read, **request_) == {}


def test_without_paths_the_checksum_algorithm_does_not_matter():
    assert host_info_view(INSTALLED, packages=["munge"], services=["munge"], checksum_algorithm="sha1")["missing_packages"] == []


def test_slurm_conf_not_there_yet():
    assert host_info_view(INSTALLED, paths=[CONF])["paths"][CONF] == {"exists": False}
