"""The slurm_worker role's own preflight: the mode, the one controller, its published result, the MUNGE key."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.slurm_worker_problems import FilterModule

PROBLEMS = FilterModule().filters()["slurm_worker_problems"]

RESULT = {"workers": ["n1", "n2"], "config": {}, "nodes": [], "partitions": [], "gres": [], "exec": []}


def check(host="n1", **kwargs):
    kwargs = {"mode": "container", "controllers": ["c1"], "controller_result": RESULT, **kwargs}
    return PROBLEMS(host, **kwargs)


def test_registered():
    assert set(FilterModule().filters()) == {"slurm_worker_problems"}


@pytest.mark.parametrize(
    "host,kwargs",
    [
        pytest.param("n1", {}, id="container"),
        pytest.param("n2", {"mode": "native"}, id="native"),
        pytest.param("n1", {"controllers": ("c1",)}, id="controllers-tuple"),
        pytest.param("n1", {"check_controller": False, "controller_result": None}, id="preflight-before-controller"),
        pytest.param("n9", {"check_controller": False}, id="preflight-host-not-listed"),
        pytest.param("n9", {"check_controller": False, "controller_result": {"workers": []}}, id="preflight-ignores-result"),
        pytest.param("n1", {"munge_key": False, "munge_hosts": ["n1"]}, id="munge-key-later"),
        pytest.param("n1", {"munge_key": True, "munge_hosts": None}, id="munge-hosts-none"),
    ],
)
def test_no_problem(host, kwargs):
    assert check(host, **kwargs) == []


@pytest.mark.parametrize(
    "host,kwargs,expected",
    [
        pytest.param("n1", {"mode": "bogus"}, ["slurm_worker_mode 'bogus' on n1 is neither 'container' nor 'native'"],
                     id="bad-mode"),
        pytest.param("n1", {"mode": ""}, ["slurm_worker_mode '' on n1"], id="empty-mode"),
        pytest.param("n1", {"mode": "Native"}, ["slurm_worker_mode 'Native' on n1"], id="mode-case-matters"),
        pytest.param("n1", {"mode": None}, ["slurm_worker_mode 'None' on n1"], id="mode-none"),
        pytest.param("n1", {"controllers": []},
                     ["The group 'slurm_master' (variable slurm_worker_master_group) must hold exactly one controller, none found"],
                     id="no-controller"),
        pytest.param("n1", {"controllers": None}, ["must hold exactly one controller, none found"], id="controllers-none"),
        pytest.param("n1", {"controllers": ["c1", "c2"]}, ["must hold exactly one controller, c1, c2,"], id="two-controllers"),
        pytest.param("n1", {"controllers": [], "master_group": "ctl"},
                     ["The group 'ctl' (variable slurm_worker_master_group)"], id="group-name-in-message"),
        pytest.param("n1", {"controller_result": None},
                     ["must hold exactly one controller, c1, and the slurm_master role must run on it earlier"],
                     id="controller-did-not-run"),
        pytest.param("n1", {"controller_result": "c1"}, ["the slurm_master role must run on it earlier"],
                     id="controller-result-not-a-dict"),
        pytest.param("n9", {}, ["n9 runs the slurm_worker role but is not in the controller's worker group",
                                "slurm_master_worker_group on c1"], id="host-not-a-worker-of-the-controller"),
        pytest.param("n1", {"controller_result": {}}, ["n1 runs the slurm_worker role but is not in the controller's worker group"],
                     id="result-without-workers"),
        pytest.param("n1", {"check_controller": False, "controllers": []}, ["must hold exactly one controller, none found"],
                     id="preflight-still-checks-no-controller"),
        pytest.param("n1", {"check_controller": False, "controllers": ["c1", "c2"], "controller_result": None},
                     ["must hold exactly one controller, c1, c2,"], id="preflight-still-checks-two-controllers"),
        pytest.param("n1", {"munge_key": False},
                     ["/etc/munge/munge.key is missing on n1", "add n1 to the munge inventory group (variable munge_group)"],
                     id="munge-key-missing"),
        pytest.param("n1", {"munge_key": False, "munge_hosts": ["n2"]}, ["/etc/munge/munge.key is missing on n1"],
                     id="munge-key-later-on-another-host"),
        pytest.param("n1", {"munge_key": None}, ["/etc/munge/munge.key is missing on n1"], id="munge-key-unknown"),
    ],
)
def test_one_problem(host, kwargs, expected):
    found = check(host, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert "Fix:" in found[0]


def test_several_problems_at_once_are_all_reported():
    found = check("n9", mode="bogus", controllers=["c1", "c2"], munge_key=False)
    assert len(found) == 3, found
    assert "slurm_worker_mode 'bogus' on n9" in found[0]
    assert "must hold exactly one controller, c1, c2," in found[1]
    assert "/etc/munge/munge.key is missing on n9" in found[2]
    assert all("Fix:" in p for p in found)


def test_the_worker_check_needs_exactly_one_controller_first():
    # with two controllers the group problem is reported, not "not in the controller's worker group"
    found = check("n9", controllers=["c1", "c2"])
    assert len(found) == 1
    assert "runs the slurm_worker role" not in found[0]
