"""The backup role rendered offline with Ansible's own Templar: its variables, the backup script (checked with
bash -n), its units, and how playbooks/backup.yml and playbooks/restore.yml reach MariaDB, slurmdbd and slurmctld's
state in each Slurm mode."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from role_render import RoleRender

from ansible_collections.hpclab.cluster.plugins.filter.backup_problems import redact, saved_paths

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "backup"
HOST_VARS = {"backup_repository": "/mnt/backup/restic", "backup_password": "vaulted", "hpclab_shared_path": "/gfsv"}


@pytest.fixture(scope="module")
def role():
    return RoleRender(ROLE, HOST_VARS, play={"inventory_hostname": "node1", "groups": {"slurm_master": ["node1"], "backup": ["node1"]}})


def test_defaults_match_argument_specs():
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    options = {**specs["main"]["options"], **specs["restore"]["options"]}
    assert set(options) == set(defaults)
    for name, spec in options.items():
        if "default" in spec:
            assert spec["default"] == defaults[name], name
        else:  # templated defaults (hpclab_shared_path) are described, not repeated
            assert "{{" in str(defaults[name]), name


def test_saved_paths_are_the_filters(role):
    host_vars = {**HOST_VARS, "backup_slurm_state_dir": "/var/spool/slurmctld", "backup_extra_paths": ["/srv/data"]}
    values = {k: role.evaluate(k, host_vars=host_vars) for k in
              ("backup_paths", "backup_extra_paths", "backup_slurm_state_dir", "backup_mariadb_databases", "backup_dump_dir")}
    expected = ["/gfsv/home", "/etc/hpclab", "/srv/data", "/var/spool/slurmctld", "/var/lib/hpclab/backup/dumps"]
    assert role.evaluate("__backup_saved_paths", host_vars=host_vars) == expected == saved_paths(values)
    assert role.evaluate("__backup_saved_paths", extra={"backup_mariadb_databases": []}) == ["/gfsv/home", "/etc/hpclab"]


@pytest.mark.parametrize(
    "repository, expected",
    [
        ("/mnt/backup/restic", "/mnt/backup/restic"),
        ("local:/mnt/backup/restic", "/mnt/backup/restic"),
        ("sftp:backup@nas:/srv/restic", ""),
        ("rest:https://nas:8000/hpclab", ""),
        ("s3:s3.amazonaws.com/bucket", ""),
    ],
)
def test_local_repository(role, repository, expected):
    assert role.evaluate("__backup_local_repository", host_vars={**HOST_VARS, "backup_repository": repository}) == expected


@pytest.mark.parametrize("repository", ["rest:https://user:pw@nas:8000/repo", "rest:https://nas/", "sftp:u@h:/p", "/srv/r"])
def test_shown_repository_is_the_filters(role, repository):
    assert role.evaluate("__backup_repository_shown", host_vars={**HOST_VARS, "backup_repository": repository}) == redact(repository)


@pytest.mark.parametrize(
    "retention, expected",
    [
        ({"keep_daily": 7, "keep_weekly": 4, "keep_monthly": 6}, ["--keep-daily", "7", "--keep-weekly", "4", "--keep-monthly", "6"]),
        ({"keep_yearly": 2, "keep_last": 3}, ["--keep-last", "3", "--keep-yearly", "2"]),
    ],
)
def test_forget_args(role, retention, expected):
    assert role.evaluate("__backup_forget_args", extra={"backup_retention": retention}) == expected


def test_restore_paths(role):
    extra = {"backup_restore_home": "alice", "backup_restore_accounting_db": True, "backup_mariadb_databases": ["a", "b"]}
    assert role.evaluate("__backup_restore_paths", extra=extra) == [
        "/gfsv/home/alice", "/var/lib/hpclab/backup/dumps/a.sql", "/var/lib/hpclab/backup/dumps/b.sql"]
    assert role.evaluate("__backup_restore_paths", extra={"backup_restore_home": "alice"}) == ["/gfsv/home/alice"]


CONTAINER_SCRIPT_LINES = [
    "unset RESTIC_REPOSITORY",
    "export RESTIC_REPOSITORY_FILE=/etc/hpclab/backup/restic.repository",
    "export RESTIC_PASSWORD_FILE=/etc/hpclab/backup/restic.password",
    "paths=( /gfsv/home /etc/hpclab '/srv/my data' /var/lib/hpclab/slurm/slurmctld /var/lib/hpclab/backup/dumps )",
    "databases=( slurm_acct_db )",
    "db_exec=( docker exec -i node1-mariadb )",
    "restic backup --tag hpclab --host node1 \\",
    "  --exclude /etc/hpclab/backup/restic.password --exclude /etc/hpclab/backup/restic.repository --exclude '/gfsv/home/*/.cache' \\",
    "restic forget --prune --tag hpclab --host node1 --group-by host,tags \\",
    "  --keep-daily 7 --keep-weekly 4 --keep-monthly 6",
    "restic check",
]


def test_script(role):
    host_vars = {**HOST_VARS, "backup_mariadb_exec": ["docker", "exec", "-i", "node1-mariadb"],
                 "backup_slurm_state_dir": "/var/lib/hpclab/slurm/slurmctld", "backup_extra_paths": ["/srv/my data"],
                 "backup_exclude": ["/gfsv/home/*/.cache"]}
    script = role.render("hpclab-backup.j2", host_vars=host_vars)
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert lines[2] == "# Ansible managed"
    for line in CONTAINER_SCRIPT_LINES:
        assert line in lines, line
    assert "vaulted" not in script
    assert "set -euo pipefail" in lines


def test_repository_url_is_not_in_the_script(role):
    """--check --diff shows the script: a REST server's password in the URL stays in the root-only repository file."""
    host_vars = {**HOST_VARS, "backup_repository": "rest:https://backup:s3cr3t-url-pw@nas:8000/hpclab"}
    script = role.render("hpclab-backup.j2", host_vars=host_vars)
    assert "s3cr3t-url-pw" not in script and "nas:8000" not in script
    assert role.evaluate("__backup_repository_file", host_vars=host_vars) == "/etc/hpclab/backup/restic.repository"
    tasks = yaml.safe_load((ROLE / "tasks" / "configure.yml").read_text())
    (written,) = [t for t in tasks if "backup_repository" in str(t.get("ansible.builtin.copy", {}).get("content", ""))]
    assert written["ansible.builtin.copy"]["dest"] == "{{ __backup_repository_file }}"
    assert (written["ansible.builtin.copy"]["mode"], written["no_log"], written["diff"]) == ("0600", True, False)
    for task in tasks:  # nothing else writes it or the password
        if task is not written and "backup_password_file" not in str(task.get("ansible.builtin.copy", {}).get("dest", "")):
            assert "backup_repository" not in str(task), task["name"]


