"""Backups of the reference design (roles/backup, playbooks/backup.yml on the controller's node) and their
restore (playbooks/restore.yml): files in alice's home and a job recorded by slurmdbd are backed up by the
installed unit, as its timer would run it; the files are deleted and the accounting database dropped; the
restore playbook brings both back: the files byte for byte, and sacct lists the old job again. A file the user
edited after the backup is kept by a restore in place (and a symlink planted since is kept, not followed), and
replaced by the snapshot's only with restore_replace_newer. Bad input fails before any change."""

from __future__ import annotations

import json
import shlex
import time

import pytest
from helpers import case_key, get_host, inventory_hosts, run_playbook, run_playbooks_side_by_side

CONTROLLER = inventory_hosts("slurm_master")[0]
BACKUP_HOST = inventory_hosts("backup")[0]
testinfra_hosts = [BACKUP_HOST]
BACKUP_PLAYBOOK = "../../playbooks/backup.yml"
RESTORE_PLAYBOOK = "../../playbooks/restore.yml"
USER = "alice"
HOME = f"/gfsv/home/{USER}"
DATA = f"{HOME}/backup-proof"
DB = "slurm_acct_db"
REPOSITORY = "/var/lib/hpclab/backup-repo"
PASSWORD_FILE = "/etc/hpclab/backup/restic.password"
SCRIPT = "/usr/local/sbin/hpclab-backup"
# What the tests write and expect back: path to sha256.
WRITTEN: dict[str, str] = {}
JOB: dict[str, str] = {}


def node():
    return get_host(BACKUP_HOST)


def sacct_job(job_id: str) -> str:
    """The job's state as sacct lists it, '' when the accounting database does not know it."""
    result = node().run(f"docker exec {CONTROLLER} sacct --noheader --parsable2 --allocations --starttime=2000-01-01 "
                        f"--jobs={job_id} --format=JobID,State")
    return next((line.split("|")[1] for line in result.stdout.splitlines() if line.startswith(f"{job_id}|")), "")


def wait_for(what, check, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(2)
    return value


def restic(*args: str) -> str:
    return node().check_output(f"RESTIC_PASSWORD_FILE={PASSWORD_FILE} restic -r {REPOSITORY} " + " ".join(map(shlex.quote, args)))


def test_timer_is_enabled_and_the_repository_password_root_only(host):
    assert host.service("hpclab-backup.timer").is_enabled
    assert host.service("hpclab-backup.timer").is_running
    password = host.file(PASSWORD_FILE)
    assert (password.mode, password.user) == (0o600, "root")


def test_files_in_a_home_and_a_finished_job_are_backed_up(host):
    host.check_output(f"install -d -o 2001 -g 2001 -m 0700 {DATA}/sub")
    host.check_output(f"head -c 3000000 /dev/urandom > {DATA}/random.bin && echo 'notes of alice' > {DATA}/sub/notes.txt "
                      f"&& chown -R 2001:2001 {DATA}")
    for path in (f"{DATA}/random.bin", f"{DATA}/sub/notes.txt"):
        WRITTEN[path] = host.file(path).sha256sum
    job_id = node().check_output(f"docker exec -u {USER} -w {HOME} {CONTROLLER} sbatch --parsable --wait "
                                 "--job-name=before-backup --output=/dev/null --wrap hostname").strip().split(";")[0]
    JOB["id"] = job_id
    assert wait_for("sacct to record the job", lambda: sacct_job(job_id) == "COMPLETED")

    with_service = host.run("systemctl start hpclab-backup.service")  # what the timer starts
    assert with_service.rc == 0, host.run("journalctl -u hpclab-backup.service -n 40 --no-pager").stdout
    snapshots = json.loads(restic("snapshots", "--json"))
    assert snapshots, "no snapshot"
    listing = restic("ls", "latest")
    assert f"{DATA}/random.bin" in listing
    assert any(line.endswith(f"{DB}.sql") for line in listing.splitlines()), listing


def test_deleted_files_and_a_dropped_database_come_back_with_the_restore_playbook(host):
    assert WRITTEN and JOB, "needs the backup of the test before"
    host.check_output(f"rm -rf {DATA}")
    # The database lost: slurmdbd stopped first (its open connection would hold DROP DATABASE on a metadata lock);
    # the restore playbook starts it again.
    host.check_output(f"docker stop {CONTROLLER}-slurmdbd")
    host.check_output(f"docker exec -i {CONTROLLER}-mariadb mariadb -e 'DROP DATABASE {DB}'")
    assert sacct_job(JOB["id"]) == ""

    run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER, "restore_accounting_db": True})
    assert run.rc == 0, run

    for path, digest in WRITTEN.items():
        restored = host.file(path)
        assert restored.sha256sum == digest, path
        assert (restored.uid, restored.gid) == (2001, 2001)
    assert wait_for("sacct to list the old job again", lambda: sacct_job(JOB["id"]) == "COMPLETED")


