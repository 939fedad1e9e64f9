"""The backup role's restore entry point: what it was asked, then what restic snapshots and restic ls (captured
from restic 0.14) say the repository holds, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.backup_restore_problems import FilterModule, listed_nodes

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "backup"
PROBLEMS = FilterModule().filters()["backup_restore_problems"]
SNAPSHOTS = json.loads((FIXTURES / "snapshots_latest.json").read_text())
UNKNOWN = json.loads((FIXTURES / "snapshots_unknown.json").read_text())
LS_HOME = (FIXTURES / "ls_home.jsonl").read_text()
LS_HOME_MISSING = (FIXTURES / "ls_home_missing.jsonl").read_text()
LS_DUMP = (FIXTURES / "ls_dump.jsonl").read_text()
# stat of the ways to several targets on a bookworm node (fixtures/backup/capture_target_stat.sh).
TARGET_STAT = (FIXTURES / "target_stat.txt").read_text()
HOME = "/gfsv/home/alice"
DUMP = "/var/lib/hpclab/backup/dumps/slurm_acct_db.sql"
SECRET = "correct horse battery staple"


def settings(**overrides):
    base = {
        "backup_restore_snapshot": "latest",
        "backup_restore_home": "alice",
        "backup_restore_accounting_db": True,
        "backup_restore_target": "",
        "backup_restore_replace_newer": False,
        "backup_home_root": "/gfsv/home",
        "backup_repository": "/mnt/backup/restic",
        "backup_password": SECRET,
        "backup_mariadb_databases": ["slurm_acct_db"],
        "backup_dump_dir": "/var/lib/hpclab/backup/dumps",
        "backup_restore_staging_dir": "/var/lib/hpclab/backup/restore",
        "backup_paths": ["/gfsv/home", "/etc/hpclab"],
        "backup_extra_paths": [],
    }
    return {**base, **overrides}


def test_registered():
    assert set(FilterModule().filters()) == {"backup_restore_problems"}


def test_input_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        PROBLEMS("alice", host="node1")


def test_fixtures_are_what_the_role_saw():
    assert len(SNAPSHOTS) == 2 and UNKNOWN == []
    assert listed_nodes(LS_HOME)[HOME] == "dir"
    assert listed_nodes(LS_HOME)[HOME + "/a.txt"] == "file"
    assert listed_nodes(LS_HOME_MISSING) == {}
    assert listed_nodes(LS_DUMP) == {DUMP: "file"}


def test_listed_nodes_refuses_what_is_not_json():
    with pytest.raises(AnsibleFilterError, match="is not JSON"):
        listed_nodes("Fatal: wrong password or no key found")


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"backup_restore_accounting_db": False},
        {"backup_restore_home": ""},
        {"backup_restore_snapshot": "6a8f4788"},
        {"backup_restore_snapshot": "6a8f478827d8e39a42384816b5fb6b993915b347cd6f41502450113bf679115f"},
        {"backup_restore_target": "/root/restored"},
        {"backup_home_root": "/gfsv/home"},
        # The staging directory is used only for a home in place.
        {"backup_restore_target": "/root/restored", "backup_restore_staging_dir": "/tmp"},
        {"backup_restore_home": "", "backup_restore_staging_dir": "/tmp"},
        {"backup_restore_staging_dir": "/var/lib/hpclab/backup/staging"},
        {"backup_extra_paths": ["/var/lib/hpclab"]},
        # A home in place, replacing what changed since the snapshot too.
        {"backup_restore_replace_newer": True},
        {"backup_restore_replace_newer": True, "backup_restore_accounting_db": False},
        {"backup_restore_replace_newer": False, "backup_restore_target": "/root/restored"},
        {"backup_restore_replace_newer": "false", "backup_restore_target": "/root/restored"},
    ],
)
def test_good_input(overrides):
    assert PROBLEMS(settings(**overrides), host="node1") == []


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"backup_restore_home": "", "backup_restore_accounting_db": False},
         "node1: nothing to restore: neither backup_restore_home nor backup_restore_accounting_db is set. Fix: give "
         "-e restore_home=USER and/or -e restore_accounting_db=true to playbooks/restore.yml."),
        ({"backup_repository": ""}, "backup_repository is empty"),
        ({"backup_password": ""}, "backup_password is empty"),
        ({"backup_restore_snapshot": "yesterday"}, "backup_restore_snapshot 'yesterday' is neither 'latest' nor a snapshot ID"),
        ({"backup_restore_snapshot": "6a8f"}, "is neither 'latest' nor a snapshot ID"),
        ({"backup_restore_snapshot": "6A8F4788"}, "is neither 'latest' nor a snapshot ID"),
        ({"backup_restore_home": "../etc"}, "backup_restore_home '../etc' is not a user name"),
        ({"backup_restore_home": "alice/sub"}, "is not a user name"),
        ({"backup_restore_home": "*"}, "is not a user name"),
        ({"backup_restore_home": "a" * 33}, "is not a user name"),
        ({"backup_home_root": "gfsv/home"}, "backup_home_root 'gfsv/home' is not an absolute path"),
        ({"backup_restore_target": "restored"}, "backup_restore_target 'restored' is not an absolute path"),
        ({"backup_restore_target": "/root/re stored"}, "has a blank"),
        ({"backup_mariadb_databases": []}, "backup_restore_accounting_db is true but backup_mariadb_databases is empty"),
        # The role makes the staging directory root-only and removes what is in it: only below its own directory.
        ({"backup_restore_staging_dir": "/tmp"},
         "backup_restore_staging_dir /tmp does not lie below /var/lib/hpclab/backup, the directory this role owns"),
        ({"backup_restore_staging_dir": "/gfsv/home/staging"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_restore_staging_dir": "/var/lib/mysql"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_restore_staging_dir": "/var/lib/hpclab/backup"}, "does not lie below /var/lib/hpclab/backup"),
        ({"backup_restore_staging_dir": "restore"}, "backup_restore_staging_dir 'restore' is not an absolute path"),
        ({"backup_restore_staging_dir": "/var/lib/hpclab/backup/dumps"},
         "backup_restore_staging_dir /var/lib/hpclab/backup/dumps and backup_dump_dir /var/lib/hpclab/backup/dumps lie inside one another"),
        ({"backup_restore_staging_dir": "/var/lib/hpclab/backup/dumps/restore"}, "and backup_dump_dir /var/lib/hpclab/backup/dumps lie inside"),
        ({"backup_dump_dir": "/var/lib/hpclab/backup/restore/dumps"}, "and backup_dump_dir /var/lib/hpclab/backup/restore/dumps lie inside"),
        ({"backup_extra_paths": ["/var/lib/hpclab/backup/restore/keep"]}, "and backup_extra_paths /var/lib/hpclab/backup/restore/keep lie inside"),
        # Nothing in place would be replaced: the option is refused rather than silently doing nothing.
        ({"backup_restore_replace_newer": True, "backup_restore_target": "/root/restored"},
         "node1: backup_restore_replace_newer is true, but backup_restore_target '/root/restored' writes the snapshot's files "
         "below that directory and nothing in place changes. Fix: leave out -e restore_replace_newer=true"),
        ({"backup_restore_replace_newer": "yes", "backup_restore_target": "/root/restored"}, "backup_restore_replace_newer is true"),
        ({"backup_restore_replace_newer": True, "backup_restore_home": ""},
         "backup_restore_replace_newer is true, but no home is restored (backup_restore_home is empty)"),
    ],
)
def test_bad_input(overrides, expected):
    problems = PROBLEMS(settings(**overrides), host="node1")
    assert len(problems) == 1, problems
    assert expected in problems[0]
    assert "Fix:" in problems[0]
    assert SECRET not in problems[0]


def test_input_problems_stop_before_the_repository_is_judged():
    assert PROBLEMS(settings(backup_restore_home="../x"), host="node1", snapshots=[], listed={}) == [
        "node1: backup_restore_home '../x' is not a user name. Fix: give the user whose home to restore, e.g. 'alice'."
    ]


def test_snapshot_holds_both():
    assert PROBLEMS(settings(), host="node1", snapshots=SNAPSHOTS, listed={HOME: LS_HOME, DUMP: LS_DUMP}) == []


@pytest.mark.parametrize(
    "snapshot, expected",
    [
        ("latest", "node1: backup_restore_snapshot latest: the repository holds no snapshot of node1 (tag hpclab)."),
        ("deadbeef", "node1: backup_restore_snapshot deadbeef: the repository holds no such snapshot."),
    ],
)
def test_no_snapshot(snapshot, expected):
    (problem,) = PROBLEMS(settings(backup_restore_snapshot=snapshot), host="node1", snapshots=UNKNOWN, listed={})
    assert problem.startswith(expected)
    assert "-e restore_snapshot=ID" in problem


def test_home_missing_in_snapshot_names_the_newest_snapshot():
    (problem,) = PROBLEMS(settings(backup_restore_home="carol", backup_restore_accounting_db=False), host="node1",
                          snapshots=SNAPSHOTS, listed={"/gfsv/home/carol": LS_HOME_MISSING})
    assert problem == (
        "node1: backup_restore_home 'carol': snapshot 6a8f4788 (2026-12-02 09:04:01) holds no directory /gfsv/home/carol. "
        "Fix: check the name, or give an older snapshot with -e restore_snapshot=ID ('restic ls ID /gfsv/home/carol' "
        "shows what one holds)."
    )


def test_a_file_is_not_a_home():
    listed = {HOME: LS_HOME.replace('"type":"dir","path":"/gfsv/home/alice"', '"type":"file","path":"/gfsv/home/alice"')}
    (problem,) = PROBLEMS(settings(backup_restore_accounting_db=False), host="node1", snapshots=SNAPSHOTS, listed=listed)
    assert "holds no directory /gfsv/home/alice" in problem


def test_dump_missing_in_snapshot():
    (problem,) = PROBLEMS(settings(backup_restore_home=""), host="node1", snapshots=SNAPSHOTS, listed={DUMP: LS_HOME_MISSING})
    assert problem == (
        "node1: backup_restore_accounting_db: snapshot 6a8f4788 (2026-12-02 09:04:01) holds no dump "
        "/var/lib/hpclab/backup/dumps/slurm_acct_db.sql of the database slurm_acct_db. Fix: give a snapshot made while "
        "backup_mariadb_databases named it, with -e restore_snapshot=ID."
    )


def test_not_listed_at_all_is_missing():
    problems = PROBLEMS(settings(), host="node1", snapshots=SNAPSHOTS, listed={})
    assert len(problems) == 2


# --- one host, and never as root ------------------------------------------------------------------------------------


def test_a_home_is_restored_on_one_host_only():
    """Two backup hosts saving the same shared home would each copy it back at once, from their own snapshot."""
    (problem,) = PROBLEMS(settings(), host="node1", play_hosts=["node1", "node2"])
    assert problem == (
        "node1: backup_restore_home 'alice' would be restored on 2 hosts at once (node1, node2), each from its own snapshot "
        "into the same home. Fix: name the host whose backup to restore from with -e restore_host=HOST."
    )


@pytest.mark.parametrize(
    "overrides, play_hosts",
    [
        ({}, ["node1"]),
        ({}, None),
        ({"backup_restore_home": ""}, ["node1", "node2"]),  # each host's own accounting database
    ],
)
def test_one_host_or_no_home_is_fine(overrides, play_hosts):
    assert PROBLEMS(settings(**overrides), host="node1", play_hosts=play_hosts) == []


def test_a_home_owned_by_root_is_not_copied_back_in_place():
    """The copy back runs as the home's owner (restore_home.yml): as root it would write through the user's symlinks."""
    listed = {HOME: LS_HOME.replace('"path":"/gfsv/home/alice","uid":1001', '"path":"/gfsv/home/alice","uid":0'), DUMP: LS_DUMP}
    (problem,) = PROBLEMS(settings(), host="node1", snapshots=SNAPSHOTS, listed=listed)
    assert problem.startswith("node1: backup_restore_home 'alice': in snapshot 6a8f4788 (2026-12-02 09:04:01) the home "
                              "/gfsv/home/alice is owned by root")
    assert "-e restore_target=" in problem
    assert PROBLEMS(settings(backup_restore_target="/root/restored"), host="node1", snapshots=SNAPSHOTS, listed=listed) == []


def below(target, read=TARGET_STAT):
    """The problems of a home restored below TARGET, with the snapshot holding it and the way to TARGET read."""
    return PROBLEMS(settings(backup_restore_target=target, backup_restore_accounting_db=False), host="node1",
                    snapshots=SNAPSHOTS, listed={HOME: LS_HOME}, target_read=read)


@pytest.mark.parametrize("target", ["/root/restored", "/root/restored/alice/today", "/srv/private", "/srv/restore/new"])
def test_a_target_only_root_may_change_the_way_to(target):
    # /root/restored and /srv/restore/new are missing: the role makes the target 0700, inside directories only root
    # may write (/root 0700, /srv/restore 0755).
    assert below(target) == []


def test_an_existing_target_that_others_may_enter_is_refused():
    (problem,) = below("/srv/restore")
    assert problem == (
        "node1: backup_restore_target /srv/restore has mode 0755: the user whose home is restored below it owns the copy, "
        "and could reach it while restic writes as root and swap one of its directories for a symbolic link. Fix: chmod "
        "0700 /srv/restore, or give a path that does not exist yet (the role makes it 0700), such as /root/restored.")


@pytest.mark.parametrize(
    "target, expected",
    [
        ("/tmp/alice-restore", "/tmp on the way to it is writable by others than root (mode 1777)"),
        ("/var/tmp/restore", "/var/tmp on the way to it is writable by others than root (mode 1777)"),
        ("/srv/shared/restore", "/srv/shared on the way to it is writable by others than root (mode 0775)"),
        ("/srv/link", "/srv/link on the way to it is a symbolic link"),
        ("/srv/link/alice", "/srv/link on the way to it is a symbolic link"),
    ],
)
def test_a_target_someone_else_may_redirect_is_refused(target, expected):
    (problem,) = below(target)
    assert problem.startswith(f"node1: backup_restore_target {target}: {expected}, and restic writes the snapshot's files "
                              "below the target as root")
    assert "Fix: give a directory that only root may write, all the way from /, such as /root/restored" in problem


def test_a_target_owned_by_a_user_is_refused():
    # /tmp/alice-restore itself, made by alice (uid 2001), with /tmp read as root's and not writable by others.
    read = TARGET_STAT.replace("directory\t0\t1777\t/tmp\n", "directory\t0\t755\t/tmp\n")
    (problem,) = below("/tmp/alice-restore", read)
    assert "/tmp/alice-restore on the way to it is owned by uid 2001" in problem


def test_the_way_is_judged_only_when_read_and_only_for_a_home_below_a_target():
    assert PROBLEMS(settings(backup_restore_target="/tmp/alice-restore", backup_restore_accounting_db=False), host="node1",
                    snapshots=SNAPSHOTS, listed={HOME: LS_HOME}) == []
    assert PROBLEMS(settings(), host="node1", snapshots=SNAPSHOTS, listed={HOME: LS_HOME, DUMP: LS_DUMP}, target_read=TARGET_STAT) == []


def test_a_way_that_could_not_be_read_is_refused():
    (problem,) = below("/root/restored", "")
    assert "the directories on the way to it could not be read (stat printed nothing for /)" in problem


def test_stat_output_in_another_format_is_refused():
    with pytest.raises(AnsibleFilterError, match="is not 'TYPE<TAB>UID<TAB>MODE<TAB>PATH'"):
        below("/root/restored", "/ root 755")
