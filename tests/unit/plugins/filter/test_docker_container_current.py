"""docker_container_current on a real docker_host_info read: the lab controller node1's engine (container mode),
read by `ansible node1 -m community.docker.docker_host_info -a "images=true containers=true containers_all=true
verbose_output=true"` (Docker 20.10 from Debian bookworm): slurmctld, slurmdbd and MariaDB running, their images
and the base image."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.docker_container_current import FilterModule

READ = json.loads((Path(__file__).parents[2] / "fixtures" / "docker" / "host_info_controller.json").read_text())
current = FilterModule().filters()["docker_container_current"]
SLURMCTLD = "hpclab/slurmctld:e2150f35ad72"
RECIPE = {"org.hpclab.recipe": "f281aab21571940e"}


def _read(**changes):
    """The read with the container node1 changed as given (a stopped container, another image, other labels)."""
    read = copy.deepcopy(READ)
    node1 = next(c for c in read["containers"] if c["Names"] == ["/node1"])
    node1.update(changes)
    return read


def test_a_running_container_from_its_tags_image_is_current():
    assert current(READ, "node1", SLURMCTLD) is True
    assert current(READ, "node1-mariadb", "hpclab/mariadb:e3845b7e6408", RECIPE) is True


def test_every_label_given_must_be_there_with_its_value():
    assert current(READ, "node1", SLURMCTLD, RECIPE) is True
    # A container made before its settings were labelled, or with other settings: the module decides.
    assert current(READ, "node1", SLURMCTLD, {**RECIPE, "org.hpclab.container-spec": "abc"}) is False
    assert current(READ, "node1", SLURMCTLD, {"org.hpclab.recipe": "0000"}) is False


def test_a_stopped_container_is_not_current():
    assert current(_read(State="exited"), "node1", SLURMCTLD) is False


def test_a_container_from_another_image_than_the_tag_names_now_is_not_current():
    # The tag was built again (same recipe, new id) after the container was made from the old image.
    assert current(_read(ImageID="sha256:" + "0" * 64), "node1", SLURMCTLD) is False
    # The container runs another tag's image.
    assert current(READ, "node1", "hpclab/slurmdbd:f7ce5a1b61c3") is False


def test_a_missing_container_or_image_is_not_current():
    assert current(READ, "node2", SLURMCTLD) is False
    assert current(READ, "node1", "hpclab/slurmctld:000000000000") is False
    assert current({"images": [], "containers": []}, "node1", SLURMCTLD) is False
    # A name is matched whole: node1 is not node1-slurmdbd.
    assert current(READ, "node1-slurm", SLURMCTLD) is False


def test_a_read_without_verbose_output_has_no_state_so_nothing_is_current():
    brief = copy.deepcopy(READ)
    for c in brief["containers"]:
        for key in ("State", "ImageID", "Labels"):
            c.pop(key)
    assert current(brief, "node1", SLURMCTLD) is False


def test_not_a_read_is_an_error():
    with pytest.raises(AnsibleFilterError, match="expects the result of docker_host_info, got list"):
        current([], "node1", SLURMCTLD)


# A real read of worker cn1's engine (the slurm scenario) after the macvlan network `slurm` was removed and made again:
# the container runs on with no network at all, its settings' label unchanged.
DETACHED = json.loads((Path(__file__).parents[2] / "fixtures" / "docker" / "host_info_detached.json").read_text())
SLURMD = "hpclab/slurmd:fb70a3e6d33f"


def test_a_container_on_its_network_with_its_address_is_current():
    assert current(READ, "node1", SLURMCTLD, RECIPE, {"slurm": "172.31.250.192"}) is True
    assert current(READ, "node1", SLURMCTLD, RECIPE, {"slurm": ""}) is True  # any address


def test_a_container_off_its_network_or_at_another_address_is_not_current():
    label = {"org.hpclab.container-spec": "c5f95a7a432ec91cabf6315c4e6acb25d5c90392"}
    assert current(DETACHED, "cn1", SLURMD, label) is True  # the label alone does not show it
    assert current(DETACHED, "cn1", SLURMD, label, {"slurm": "172.31.240.193"}) is False
    assert current(DETACHED, "cn1", SLURMD, label, {"slurm": ""}) is False
    assert current(READ, "node1", SLURMCTLD, RECIPE, {"slurm": "172.31.250.200"}) is False
    assert current(READ, "node1", SLURMCTLD, RECIPE, {"hpclab": ""}) is False