def test_a_file_changed_since_the_snapshot_is_kept_and_named_unless_its_replacement_is_asked(host):
    """alice lost random.bin, and went on working in notes.txt after the backup; she asks for her home back: random.bin
    comes back, notes.txt keeps her later work and the run names it. Only -e restore_replace_newer=true gives it the
    snapshot's content. Before, every restore in place overwrote notes.txt with the snapshot's."""
    notes, data = f"{DATA}/sub/notes.txt", f"{DATA}/random.bin"
    assert notes in WRITTEN and data in WRITTEN, "needs the backup of the tests before"
    host.check_output(f"rm -f {data} && printf 'later work of alice\\n' > {notes} && chown 2001:2001 {notes}")
    edited = host.file(notes).sha256sum

    run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER})
    assert run.rc == 0, run
    assert host.file(data).sha256sum == WRITTEN[data]
    assert host.file(notes).sha256sum == edited
    assert f"1 file(s) of {HOME} changed since snapshot" in run.output, run
    assert "were kept as they are, newer than the snapshot's: backup-proof/sub/notes.txt." in run.output, run
    assert "-e restore_replace_newer=true" in run.output, run

    run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER, "restore_replace_newer": True})
    assert run.rc == 0, run
    restored = host.file(notes)
    assert restored.sha256sum == WRITTEN[notes]
    assert (restored.uid, restored.gid) == (2001, 2001)
    assert "changed since snapshot" not in run.output, run


def test_replacing_newer_files_without_a_home_in_place_fails_before_any_change(host):
    run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER, "restore_target": "/root/restored",
                                                     "restore_replace_newer": True})
    assert run.rc != 0 and run.total_changed == 0, run
    assert (f"{BACKUP_HOST}: backup_restore_replace_newer is true, but backup_restore_target '/root/restored' writes the "
            "snapshot's files below that directory and nothing in place changes. Fix:") in run.output, run
    assert not host.file("/root/restored").exists


def test_a_symlink_planted_in_the_home_does_not_lead_the_restore_out_of_it(host):
    """alice replaced a file of her home with a link to a root-only file and asked for her home back. The link is newer
    than the snapshot's file, so a restore keeps it (cp --update compares the link's own time); one asked to replace
    newer files too replaces the link by the snapshot's file, the copy running as her. Neither writes the file the
    link pointed to, nor gives it to her."""
    notes = f"{DATA}/sub/notes.txt"
    assert notes in WRITTEN, "needs the backup of the tests before"
    canary = "/root/hpclab-backup-canary"
    host.check_output(f"printf 'root only\\n' > {canary} && chmod 0600 {canary}")
    before = host.file(canary).sha256sum
    host.check_output(f"rm -f {notes} && ln -s {canary} {notes} && chown -h 2001:2001 {notes}")

    run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER})
    assert run.rc == 0, run
    kept = host.file(notes)
    assert kept.is_symlink and kept.linked_to == canary
    assert "newer than the snapshot's: backup-proof/sub/notes.txt." in run.output, run
    target = host.file(canary)
    assert (target.sha256sum, target.uid, target.gid, target.mode) == (before, 0, 0, 0o600)

    run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER, "restore_replace_newer": True})
    assert run.rc == 0, run
    target = host.file(canary)
    assert (target.sha256sum, target.uid, target.gid, target.mode) == (before, 0, 0, 0o600)
    restored = host.file(notes)
    assert not restored.is_symlink and restored.sha256sum == WRITTEN[notes]
    assert (restored.uid, restored.gid) == (2001, 2001)


