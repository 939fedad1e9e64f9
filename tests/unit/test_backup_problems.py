"""The backup role's preflight: every input that would make a nightly backup fail, or succeed without saving
what it should, one rule at a time, with what stat, test -w, systemd-analyze and MariaDB answered on the host."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.backup_problems import FilterModule, local_path, redact, saved_paths

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "backup"
DEFAULTS = yaml.safe_load((ROOT / "roles/backup/defaults/main.yml").read_text())
PROBLEMS = FilterModule().filters()["backup_problems"]
SECRET = "correct horse battery staple"
DATABASES = {"rc": 0, "stdout_lines": (FIXTURES / "show_databases.txt").read_text().splitlines(), "stderr": ""}
CALENDAR_INVALID = {"rc": 1, "stdout": "", "stderr": (FIXTURES / "calendar_invalid.stderr").read_text()}


def settings(**overrides):
    base = {
        "backup_repository": "/mnt/backup/restic",
        "backup_password": SECRET,
        "backup_paths": ["/gfsv/home", "/etc/hpclab"],
        "backup_extra_paths": DEFAULTS["backup_extra_paths"],
        "backup_exclude": DEFAULTS["backup_exclude"],
        "backup_mariadb_exec": ["docker", "exec", "-i", "node1-mariadb"],
        "backup_mariadb_databases": DEFAULTS["backup_mariadb_databases"],
        "backup_dump_dir": DEFAULTS["backup_dump_dir"],
        "backup_password_file": DEFAULTS["backup_password_file"],
        "backup_home_root": "/gfsv/home",
        "backup_slurm_state_dir": "/var/lib/hpclab/slurm/slurmctld",
        "backup_retention": DEFAULTS["backup_retention"],
        "backup_schedule": DEFAULTS["backup_schedule"],
        "backup_randomized_delay": DEFAULTS["backup_randomized_delay"],
    }
    return {**base, **overrides}


FOUND = {p: True for p in saved_paths(settings())}
CONVERGED = {
    "paths_found": FOUND,
    "repository_stat": {"exists": True, "isdir": True},
    "parent_stat": {"exists": True, "isdir": True},
    "writable": True,
    "schedule_probe": {"rc": 0, "stderr": ""},
    "database_probe": DATABASES,
}


def check(values=None, **kwargs):
    return PROBLEMS(settings() if values is None else values, host="node1", **{**CONVERGED, **kwargs})


def test_registered():
    assert set(FilterModule().filters()) == {"backup_problems"}


def test_input_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        PROBLEMS(["x"], host="node1")


def test_good_input_has_no_problem():
    assert check() == []


def test_no_probe_is_no_problem():
    """Before any probe ran (e.g. the filter's EXAMPLES), only the input itself is judged."""
    assert PROBLEMS(settings(), host="node1") == []


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"backup_repository": ""}, "backup_repository is empty"),
        ({"backup_repository": "   "}, "backup_repository is empty"),
        ({"backup_repository": None}, "backup_repository is empty"),
        ({"backup_password": ""}, "backup_password is empty"),
        ({"backup_password": None}, "backup_password is empty"),
        ({"backup_password": " padded"}, "backup_password begins or ends with a blank"),
        ({"backup_repository": "restic"}, "backup_repository 'restic': the local path is not an absolute path"),
        ({"backup_repository": "local:srv/restic"}, "the local path is not an absolute path"),
        ({"backup_repository": "/mnt/backup//restic"}, "is not canonical"),
        ({"backup_repository": "/"}, "is '/'"),
        ({"backup_repository": "s3:s3.amazonaws.com/bucket"}, "uses a restic backend for which this role passes no credentials"),
        ({"backup_repository": "rclone:remote:path"}, "uses a restic backend"),
        ({"backup_repository": "/gfsv/home/restic"}, "lie inside one another"),
        ({"backup_repository": "/gfsv"}, "lie inside one another"),
        ({"backup_repository": "/var/lib/hpclab/backup/dumps/repo"}, "lie inside one another"),
        ({"backup_paths": "/gfsv/home"}, "backup_paths is not a list"),
        ({"backup_paths": ["gfsv/home"]}, "backup_paths: 'gfsv/home' is not an absolute path"),
        ({"backup_paths": ["/gfsv/home/"]}, "is not canonical"),
        ({"backup_paths": ["/gfsv/my home"]}, "has a blank"),
        ({"backup_paths": ["/gfsv/home/*"]}, "has a blank, a quote or another character"),
        ({"backup_extra_paths": ["srv"]}, "backup_extra_paths: 'srv' is not an absolute path"),
        ({"backup_slurm_state_dir": "spool/slurmctld"}, "backup_slurm_state_dir: 'spool/slurmctld' is not an absolute path"),
        ({"backup_dump_dir": "dumps"}, "backup_dump_dir 'dumps' is not an absolute path"),
        # The role makes the dumps' directory root-only and deletes its *.sql files: only below its own directory.
        ({"backup_dump_dir": "/tmp"}, "backup_dump_dir /tmp does not lie below /var/lib/hpclab/backup, the directory this role owns"),
        ({"backup_dump_dir": "/var/lib/mysql"}, "backup_dump_dir /var/lib/mysql does not lie below /var/lib/hpclab/backup"),
        ({"backup_dump_dir": "/etc"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_dump_dir": "/root/dumps"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_dump_dir": "/gfsv/home"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_dump_dir": "/var/lib/hpclab/backup"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_dump_dir": "/var/lib/hpclab/backupx"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_dump_dir": "/var/lib/hpclab/slurm"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_dump_dir": "/tmp", "backup_mariadb_databases": [], "backup_mariadb_exec": []},
         "backup_dump_dir /tmp does not lie below"),  # the script empties it also without databases
        ({"backup_extra_paths": ["/var/lib/hpclab/backup/dumps/keep"]},
         "backup_dump_dir /var/lib/hpclab/backup/dumps and backup_extra_paths /var/lib/hpclab/backup/dumps/keep lie inside one another"),
        ({"backup_home_root": "/var/lib/hpclab/backup"},
         "backup_dump_dir /var/lib/hpclab/backup/dumps and backup_home_root /var/lib/hpclab/backup lie inside one another"),
        ({"backup_home_root": "/var/lib/hpclab/backup/dumps/home"}, "and backup_home_root /var/lib/hpclab/backup/dumps/home lie inside"),
        # The role writes the password file and makes its directory: only below its own directory.
        ({"backup_password_file": "/etc/shadow"}, "backup_password_file /etc/shadow does not lie below /etc/hpclab/backup"),
        ({"backup_password_file": "/root/restic.password"}, "backup_password_file /root/restic.password does not lie below"),
        ({"backup_password_file": "/tmp/restic.password"}, "does not lie below /etc/hpclab/backup"),
        ({"backup_password_file": "/etc/hpclab/backup"}, "does not lie below /etc/hpclab/backup"),
        ({"backup_password_file": "restic.password"}, "backup_password_file 'restic.password' is not an absolute path"),
        ({"backup_password_file": "/etc/hpclab/backup/restic.repository"}, "is named restic.repository"),
        ({"backup_exclude": "*.tmp"}, "backup_exclude must be a list of non-empty restic patterns"),
        ({"backup_exclude": [""]}, "backup_exclude must be a list"),
        ({"backup_mariadb_exec": "docker exec"}, "backup_mariadb_exec 'docker exec' is not a list of words"),
        ({"backup_mariadb_exec": ["docker", ""]}, "is not a list of words"),
        ({"backup_mariadb_databases": "slurm_acct_db"}, "backup_mariadb_databases is not a list"),
        ({"backup_mariadb_databases": ["slurm-acct"]}, "'slurm-acct' is not a plain MariaDB database name"),
        ({"backup_mariadb_databases": ["x; DROP"]}, "is not a plain MariaDB database name"),
        ({"backup_mariadb_databases": ["slurm_acct_db", "slurm_acct_db"]}, "names slurm_acct_db more than once"),
        ({"backup_retention": [7]}, "backup_retention [7] is not a dict"),
        ({"backup_retention": {}}, "backup_retention sets no rule"),
        ({"backup_retention": {"keep_days": 7}}, "unknown key(s) keep_days"),
        ({"backup_retention": {"keep_daily": 0}}, "backup_retention.keep_daily 0 is not a positive whole number"),
        ({"backup_retention": {"keep_daily": -1}}, "--keep-daily -1 removes every snapshot"),
        ({"backup_retention": {"keep_daily": "7d"}}, "backup_retention.keep_daily '7d' is not a positive whole number"),
        ({"backup_retention": {"keep_daily": True}}, "is not a positive whole number"),
        ({"backup_retention": {"keep_daily": 1.5}}, "is not a positive whole number"),
        ({"backup_schedule": ""}, "backup_schedule '' is not a systemd calendar event"),
        ({"backup_schedule": "daily\nOnCalendar=hourly"}, "is not a systemd calendar event"),
        ({"backup_randomized_delay": -1}, "backup_randomized_delay -1 is not a whole number of seconds"),
        ({"backup_randomized_delay": "5m"}, "backup_randomized_delay '5m'"),
    ],
)
def test_bad_input(overrides, expected):
    problems = check(settings(**overrides))
    assert len(problems) == 1, problems
    assert problems[0].startswith("node1: ")
    assert expected in problems[0]
    assert "Fix:" in problems[0]


