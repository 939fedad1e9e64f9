"""A building-wide power cut of the reference design (slurmctld and slurmd in containers): every node stopped at once and
started again, once all together and once with the controller 30 s after the workers, and no Ansible run. Each layer
must serve again within power_cut.BOUND s of the last start: the volume mounted on every node with a file written
before, MUNGE, every worker idle, a job in each partition reading the file from the user's home, and Prometheus'
targets (installed by test_monitoring_container.py, which runs before this file). Before, Docker started the Slurm
containers before the volume was mounted: they exited at once ("error while creating mount source path '/gfsv/home'")
or ran with an empty home, or were not started at all, and nothing started them again. Then nothing lies in the bare
mount point /gfsv of any node (Docker created /gfsv/home there when the home was a volume, not a mount) and every
slurmd container started after its node mounted the volume. The measured times are printed
(pytest -rA shows them in the log). That a run of the converge then changes nothing is proven by test_slurm.py (the
next file), whose test_a_run_that_changes_nothing_restarts_nothing runs it."""

from __future__ import annotations

import shlex

from helpers import inventory_hosts
from power_cut import SlurmCluster
from slurm_checks import HOME, USER

CONTROLLER = inventory_hosts("slurm_master")[0]
testinfra_hosts = [CONTROLLER]

CLUSTER = SlurmCluster(
    ctl=lambda command: f"docker exec {CONTROLLER} bash -c {shlex.quote(command)}",
    as_user=lambda command: f"docker exec -u {USER} -w {HOME} {CONTROLLER} bash -c {shlex.quote(command)}",
    started=lambda node: f"date -d \"$(docker inspect -f '{{{{.State.StartedAt}}}}' {node})\" +%s",
)


def test_after_a_power_cut_every_layer_comes_back_by_itself_all_nodes_at_once():
    back = CLUSTER.power_cut(together=True)
    print(f"power cut, every node started at once: back after {back} s")


def test_after_a_power_cut_every_layer_comes_back_by_itself_the_controller_last():
    back = CLUSTER.power_cut(together=False)
    print(f"power cut, the controller started 30 s after the workers: back after {back} s")