def _restore_home_tasks():
    """Every task of tasks/restore_home.yml, blocks flattened, by name."""
    def flatten(tasks):
        for task in tasks:
            yield task
            for key in ("block", "rescue", "always"):
                yield from flatten(task.get(key, []))
    return {t["name"]: t for t in flatten(yaml.safe_load((ROLE / "tasks" / "restore_home.yml").read_text()))}


@pytest.mark.parametrize("replace_newer, update", [(False, ["--update"]), (True, [])])
def test_home_is_copied_back_as_its_owner(role, replace_newer, update):
    """As root, cp -a would write through a symlink the user planted in the home and chown its target to the user.
    Unless backup_restore_replace_newer, cp --update keeps what changed since the snapshot."""
    argv = _restore_home_tasks()["restore_home | Write the home back in place"]["ansible.builtin.command"]["argv"]
    extra = {"backup_restore_home": "alice", "backup_restore_replace_newer": replace_newer, "__backup_restore_id": "6a8f4788" * 8,
             "__backup_restore_staged": {"stat": {"uid": 2001, "gid": 2002}}}
    assert role.evaluate(argv.strip()[2:-2], extra=extra) == [
        "setpriv", "--reuid=2001", "--regid=2002", "--clear-groups", "--", "cp", "-a", "--remove-destination", *update,
        "--", "/var/lib/hpclab/backup/restore/6a8f4788/gfsv/home/alice/.", "/gfsv/home/alice"]


def test_what_update_kept_is_listed_only_where_it_is_used():
    tasks = _restore_home_tasks()
    listing = tasks["restore_home | List the staging copy and the home in place"]
    assert listing["ansible.builtin.command"]["argv"] == ["find", "{{ item }}", "-mindepth", "1", "!", "-type", "d", "-printf", "%T@\\t%P\\0"]
    assert listing["loop"] == ["{{ __backup_restore_staged_home }}", "{{ __backup_restore_home_path }}"]
    assert (listing["changed_when"], listing["when"]) == (False, "not backup_restore_replace_newer | bool")
    assert "hpclab.cluster.backup_restore_kept_newer(live=" in tasks["restore_home | Files changed since the snapshot, kept in place"][
        "ansible.builtin.set_fact"]["__backup_restore_kept_newer"]