@pytest.mark.parametrize(
    "overrides",
    [
        {"backup_repository": "local:/mnt/backup/restic"},
        {"backup_repository": "sftp:backup@nas:/srv/restic"},
        {"backup_repository": "sftp://backup@nas:2222//srv/restic"},
        {"backup_repository": "rest:https://user:pw@nas:8000/hpclab/"},
        {"backup_mariadb_databases": [], "backup_mariadb_exec": []},
        {"backup_slurm_state_dir": ""},
        {"backup_paths": ["/"], "backup_repository": "sftp:nas:/srv/restic"},
        {"backup_retention": {"keep_last": 1}},
        {"backup_retention": {"keep_last": "3", "keep_hourly": 24, "keep_daily": 7, "keep_weekly": 4, "keep_monthly": 12, "keep_yearly": 2}},
        {"backup_randomized_delay": 0},
        {"backup_randomized_delay": "300"},
        {"backup_exclude": ["/gfsv/home/*/.cache"]},
        {"backup_mariadb_databases": ["slurm_acct_db", "slurm_jobcomp_db"]},
        {"backup_dump_dir": "/var/lib/hpclab/backup/db/dumps"},
        {"backup_password_file": "/etc/hpclab/backup/keys/restic.password"},
        {"backup_extra_paths": ["/var/lib/hpclab"]},  # a saved path may hold the dumps' directory
        {"backup_repository": "/var/lib/hpclab/backup-repo"},  # molecule/slurm's
    ],
)
def test_good_variants(overrides):
    probe = {**DATABASES, "stdout_lines": DATABASES["stdout_lines"] + ["slurm_jobcomp_db"]}
    values = settings(**overrides)
    assert check(values, paths_found={p: True for p in saved_paths(values)}, database_probe=probe) == []


