"""The nfs_ganesha role's check of the exported volumes as its read found them: gluster_volume's result built from
real `gluster volume info --xml` output (tests/unit/fixtures/gluster), a volume missing, skipped reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.nfs_ganesha_volume_problems import FilterModule
from ansible_collections.hpclab.cluster.plugins.module_utils._gluster import parse_volume_info, volume_facts

PROBLEMS = FilterModule().filters()["nfs_ganesha_volume_problems"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gluster"


def read(fixture, name=None):
    """One loop result of the role's read task: the volume as gluster_volume returns it (volume_facts of the parsed
    `volume info`), under the loop item, its name."""
    (volume,) = (volume_facts(v) for v in parse_volume_info((FIXTURES / fixture).read_text()).values())
    return {"item": name or volume["name"], "changed": False, "commands": [], "volume": volume}


def missing(name):
    """The read of a volume that does not exist (gluster_volume in check mode: warned, nothing read)."""
    return {"item": name, "changed": False, "commands": [], "volume": {}, "warnings": [f"volume {name} does not exist"]}


def export(volume, export_id=1, pseudo=None):
    return {"export_id": export_id, "volume": volume, "pseudo": pseudo or f"/{volume}"}


def test_registered():
    assert set(FilterModule().filters()) == {"nfs_ganesha_volume_problems"}


def test_the_fixtures_are_what_the_cases_say():
    assert read("volume_info_stopped.xml")["volume"]["status"] == "stopped"
    assert read("volume_info_distributed_replicate.xml")["volume"]["status"] == "started"


def test_a_started_volume_is_no_problem():
    started = read("volume_info_distributed_replicate.xml")
    assert PROBLEMS([started], exports=[export(started["item"])], host="nfs1") == []


def test_a_stopped_volume_names_the_host_every_export_of_it_and_the_fix():
    stopped = read("volume_info_stopped.xml")  # the volume "disp"
    exports = [export("gv0"), export("disp", 2), export("disp", 3, "/disp-ro")]
    problems = PROBLEMS([read("volume_info_distributed_replicate.xml", "gv0"), stopped], exports=exports, host="nfs1")
    assert problems == [
        "nfs1: nfs_ganesha_exports[1] (pseudo /disp), nfs_ganesha_exports[2] (pseudo /disp-ro): volume disp is stopped, "
        "and NFS-Ganesha serves a volume only while it is started; this role never starts or stops a volume. "
        "Fix: start it where its state is decided (glusterfs_volumes[].state: started for the glusterfs role, "
        "or 'gluster volume start disp'), or remove its exports from nfs_ganesha_exports."
    ]


def test_a_volume_created_and_never_started_is_a_problem():
    created = read("volume_info_stopped.xml")
    created["volume"]["status"] = "created"  # statusStr "Created", <status>0</status>
    (problem,) = PROBLEMS([created], exports=[export("disp")], host="nfs1")
    assert "volume disp was created but never started" in problem and "Fix:" in problem


def test_a_missing_volume_is_a_problem_in_a_real_run():
    (problem,) = PROBLEMS([missing("gv9")], exports=[export("gv9")], host="nfs1")
    assert problem.startswith("nfs1: nfs_ganesha_exports[0] (pseudo /gv9): volume gv9 does not exist. Fix: ")


def test_check_mode_finds_no_problem_an_earlier_play_of_the_real_run_may_solve():
    # In check mode the glusterfs play created and started nothing: the real run reads again.
    assert PROBLEMS([missing("gv9"), read("volume_info_stopped.xml")], exports=[export("gv9"), export("disp", 2)],
                    host="nfs1", check_mode=True) == []


def test_skipped_reads_are_ignored():
    # Where NFS-Ganesha is still to be installed (check mode on a new host) the read is skipped.
    skipped = {"item": "gv0", "skipped": True, "changed": False, "skip_reason": "Conditional result was False"}
    assert PROBLEMS([skipped], exports=[export("gv0")], host="nfs1") == []


@pytest.mark.parametrize("results", ["gv0", {"results": []}, None])
def test_anything_but_the_results_list_is_refused(results):
    with pytest.raises(AnsibleFilterError, match="loop's results list"):
        PROBLEMS(results, exports=[], host="nfs1")