def test_staging_copy_passable_by_the_owner_only(role):
    extra = {"backup_restore_home": "alice", "__backup_restore_id": "6a8f478827d8e39a42384816b5fb6b993915b347cd6f41502450113bf679115f"}
    staging = "/var/lib/hpclab/backup/restore/6a8f4788"
    assert role.evaluate("__backup_restore_staged_home", extra=extra) == staging + "/gfsv/home/alice"
    assert role.evaluate("__backup_restore_staged_parents", extra=extra) == [staging, staging + "/gfsv", staging + "/gfsv/home"]
    tasks = _restore_home_tasks()
    passage = tasks["restore_home | Let the home's owner pass through the staging copy to the home in it"]["ansible.builtin.file"]
    assert (passage["owner"], passage["group"], passage["mode"]) == ("root", "{{ __backup_restore_staged.stat.gid }}", "0710")
    dirs = tasks["restore_home | Directory of the staging copies"]["loop"]
    assert dirs == [{"path": "{{ backup_restore_staging_dir | dirname }}", "mode": "0755"}, {"path": "{{ backup_restore_staging_dir }}", "mode": "0711"}]


def test_restore_checks_the_play_hosts():
    """A home restored on several backup hosts at once is refused (filter backup_restore_problems, play_hosts)."""
    first = yaml.safe_load((ROLE / "tasks" / "restore.yml").read_text())[0]
    assert "play_hosts=ansible_play_hosts_all" in " ".join(first["vars"]["__backup_restore_problems"].split())


def test_script_without_databases_or_check(role):
    script = role.render("hpclab-backup.j2", extra={"backup_mariadb_databases": [], "backup_check_repository": False})
    assert "databases=( )" in script.splitlines()
    assert "paths=( /gfsv/home /etc/hpclab )" in script.splitlines()
    assert "restic check" not in script


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("extra", [{}, {"backup_mariadb_databases": [], "backup_mariadb_exec": [], "backup_check_repository": False}])
def test_script_is_valid_bash(role, extra, tmp_path):
    path = tmp_path / "hpclab-backup"
    path.write_text(role.render("hpclab-backup.j2", extra=extra))
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_units(role):
    service = role.render("hpclab-backup.service.j2")
    timer = role.render("hpclab-backup.timer.j2", extra={"backup_schedule": "Mon..Sat 03:00", "backup_randomized_delay": 60})
    assert "Type=oneshot" in service.splitlines()
    assert "ExecStart=/usr/local/sbin/hpclab-backup" in service.splitlines()
    assert "CacheDirectory=hpclab-backup" in service.splitlines()
    assert "[Install]" not in service  # started by the timer only
    for line in ("OnCalendar=Mon..Sat 03:00", "Persistent=true", "RandomizedDelaySec=60", "WantedBy=timers.target"):
        assert line in timer.splitlines(), line


# --- the playbooks' wiring ------------------------------------------------------------------------------------------


def _playbook_vars(name):
    """The role's (or include_role's) vars that playbooks/NAME passes to the backup role."""
    play = yaml.safe_load((ROOT / "playbooks" / name).read_text())[0]
    if "roles" in play:
        return play["roles"][0]["vars"]
    (include,) = [t for t in play["tasks"] if t.get("ansible.builtin.include_role", {}).get("name") == "hpclab.cluster.backup"]
    return include["vars"]


def _wire(name, variable, host_vars):
    return Templar(loader=DataLoader(), variables=host_vars).template(trust_as_template(_playbook_vars(name)[variable]))


def _layout(mode, **host_vars):
    """slurm_master_result as the slurm_master role's entry point `layout` publishes it for node1 (its defaults, the
    inventory's host_vars, vars/main.yml and the mode's vars file)."""
    master = ROOT / "roles" / "slurm_master"
    render = RoleRender(master, {"hpclab_slurm_mode": mode, **host_vars},
                        play={"inventory_hostname": "node1", "groups": {"slurm_master": ["node1"], "slurm_worker": []},
                              "hostvars": {}})
    mode_vars = render.loader.load_from_file(str(master / "vars" / f"{mode}.yml"), trusted_as_template=True)
    render.role_vars = {**render.role_vars, **mode_vars}
    return render.evaluate("__slurm_master_layout")