def test_defaults_and_inventories_pass():
    """The role's defaults, with each inventory's backup settings in the repository."""
    values = settings(backup_dump_dir=DEFAULTS["backup_dump_dir"], backup_password_file=DEFAULTS["backup_password_file"])
    assert check(values) == []
    for inventory in ("inventory/example/group_vars/backup.yml",):
        group_vars = yaml.safe_load((ROOT / inventory).read_text())
        overrides = {k: v for k, v in group_vars.items() if k.startswith("backup_") and "{{" not in str(v)}
        assert check(settings(**overrides)) == [], inventory


def test_nothing_to_save():
    values = settings(backup_paths=[], backup_slurm_state_dir="", backup_mariadb_databases=[])
    problems = check(values)
    assert len(problems) == 1 and "nothing would be saved" in problems[0]


# --- what the host answered ----------------------------------------------------------------------------------------


def test_missing_path_names_variable_and_fix():
    problems = check(paths_found={**FOUND, "/gfsv/home": False})
    assert problems == [
        "node1: backup_paths: /gfsv/home does not exist on this host, and restic 0.14 would skip it and report success. "
        "Fix: create or mount it (the shared volume: playbooks/storage.yml), or remove it from backup_paths."
    ]


def test_missing_state_dir_points_to_the_slurm_layer():
    (problem,) = check(paths_found={**FOUND, "/var/lib/hpclab/slurm/slurmctld": False})
    assert "backup_slurm_state_dir: /var/lib/hpclab/slurm/slurmctld does not exist" in problem
    assert "playbooks/slurm.yml" in problem


def test_missing_paths_are_no_problem_in_check_mode():
    """A fresh cluster in check mode: the shared volume and Slurm's state are made by earlier plays of the same run."""
    missing = {p: False for p in FOUND}
    assert check(paths_found=missing, parent_stat={"exists": False}, repository_stat={"exists": False},
                 database_probe={"rc": 1, "stderr": "Error response from daemon: No such container: node1-mariadb"},
                 check_mode=True) == []


