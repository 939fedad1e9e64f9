"""host_path_state on entries shaped as the host_info module returns them (see test_host_info)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.host_path_state import host_path_state

KEY = {"exists": True, "type": "file", "owner": "munge", "group": "munge", "mode": "0400", "checksum": "ab12"}
DIR = {"exists": True, "type": "directory", "owner": "munge", "group": "munge", "mode": "0700"}
WANT_KEY = {"checksum": "ab12", "owner": "munge", "group": "munge", "mode": "0400"}


def test_missing_path():
    assert host_path_state({"exists": False}, **WANT_KEY) == "missing"
    assert host_path_state({"exists": False}, type="directory") == "missing"


@pytest.mark.parametrize(
    "change, state",
    [
        ({}, "in place"),
        ({"checksum": "ff00"}, "differs"),
        ({"type": "directory"}, "differs"),
        ({"mode": "0644"}, "attributes"),
        ({"owner": "root"}, "attributes"),
        ({"group": "root"}, "attributes"),
    ],
)
def test_file(change, state):
    assert host_path_state({**KEY, **change}, **WANT_KEY) == state


def test_empty_wanted_checksum_never_matches_a_file():
    """A cluster key not known yet ('') means the key has to be written."""
    assert host_path_state(KEY, checksum="", owner="munge", group="munge", mode="0400") == "differs"


@pytest.mark.parametrize(
    "change, state",
    [({}, "in place"), ({"type": "file"}, "differs"), ({"mode": "0755"}, "attributes"), ({"owner": "root"}, "attributes")],
)
def test_directory(change, state):
    assert host_path_state({**DIR, **change}, type="directory", owner="munge", group="munge", mode="0700") == state


def test_numeric_owner_compares_with_the_number_host_info_returns():
    info = {**DIR, "owner": "64030", "group": "64030", "mode": "0750"}
    assert host_path_state(info, type="directory", owner=64030, group=64030, mode="0750") == "in place"


def test_options_left_out_are_not_compared():
    assert host_path_state({**KEY, "mode": "0777", "checksum": "x"}) == "in place"


@pytest.mark.parametrize("bad", [None, "x", {"type": "file"}])
def test_not_a_host_info_entry(bad):
    with pytest.raises(AnsibleFilterError, match="host_info"):
        host_path_state(bad)


def test_unknown_type():
    with pytest.raises(AnsibleFilterError, match="type"):
        host_path_state(KEY, type="link")
