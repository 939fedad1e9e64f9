# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure parse/plan code of the deb_packages module: dpkg-query's status lines, apt-get's plan and output."""

from __future__ import annotations

import re

# Debian policy 5.6.1: lower case letters, digits, + - . ; at least two characters, starting with a
# letter or digit. An architecture may follow (libc6:amd64). No version (=1.2) and no wildcard.
PACKAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+(:[a-z0-9-]+)?$")

# Output apt-get and dpkg-query print in the C locale, never a question (debconf, conffile prompts).
ENVIRONMENT = {
    "LANG": "C",
    "LC_ALL": "C",
    "LC_MESSAGES": "C",
    "DEBIAN_FRONTEND": "noninteractive",
    "DEBIAN_PRIORITY": "critical",
}

# dpkg-query -W -f=DPKG_FORMAT NAMES: one line a package dpkg knows (host_info and deb_packages).
DPKG_FORMAT = "${Package}\\t${db:Status-Status}\\t${Version}\\n"

# apt-get -s: "Inst NAME [OLD] (NEW RELEASE [ARCH])"; [OLD] only when the package is upgraded.
_SIMULATED = re.compile(r"^Inst (?P<name>\S+) (?:\[(?P<old>[^\]]+)\] )?\((?P<version>\S+)")
# dpkg, through apt-get install: "Unpacking NAME[:ARCH] (NEW) [over (OLD)] ..."
_UNPACKED = re.compile(r"^Unpacking (?P<name>[^\s:]+)(?::\S+)? \((?P<version>[^)]+)\)(?: over \((?P<old>[^)]+)\))?")


def bad_names(names: list[str]) -> list[str]:
    """The entries of NAMES that are not plain Debian package names."""
    return [n for n in names if not isinstance(n, str) or not PACKAGE_NAME.match(n)]


def list_dpkg_query(text: str) -> dict:
    """Every package of `dpkg-query -W -f=DPKG_FORMAT [NAMES]` output: name -> installed, status, version."""
    found = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0]:
            found[fields[0]] = {"installed": fields[1] == "installed", "status": fields[1], "version": fields[2]}
    return found


def parse_dpkg_query(text: str, names: list) -> dict:
    """Per name in NAMES, from `dpkg-query -W -f=DPKG_FORMAT NAMES` output (unknown names print nothing)."""
    found = list_dpkg_query(text)
    unknown = {"installed": False, "status": "unknown", "version": ""}
    # Multi-arch packages print as NAME; a NAME:ARCH request matches its NAME line.
    return {name: dict(found.get(name) or found.get(name.split(":")[0]) or unknown) for name in names}


def missing_packages(names: list[str], packages: dict) -> list[str]:
    """The NAMES (in their order, once each) that parse_dpkg_query's PACKAGES do not report installed."""
    missing: list[str] = []
    for name in names:
        if not packages[name]["installed"] and name not in missing:
            missing.append(name)
    return missing


def update_argv(lock_timeout: int) -> list[str]:
    return ["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=%d" % lock_timeout]


def install_argv(names: list[str], install_recommends: bool, lock_timeout: int, simulate: bool = False) -> list[str]:
    """One apt-get install of NAMES; a changed conffile keeps the admin's version (as ansible.builtin.apt does)."""
    argv = ["apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=%d" % lock_timeout,
            "-o", "Dpkg::Use-Pty=0",
            "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"]
    argv.append("--install-recommends" if install_recommends else "--no-install-recommends")
    if simulate:
        argv.append("--simulate")
    return argv + list(names)


def _packages(stdout: str, pattern: re.Pattern) -> list[dict]:
    """[{name, version, from}] of the lines PATTERN (groups name, version, old) matches, in their order."""
    found = []
    for line in stdout.splitlines():
        m = pattern.match(line)
        if m:
            found.append({"name": m.group("name"), "version": m.group("version"), "from": m.group("old")})
    return found


def parse_simulation(stdout: str) -> list[dict]:
    """apt-get install --simulate output -> [{name, version, from}] for every package it would unpack.

    from is the installed version of a package that would be upgraded, else None."""
    return _packages(stdout, _SIMULATED)


def parse_unpacked(stdout: str) -> list[dict]:
    """apt-get install output -> [{name, version, from}] for every package dpkg unpacked, in its order.

    Names without the architecture, as in parse_simulation; from is the version replaced, else None."""
    return _packages(stdout, _UNPACKED)


def diff_text(packages: list[dict]) -> str:
    """One line a package, sorted: "name version", or "name old -> version" for an upgrade."""
    lines = []
    for p in sorted(packages, key=lambda p: p["name"]):
        if p.get("from"):
            lines.append("%s %s -> %s" % (p["name"], p["from"], p["version"]))
        else:
            lines.append("%s %s" % (p["name"], p["version"]) if p.get("version") else p["name"])
    return "".join(line + "\n" for line in lines)


def lists_are_fresh(now: float, mtimes: list[float], valid_seconds: int) -> bool:
    """Whether the package lists were updated less than VALID_SECONDS ago (mtimes: the stamps that exist)."""
    return valid_seconds > 0 and bool(mtimes) and now - max(mtimes) < valid_seconds