@pytest.mark.parametrize(
    "probes, expected",
    [
        ({"repository_stat": {"exists": False}, "parent_stat": {"exists": False}},
         "node1: backup_repository '/mnt/backup/restic': its parent directory /mnt/backup does not exist on this host. "
         "Fix: mount the backup disk there or create the directory, or give another backup_repository."),
        ({"repository_stat": {"exists": False}, "parent_stat": {"exists": True, "isdir": False}},
         "its parent /mnt/backup is not a directory"),
        ({"repository_stat": {"exists": False}, "writable": False},
         "its parent directory /mnt/backup is not writable by root (a read-only mount?)"),
        ({"repository_stat": {"exists": True, "isdir": False}}, "backup_repository /mnt/backup/restic exists on this host and is not a directory"),
        ({"writable": False}, "backup_repository /mnt/backup/restic is not writable by root on this host (a read-only mount?)"),
    ],
)
def test_repository_on_the_host(probes, expected):
    (problem,) = check(**probes)
    assert expected in problem


def test_repository_parent_missing_is_no_problem_in_check_mode():
    assert check(repository_stat={"exists": False}, parent_stat={"exists": False}, check_mode=True) == []


def test_read_only_parent_is_a_problem_in_check_mode_too():
    """It exists already, so no earlier play will make it writable."""
    assert len(check(repository_stat={"exists": False}, writable=False, check_mode=True)) == 1


def test_remote_repository_is_not_probed():
    assert check(settings(backup_repository="sftp:nas:/srv/restic"), repository_stat=None, parent_stat=None, writable=None) == []


def test_invalid_schedule_from_systemd_analyze():
    (problem,) = check(settings(backup_schedule="daily at 2"), schedule_probe=CALENDAR_INVALID)
    assert problem == (
        "node1: backup_schedule 'daily at 2' is not a calendar event systemd accepts (Failed to parse calendar specification "
        "'daily at 2': Invalid argument). Fix: write it as in man systemd.time, e.g. '*-*-* 02:30:00' or 'Mon..Sat 03:00'; "
        "check it with systemd-analyze calendar."
    )


def test_schedule_probe_that_could_not_run_is_no_problem():
    assert check(schedule_probe={"rc": 2, "stderr": "", "msg": "Error executing command."}) == []


def test_database_missing_on_the_server():
    (problem,) = check(settings(backup_mariadb_databases=["slurm_acct_db", "slurm_jobcomp_db"]))
    assert problem == (
        "node1: backup_mariadb_databases: the MariaDB server reached with 'docker exec -i node1-mariadb mariadb' has no database "
        "slurm_jobcomp_db (it has information_schema, mysql, performance_schema, slurm_acct_db, sys). Fix: name databases it "
        "has, or [] to dump none."
    )


@pytest.mark.parametrize(
    "probe, expected",
    [
        ({"rc": 1, "stderr": "Error response from daemon: No such container: node1-mariadb\n"},
         "(rc 1: Error response from daemon: No such container: node1-mariadb)"),
        ({"rc": 2, "stderr": "", "msg": "Error executing command."}, "(rc 2: docker could not run: not installed?)"),
    ],
)
def test_database_server_not_answering(probe, expected):
    (problem,) = check(database_probe=probe)
    assert "no MariaDB server answered 'docker exec -i node1-mariadb mariadb'" in problem
    assert expected in problem
    assert "backup_mariadb_databases: [] to dump none" in problem


def test_database_probe_skipped_is_no_problem():
    assert check(database_probe={"skipped": True, "changed": False}) == []


def test_secrets_never_in_messages():
    values = settings(
        backup_password=" " + SECRET,
        backup_repository="s3:https://keyid:topsecretkey@s3.example.org/bucket",
        backup_retention={},
    )
    problems = check(values)
    assert len(problems) == 3
    text = " ".join(problems)
    assert SECRET not in text
    assert "topsecretkey" not in text
    assert "s3:https://keyid:***@s3.example.org/bucket" in text


def test_several_problems_are_all_reported():
    values = settings(backup_repository="", backup_password="", backup_retention={"keep_daily": 0}, backup_paths=["home"])
    assert len(check(values)) == 4


@pytest.mark.parametrize(
    "location, expected",
    [
        ("/srv/restic", "/srv/restic"),
        ("local:/srv/restic", "/srv/restic"),
        ("sftp:nas:/srv/restic", None),
        ("rest:http://nas:8000/", None),
        ("b2:bucket:path", None),
        (None, None),
    ],
)
def test_local_path(location, expected):
    assert local_path(location) == expected


@pytest.mark.parametrize(
    "location, expected",
    [
        ("rest:https://user:pw@nas:8000/repo", "rest:https://user:***@nas:8000/repo"),
        ("rest:https://user@nas:8000/repo", "rest:https://user@nas:8000/repo"),
        ("sftp:user@nas:/srv/restic", "sftp:user@nas:/srv/restic"),
        ("/srv/restic", "/srv/restic"),
    ],
)
def test_redact(location, expected):
    assert redact(location) == expected