@pytest.mark.parametrize(
    "mode, host_vars, exec_prefix, databases, state_dir, stop, start",
    [
        ("container", {}, ["docker", "exec", "-i", "node1-mariadb"], ["slurm_acct_db"], "/var/lib/hpclab/slurm/slurmctld",
         ["docker", "stop", "node1-slurmdbd"], ["docker", "start", "node1-slurmdbd"]),
        ("container", {"slurm_master_accounting_db_name": "acct2", "slurm_master_container_state_dir": "/srv/ctld"},
         ["docker", "exec", "-i", "node1-mariadb"], ["acct2"], "/srv/ctld",
         ["docker", "stop", "node1-slurmdbd"], ["docker", "start", "node1-slurmdbd"]),
        ("native", {}, [], ["slurm_acct_db"], "/var/spool/slurmctld",
         ["systemctl", "stop", "slurmdbd"], ["systemctl", "start", "slurmdbd"]),
        ("native", {"slurm_master_config": {"StateSaveLocation": "/srv/state"}}, [], ["slurm_acct_db"], "/srv/state",
         ["systemctl", "stop", "slurmdbd"], ["systemctl", "start", "slurmdbd"]),
        ("native", {"slurm_master_accounting": False}, [], [], "/var/spool/slurmctld", [], []),
    ],
)
def test_the_playbooks_take_the_controller_layout_from_slurm_master(
        mode, host_vars, exec_prefix, databases, state_dir, stop, start):
    """backup.yml and restore.yml pass what the slurm_master role's layout publishes: one source for the layout."""
    result = {"slurm_master_result": _layout(mode, **host_vars)}
    for playbook in ("backup.yml", "restore.yml"):
        assert _wire(playbook, "backup_mariadb_databases", result) == databases
        assert _wire(playbook, "backup_mariadb_exec", result) == exec_prefix
    assert _wire("backup.yml", "backup_slurm_state_dir", result) == state_dir
    assert _wire("restore.yml", "backup_restore_stop_command", result) == stop
    assert _wire("restore.yml", "backup_restore_start_command", result) == start


def test_a_backup_host_that_is_not_the_controller_saves_no_slurm_state():
    assert _wire("backup.yml", "backup_mariadb_databases", {}) == []
    assert _wire("backup.yml", "backup_slurm_state_dir", {}) == ""
    assert _wire("restore.yml", "backup_restore_stop_command", {}) == []


def test_no_slurm_path_or_container_name_is_spelled_in_the_backup_and_monitoring_playbooks():
    for name in ("backup.yml", "restore.yml", "monitoring.yml"):
        text = (ROOT / "playbooks" / name).read_text()
        for spelled in ("/var/spool/slurmctld", "-slurmdbd'", "-mariadb'", "/var/lib/hpclab/slurm", "hpclab_slurm_mode"):
            assert spelled not in text, (name, spelled)


@pytest.mark.parametrize(
    "extra_vars, expected",
    [
        ({}, ("latest", "", "", False)),
        ({"restore_snapshot": "6a8f4788", "restore_home": "alice", "restore_target": "/root/r", "restore_accounting_db": "true"},
         ("6a8f4788", "alice", "/root/r", True)),
    ],
)
def test_restore_variables(extra_vars, expected):
    names = ("backup_restore_snapshot", "backup_restore_home", "backup_restore_target", "backup_restore_accounting_db")
    assert tuple(_wire("restore.yml", n, extra_vars) for n in names) == expected


@pytest.mark.parametrize("target, way", [("/root/restored", ["/", "/root", "/root/restored"]), ("/srv", ["/", "/srv"]),
                                         ("/srv/a/b/c", ["/", "/srv", "/srv/a", "/srv/a/b", "/srv/a/b/c"])])
def test_the_way_to_the_target_is_what_the_filter_judges(role, target, way):
    assert role.evaluate("__backup_restore_target_way", extra={"backup_restore_target": target}) == way
    read = yaml.safe_load((ROLE / "tasks" / "restore.yml").read_text())
    (check,) = [t for t in read if t["name"] == "restore | Check that the snapshot holds what is asked"]
    assert "target_read=__backup_restore_target_read.stdout | default(none)" in " ".join(check["vars"]["__backup_restore_problems"].split())