def test_a_home_restored_below_a_target_leaves_the_home_as_it_is(host):
    notes = f"{DATA}/sub/notes.txt"
    assert notes in WRITTEN, "needs the backup of the tests before"
    host.check_output(f"rm -rf /root/restored && rm -f {notes} && printf 'later work of alice\\n' > {notes} && chown 2001:2001 {notes}")
    edited = host.file(notes).sha256sum
    try:
        run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER, "restore_target": "/root/restored"})
        assert run.rc == 0, run
        for path, digest in WRITTEN.items():
            assert host.file(f"/root/restored{path}").sha256sum == digest, path
        target = host.file("/root/restored")
        assert (target.user, target.group, target.mode) == ("root", "root", 0o700)
        assert host.file(notes).sha256sum == edited
    finally:
        host.check_output("rm -rf /root/restored")


# restic writes below the target as root. Before, any target was taken: alice's directory in /tmp, with a symlink she
# planted in it, led restic's root writes into /etc.
AS_ALICE = "setpriv --reuid=2001 --regid=2001 --clear-groups"
REDIRECTED = [
    pytest.param("/tmp/alice-restore", "/tmp on the way to it is writable by others than root (mode 1777)",
                 f"{AS_ALICE} mkdir /tmp/alice-restore && {AS_ALICE} ln -s /etc /tmp/alice-restore/gfsv", id="tmp"),
    pytest.param(f"{HOME}/restored", f"{HOME} on the way to it is owned by uid 2001",
                 f"{AS_ALICE} mkdir {HOME}/restored && {AS_ALICE} ln -s /etc {HOME}/restored/gfsv", id="in-her-home"),
    # Root's, but others may enter it: alice could reach her copy while restic writes.
    pytest.param("/srv/hpclab-restore", "has mode 0755", "install -d -m 0755 /srv/hpclab-restore", id="others-may-enter"),
]


@pytest.mark.parametrize("target, expected, setup", REDIRECTED)
def test_a_target_that_someone_else_may_redirect_fails_before_any_change(host, target, expected, setup):
    host.check_output(f"rm -rf {target} /etc/home && {setup}")
    try:
        run = run_playbook(RESTORE_PLAYBOOK, extra_vars={"restore_home": USER, "restore_target": target})
        assert run.rc != 0 and run.total_changed == 0, run
        assert f"{BACKUP_HOST}: backup_restore_target {target}" in run.output and expected in run.output, run
        assert "Fix:" in run.output, run
        assert not host.file(f"{target}/gfsv/home").exists
        assert not host.file("/etc/home").exists
    finally:
        host.check_output(f"rm -rf {target} /etc/home")


def test_a_backup_run_that_changes_nothing_restarts_nothing(host):
    timer_since = host.check_output("systemctl show -p ActiveEnterTimestampMonotonic --value hpclab-backup.timer")
    run = run_playbook(BACKUP_PLAYBOOK)
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert host.check_output("systemctl show -p ActiveEnterTimestampMonotonic --value hpclab-backup.timer") == timer_since


# A run limited by --tags to one step checks the whole input first too. Before, the preflight carried only the role's
# own tags: under --tags backup_configure a retention that keeps nothing was written into the script unchecked, and
# --tags backup_service failed ('__backup_service_unit' is undefined).
def test_runs_limited_by_tags_to_one_step_change_nothing_and_restart_nothing(host):
    timer_since = host.check_output("systemctl show -p ActiveEnterTimestampMonotonic --value hpclab-backup.timer")
    for tags in ("backup_install", "backup_repository", "backup_configure", "backup_service"):
        run = run_playbook(BACKUP_PLAYBOOK, "--tags", tags)
        assert run.rc == 0 and run.total_changed == 0, (tags, run)
        assert "preflight | Check the repository" in run.output, (tags, run)
    assert host.check_output("systemctl show -p ActiveEnterTimestampMonotonic --value hpclab-backup.timer") == timer_since


