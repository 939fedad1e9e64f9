"""README.md, "Where to change what": every row names inventory variables that a role documents.

Issue 52: each row is an inventory variable in one inventory file. A row that names a role's private default, a
task list or a template, or a variable no role reads, sends an admin to the wrong place; this test names it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Where to change what"
# A public role variable or a cluster-wide hpclab_* one: lower case, no leading underscore.
NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# Where an admin sets a variable: a file of the inventory's group_vars or host_vars.
INVENTORY_FILE = re.compile(r"(?:group_vars|host_vars)/[A-Za-z0-9_./-]+\.yml")


def table_rows(readme: str) -> list[list[str]]:
    """The cells of each body row of the first table after SECTION (header and separator left out)."""
    lines = readme[readme.index(SECTION) + len(SECTION):].splitlines()
    table = []
    for line in lines:
        if line.startswith("|"):
            table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif table or line.startswith("## "):
            break
    return table[2:]


def backticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def documented_options() -> dict[str, str]:
    """Every option of every entry point of every role's argument spec: {name: role}."""
    options = {}
    for spec in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        for entry in (yaml.safe_load(spec.read_text(encoding="utf-8")) or {}).get("argument_specs", {}).values():
            for name in (entry or {}).get("options") or {}:
                options.setdefault(name, spec.parts[-3])
    return options


def cluster_wide_defaults() -> str:
    """The text of every role's defaults/main.yml, where the hpclab_* variables are read."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("roles/*/defaults/main.yml")))


def undocumented(names, options=None, defaults=None) -> list[str]:
    """One message for each name that is neither a role's option nor an hpclab_* variable a role's defaults read."""
    options = documented_options() if options is None else options
    defaults = cluster_wide_defaults() if defaults is None else defaults
    problems = []
    for name in names:
        if name.startswith("hpclab_"):
            if not re.search(rf"\b{re.escape(name)}\b", defaults):
                problems.append(
                    f"README.md '{SECTION[3:]}' names `{name}`, which no roles/*/defaults/main.yml reads: "
                    "name the variable a role reads, or make a role's defaults read it."
                )
        elif name not in options:
            problems.append(
                f"README.md '{SECTION[3:]}' names `{name}`, which is no option of any roles/*/meta/argument_specs.yml: "
                "name a documented role variable, or document it in its role's argument spec."
            )
    return problems


README = (ROOT / "README.md").read_text(encoding="utf-8")
ROWS = table_rows(README)
NAMES = sorted({name for row in ROWS for name in backticked(row[1])})


def test_the_table_is_found_with_three_columns():
    assert len(ROWS) >= 10, ROWS
    assert all(len(row) == 3 for row in ROWS), [row for row in ROWS if len(row) != 3]


@pytest.mark.parametrize("row", ROWS, ids=[row[0][:40] for row in ROWS])
def test_each_row_names_variables_and_the_inventory_file(row):
    what, variables, where = row
    names = backticked(variables)
    assert names, f"row {what!r}: the 'set' column names no `variable`"
    assert all(NAME.fullmatch(n) for n in names), f"row {what!r}: {names} are not all variable names"
    files = backticked(where)
    assert files and all(INVENTORY_FILE.fullmatch(f) for f in files), (
        f"row {what!r}: the 'in' column must name a group_vars/ or host_vars/ file of the inventory, got {where!r}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_variable_the_table_names_is_documented(name):
    problems = undocumented([name])
    assert not problems, problems[0]


@pytest.mark.parametrize(
    "name,expected",
    [
        pytest.param("slurm_worker_made_up_packages", "no option of any roles/*/meta/argument_specs.yml", id="role-variable"),
        pytest.param("hpclab_made_up_path", "which no roles/*/defaults/main.yml reads", id="cluster-wide"),
        pytest.param("__slurm_master_config_default", "no option of any", id="private-default"),
    ],
)
def test_a_made_up_name_is_reported(name, expected):
    found = undocumented([name])
    assert len(found) == 1 and expected in found[0] and f"`{name}`" in found[0], found


def test_the_checks_read_the_real_specs_and_defaults():
    options = documented_options()
    assert options["munge_key"] == "munge"
    assert options["slurm_master_config"] == "slurm_master"
    assert undocumented(["munge_key", "hpclab_cluster_users"]) == []


def test_table_rows_stop_at_the_table_end():
    readme = f"intro\n{SECTION}\n\ntext\n\n| a | b | c |\n| --- | --- | --- |\n| x | `v_w` | `group_vars/all.yml` |\n\nafter\n| y | z | w |\n"
    assert table_rows(readme) == [["x", "`v_w`", "`group_vars/all.yml`"]]
