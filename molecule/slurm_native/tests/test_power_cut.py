"""A building-wide power cut of the native cluster (slurmctld, slurmd, GlusterFS, NFS-Ganesha and the monitoring on the
nodes themselves): every node stopped at once and started again, once all together and once with the controller (also
the NFS server and the first volume file server) 30 s after the others, and no Ansible run. Each layer must serve
again within power_cut.BOUND s of the last start: the volume mounted on every node (slurmd3 is a client without a
brick) with a file written before, MUNGE, every worker idle, a job in each partition reading the file from the user's
home, the NFS export over v3 and v4, and Prometheus' targets where the monitoring is installed. Then nothing lies in
the bare mount point /gfsv of any node, and every slurmd started after its node mounted the volume (it waits for it:
the slurm_worker role's drop-in, slurm_worker_shared_home_mount). The measured times are
printed (pytest -rA shows them in the log). That a run of the converge then changes nothing is proven by
test_slurm_native.py (the next file), whose test_a_run_that_changes_nothing_restarts_nothing runs it."""

from __future__ import annotations

import shlex

from helpers import inventory_hosts
from power_cut import UNIT_STARTED, SlurmCluster
from slurm_checks import HOME, USER

CONTROLLER = inventory_hosts("slurm_master")[0]
testinfra_hosts = [CONTROLLER]

CLUSTER = SlurmCluster(
    ctl=lambda command: command,
    as_user=lambda command: f"cd {HOME} && runuser -u {USER} -- bash -c {shlex.quote(command)}",
    started=lambda node: UNIT_STARTED.format(unit="slurmd"),
)


def test_after_a_power_cut_every_layer_comes_back_by_itself_all_nodes_at_once():
    back = CLUSTER.power_cut(together=True)
    print(f"power cut, every node started at once: back after {back} s")


def test_after_a_power_cut_every_layer_comes_back_by_itself_the_controller_last():
    back = CLUSTER.power_cut(together=False)
    print(f"power cut, the controller started 30 s after the others: back after {back} s")