def test_bad_input_in_a_run_limited_by_tags_fails_before_any_change(host):
    before = host.file(SCRIPT).sha256sum
    run = run_playbook(BACKUP_PLAYBOOK, "--tags", "backup_configure", extra_vars={"backup_retention": {"keep_daily": 0}})
    assert run.rc != 0 and run.total_changed == 0, run
    assert f"{BACKUP_HOST}: backup_retention.keep_daily 0 is not a positive whole number" in run.output and "Fix:" in run.output, run
    assert host.file(SCRIPT).sha256sum == before


# Each message names the host and the variable, and says the fix.
BAD_INPUT = [
    pytest.param({"backup_repository": "/no/such/disk/restic"},
                 f"{BACKUP_HOST}: backup_repository '/no/such/disk/restic': its parent directory /no/such/disk does not exist",
                 id="target-missing"),
    # /var/lib/hpclab/images is the node's read-only bind mount of the image archives.
    pytest.param({"backup_repository": "/var/lib/hpclab/images/restic"},
                 f"{BACKUP_HOST}: backup_repository '/var/lib/hpclab/images/restic': its parent directory /var/lib/hpclab/images "
                 "is not writable", id="target-read-only"),
    pytest.param({"backup_retention": {"keep_daily": 0}}, f"{BACKUP_HOST}: backup_retention.keep_daily 0 is not a positive whole number",
                 id="keeps-nothing"),
    pytest.param({"backup_retention": {}}, f"{BACKUP_HOST}: backup_retention sets no rule", id="no-rule"),
]


@pytest.fixture(scope="module")
def bad_input_runs():
    """Every bad input's run, side by side, and the backup script before them."""
    before = node().file(SCRIPT).sha256sum
    return before, run_playbooks_side_by_side(BACKUP_PLAYBOOK, [case.values[0] for case in BAD_INPUT])


@pytest.mark.parametrize("extra_vars,message", BAD_INPUT)
def test_bad_input_fails_before_any_change(host, bad_input_runs, extra_vars, message):
    before, runs = bad_input_runs
    run = runs[case_key(extra_vars)]
    assert run.rc != 0, run
    assert message in run.output and "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert "molecule-backup-not-secret" not in run.output
    assert host.file(SCRIPT).sha256sum == before


def snapshots() -> dict[str, list]:
    """The repository's snapshots: id to the paths saved (the retention may have dropped older ones)."""
    return {snapshot["id"]: snapshot["paths"] for snapshot in json.loads(restic("snapshots", "--json"))}


def test_a_path_whose_volume_is_not_mounted_is_refused_and_no_snapshot_made(host):
    """A backup path under a mount point of /etc/fstab that is not mounted, while the path exists on the filesystem below
    (as Docker leaves /gfsv/home when it starts a container before the volume is mounted): the backup refuses, and
    makes no (empty) snapshot; mounted, it saves. A tmpfs in fstab stands for the shared volume."""
    volume, data = "/srv/hpclab-test-volume", "/srv/hpclab-test-volume/data"
    host.check_output(f"mkdir -p {data} && echo 'tmpfs {volume} tmpfs noauto,mode=0700 0 0' >> /etc/fstab")
    try:
        run = run_playbook(BACKUP_PLAYBOOK, extra_vars={"backup_extra_paths": [data]})
        assert run.rc == 0, run
        before = snapshots()
        refused = host.run("systemctl start hpclab-backup.service")
        assert refused.rc != 0
        journal = host.check_output("journalctl -u hpclab-backup.service -n 20 --no-pager")
        assert f"{data} is not on its mount {volume} (it is on /; not mounted?): no snapshot made" in journal, journal
        assert snapshots() == before
        host.check_output(f"mount {volume} && mkdir {data} && echo on-the-volume > {data}/file")
        assert host.run("systemctl start hpclab-backup.service").rc == 0
        made = {key: paths for key, paths in snapshots().items() if key not in before}
        assert len(made) == 1 and data in next(iter(made.values())), made
    finally:
        host.run(f"umount {volume}; sed -i '\\#^tmpfs {volume} #d' /etc/fstab; rm -rf {volume}")
        run = run_playbook(BACKUP_PLAYBOOK)
        assert run.rc == 0, run
