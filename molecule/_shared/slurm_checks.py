"""Job checks shared by the Slurm scenarios (native and containerized): the same jobs, submitted by
the same cluster user, must behave the same whatever runs the daemons."""

from __future__ import annotations

import contextlib
import re
import uuid

USER, UID, GID = "alice", 2001, 2001
HOME = f"/gfsv/home/{USER}"


def native_as_user(command: str) -> str:
    """A shell command run as the cluster user from its shared home, on a host that runs Slurm natively."""
    return f"cd {HOME} && runuser -u {USER} -- {command}"


PI_PROGRAM = """\
import socket
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 4_000_000
h = 1.0 / n
x = (np.arange(rank, n, size, dtype=np.float64) + 0.5) * h
mypi = comm.reduce(np.sum(4.0 / (1.0 + x * x)) * h, op=MPI.SUM, root=0)
hosts = comm.gather(socket.gethostname(), root=0)
if rank == 0:
    print("ranks %d on hosts %s" % (size, ",".join(sorted(set(hosts)))))
    print("pi is approximately %.16f, Error is %.16f" % (mypi, abs(mypi - np.pi)))
"""

# 8 ranks on 2 nodes of 2 CPUs each: --overcommit lets Slurm place 4 tasks per node, and mpirun
# (Open MPI starts its daemons with srun inside the allocation) uses those slots. No cgroups, no
# ptrace-based single copy and no RDMA in the containers: shared memory and TCP only.
PI_JOB = f"""\
#!/bin/bash
#SBATCH --job-name=mpi-pi
#SBATCH --nodes=2
#SBATCH --ntasks=8
#SBATCH --overcommit
#SBATCH --output={HOME}/mpi-pi-%j.out
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun -np 8 --oversubscribe --bind-to none python3 {HOME}/mpi_pi.py
"""


def check_mpi_pi(host, as_user, workers):
    """sbatch the MPI pi program (8 ranks over the two WORKERS) from HOST, where the shared home is
    mounted; AS_USER turns a command into one run as the cluster user where jobs are submitted."""
    host.check_output(f"cat > {HOME}/mpi_pi.py <<'EOF'\n{PI_PROGRAM}EOF")
    host.check_output(f"cat > {HOME}/mpi_pi.sh <<'EOF'\n{PI_JOB}EOF")
    host.check_output(f"chown {UID}:{GID} {HOME}/mpi_pi.py {HOME}/mpi_pi.sh")
    submitted = host.run(as_user(f"timeout 300 sbatch --wait --parsable --nodelist={','.join(workers)} mpi_pi.sh"))
    job_id = submitted.stdout.strip().split(";")[0]
    output = host.run(f"cat {HOME}/mpi-pi-{job_id}.out").stdout
    assert submitted.rc == 0, (submitted.stderr, output)
    assert f"ranks 8 on hosts {','.join(workers)}" in output, output
    match = re.search(r"pi is approximately (3\.14159265\d*), Error is ([0-9.e-]+)", output)
    assert match and float(match.group(2)) < 1e-6, output


def check_file_shared_between_jobs(host, as_user, workers):
    """A file written in the user's home by a job on one worker is read by a job on the other."""
    token = f"from {workers[0]} {uuid.uuid4()}"
    host.check_output(as_user(f"srun --nodes=1 --nodelist={workers[0]} sh -c \"echo '{token}' > {HOME}/shared.txt\""))
    assert host.check_output(as_user(f"srun --nodes=1 --nodelist={workers[1]} cat {HOME}/shared.txt")) == token
    assert host.check_output(as_user(f"srun --nodes=1 --nodelist={workers[1]} stat -c %u {HOME}/shared.txt")) == str(UID)


def dotted_name_inventory(tmp_path, name: str, worker: str):
    """A second inventory adding WORKER again to the worker group under the dotted NAME, which cannot be
    a Slurm node name; pass it with `-i` beside the scenario's own."""
    extra_inventory = tmp_path / "bad_name.yml"
    extra_inventory.write_text(
        f"all:\n  children:\n    slurm_worker:\n      hosts:\n        {name}:\n"
        f"          ansible_host: {worker}\n          ansible_connection: community.docker.docker\n"
        "          ansible_python_interpreter: /usr/bin/python3\n"
    )
    return str(extra_inventory)


@contextlib.contextmanager
def munge_key_away(host, name: str):
    """The MUNGE key of node NAME (testinfra HOST) moved aside for the duration, then put back."""
    host.check_output("mv /etc/munge/munge.key /root/munge.key.away")
    try:
        yield name
    finally:
        host.check_output("mv /root/munge.key.away /etc/munge/munge.key")
