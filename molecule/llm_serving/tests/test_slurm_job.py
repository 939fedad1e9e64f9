"""A batch job on a Slurm worker calls the models through the gateway with the key it reads from its user's
home (issue 21): llm1, the model host, also runs Slurm natively (the reference design's GPU server is a
worker; in this one-node lab it is the controller too), deployed by the collection's own munge.yml and
slurm.yml (slurm_only.yml), with the homes where the gateway wrote each user's llm.env (/home here, the
shared volume in a full cluster). alice submits with sbatch; the job, run by slurmd under her UID, sources
~/.config/hpclab/llm.env and asks a model through the gateway."""

from __future__ import annotations

import json
import re

from helpers import get_host, inventory_hosts, run_playbook

testinfra_hosts = inventory_hosts("llm")
NODE = testinfra_hosts[0]
USER, UID = "alice", 2001
HOME = f"/home/{USER}"
# The one-node cluster: the homes where the gateway writes llm.env, no accounting database, no MPI packages.
SLURM_VARS = {
    "hpclab_slurm_mode": "native",
    "slurm_master_accounting": False,
    "slurm_master_shared_home": "/home",
    "slurm_worker_shared_home": "/home",
    "slurm_master_mpi_packages": [],
    "slurm_worker_mpi_packages": [],
}
# The job script, alice's own file: it finds her home in the password database (as any job on any node would),
# reads the gateway's address and her key from llm.env there, and prints what the gateway answered.
JOB = """#!/bin/bash
#SBATCH --job-name=ask-gateway
#SBATCH --output=%(home)s/ask-gateway-%%j.out
set -eu
home=$(getent passwd "$(id -un)" | cut -d: -f6)
set -a
. "$home/.config/hpclab/llm.env"
set +a
exec python3 - <<'PY'
import json, os, socket, urllib.request
body = {"model": "tiny-a", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
with urllib.request.urlopen(request, timeout=120) as response:
    answer = json.load(response)
print(json.dumps({"host": socket.gethostname(), "uid": os.getuid(), "job": os.environ["SLURM_JOB_ID"],
                  "model": answer["model"], "choices": answer["choices"]}))
PY
"""


def node():
    return get_host(NODE)


def test_a_batch_job_on_a_worker_reads_alices_key_from_her_home_and_gets_an_answer(tmp_path):
    groups = tmp_path / "slurm_groups.yml"
    groups.write_text(
        "all:\n  children:\n" + "".join(f"    {g}:\n      hosts:\n        {NODE}:\n" for g in ("munge", "slurm_master", "slurm_worker"))
    )
    run = run_playbook("slurm_only.yml", "-i", str(groups), extra_vars=SLURM_VARS)
    assert run.rc == 0, run
    host = node()
    host.check_output(f"install -o {UID} -g {UID} -m 0700 /dev/stdin {HOME}/ask-gateway.sh <<'EOF'\n{JOB % {'home': HOME}}EOF")
    for _attempt in range(60):
        if host.run("sinfo --noheader --format=%t").stdout.strip() == "idle":
            break
        host.run("sleep 2")
    submitted = host.run(f"cd {HOME} && runuser -u {USER} -- sbatch --parsable --wait {HOME}/ask-gateway.sh")
    assert submitted.rc == 0, (submitted.stdout, submitted.stderr)
    job_id = submitted.stdout.strip().split(";")[0]
    output = host.check_output(f"cat {HOME}/ask-gateway-{job_id}.out")
    print("batch job", job_id, "->", output)
    answer = json.loads(output.splitlines()[-1])
    assert (answer["host"], answer["uid"], answer["job"]) == (NODE, UID, job_id), answer
    assert answer["model"] == "tiny-a" and answer["choices"][0]["message"]["content"] is not None, answer
    # The gateway's access log names alice (her key) and llm1 as the client, never the key itself.
    key = dict(line.split("=", 1) for line in host.check_output(f"cat {HOME}/.config/hpclab/llm.env").splitlines()
               if "=" in line and not line.startswith("#"))["OPENAI_API_KEY"]
    address = host.interface("eth0").addresses[0]
    log = host.check_output("cat /var/log/nginx/hpclab-llm-gateway*.log")
    assert re.search(rf"user={USER} client={re.escape(address)} .*model=tiny-a", log), log
    assert key not in log
