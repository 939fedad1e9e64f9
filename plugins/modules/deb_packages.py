#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: deb_packages
short_description: Install the Debian packages a node lacks, in one apt-get run, updating the lists only when old
version_added: 0.1.0
description:
  - Asks dpkg which of the packages in O(name) are not installed. When none is missing it returns at once,
    unchanged, without reading apt's package lists.
  - Otherwise it updates the package lists (C(apt-get update)) when they are older than
    O(cache_valid_time), then installs the missing packages in one C(apt-get install). If that install
    fails with lists this module did not update (a version gone from the mirror, a package the old lists
    do not know), it updates them and tries once more.
  - Does for O(name) what M(ansible.builtin.apt) does with C(state=present), C(update_cache=true) and
    C(cache_valid_time), with apt-get alone. M(ansible.builtin.apt) also loads the whole package cache into
    python-apt before and after the update, which on a fresh node costs about 3 CPU seconds more than
    apt-get's own run (measured on Debian 12 for munge, slurmd and the MPI stack).
  - Installs only. Upgrades, version pins, removals and wildcards stay with M(ansible.builtin.apt).
author:
  - hpclab.cluster contributors (@hpclab)
attributes:
  check_mode:
    support: full
    description: >-
      Lists what apt-get would install (C(apt-get install --simulate) against the current lists) and
      changes nothing. If apt-get cannot plan with the current lists, it warns and reports the missing
      packages as to be installed; it never fails for that.
  diff_mode:
    support: full
    description: The packages that are (or would be) unpacked, one line each with their version.
  idempotent:
    support: full
    description: Once the packages are installed, a second run only asks dpkg and changes nothing.
  platform:
    support: full
    platforms: debian
    description: Debian and its derivatives, with apt-get and dpkg-query.
options:
  name:
    description:
      - Package names, optionally with an architecture (C(libc6:amd64)).
    type: list
    elements: str
    required: true
  cache_valid_time:
    description:
      - Update the package lists first when they are older than this many seconds (the age of
        C(/var/lib/apt/periodic/update-success-stamp) or C(/var/lib/apt/lists), whichever is newer).
      - C(0) updates them every time something is missing.
    type: int
    default: 3600
  install_recommends:
    description: Install the packages' recommended packages too.
    type: bool
    default: false
  lock_timeout:
    description: Seconds apt-get waits for another apt or dpkg run to release its lock.
    type: int
    default: 60
  update_retries:
    description: Attempts at C(apt-get update) before the module fails (1, 2, 4... seconds apart).
    type: int
    default: 3
notes:
  - A changed configuration file that the admin edited keeps the admin's version
    (C(--force-confdef --force-confold)), as with M(ansible.builtin.apt).
seealso:
  - module: ansible.builtin.apt
"""

EXAMPLES = r"""
- name: Install slurmd and the MPI stack where they are missing
  hpclab.cluster.deb_packages:
    name: [slurmd, slurm-client, openmpi-bin, python3-mpi4py, python3-numpy]
  register: installed

- name: Show what apt-get set up
  ansible.builtin.debug:
    msg: "{{ installed.packages | map(attribute='name') | list }}"
"""

RETURN = r"""
missing:
  description: The packages of O(name) that were not installed when the module started.
  returned: always
  type: list
  elements: str
  sample: [munge, slurmd]
packages:
  description: >-
    Every package apt-get unpacked (or in check mode would unpack), dependencies included; C(from) is the
    version replaced, when a dependency had to be upgraded.
  returned: always
  type: list
  elements: dict
  sample: [{name: munge, version: 0.5.15-2+deb12u1, from: null}]
cache_updated:
  description: Whether the module ran C(apt-get update).
  returned: always
  type: bool
commands:
  description: The commands run (in check mode, those that would run), as argv lists.
  returned: always
  type: list
  elements: list
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpclab.cluster.plugins.module_utils._apt import (
    DPKG_FORMAT,
    ENVIRONMENT,
    bad_names,
    diff_text,
    install_argv,
    lists_are_fresh,
    missing_packages,
    parse_dpkg_query,
    parse_simulation,
    parse_unpacked,
    update_argv,
)

# The stamps apt leaves after an update (the first one by APT::Periodic, where installed).
LIST_STAMPS = ("/var/lib/apt/periodic/update-success-stamp", "/var/lib/apt/lists")


def _mtimes() -> list[float]:
    return [os.stat(p).st_mtime for p in LIST_STAMPS if os.path.exists(p)]


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="list", elements="str", required=True),
            cache_valid_time=dict(type="int", default=3600),
            install_recommends=dict(type="bool", default=False),
            lock_timeout=dict(type="int", default=60),
            update_retries=dict(type="int", default=3),
        ),
        supports_check_mode=True,
    )
    params = module.params
    names = params["name"]
    bad = bad_names(names)
    if bad:
        module.fail_json(msg="not a Debian package name: %s (names only, optionally NAME:ARCH; versions and "
                             "wildcards need ansible.builtin.apt)" % ", ".join(map(str, bad)))
    result = {"changed": False, "missing": [], "packages": [], "cache_updated": False, "commands": []}
    if not names:
        module.exit_json(**result)

    def run(argv: list[str]) -> tuple[int, str, str]:
        return module.run_command(argv, environ_update=ENVIRONMENT)

    query = ["dpkg-query", "-W", "-f=" + DPKG_FORMAT] + names
    rc, out, err = run(query)
    # rc 1: some package is unknown to dpkg (never installed); its name is then only on stderr.
    if rc not in (0, 1):
        module.fail_json(msg="dpkg-query failed (rc %d): %s" % (rc, err.strip()), cmd=query, rc=rc, stderr=err)
    result["missing"] = missing = missing_packages(names, parse_dpkg_query(out, names))
    if not missing:
        module.exit_json(**result)
    result["changed"] = True

    def update() -> None:
        argv = update_argv(params["lock_timeout"])
        result["commands"].append(argv)
        if module.check_mode:
            return
        attempts = max(1, params["update_retries"])
        for attempt in range(attempts):
            rc, out, err = run(argv)
            if rc == 0:
                result["cache_updated"] = True
                return
            if attempt + 1 < attempts:
                time.sleep(2 ** attempt)
        module.fail_json(msg="apt-get update failed %d times (rc %d): %s" % (attempts, rc, err.strip()),
                         rc=rc, stdout=out, stderr=err, **result)

    if not lists_are_fresh(time.time(), _mtimes(), params["cache_valid_time"]):
        update()

    if module.check_mode:
        argv = install_argv(missing, params["install_recommends"], params["lock_timeout"], simulate=True)
        rc, out, err = run(argv)
        if rc == 0:
            result["packages"] = parse_simulation(out)
        else:
            module.warn("apt-get cannot plan the install with the current package lists (rc %d): %s"
                        % (rc, err.strip()))
            result["packages"] = [{"name": n, "version": None, "from": None} for n in missing]
        result["commands"].append(install_argv(missing, params["install_recommends"], params["lock_timeout"]))
    else:
        argv = install_argv(missing, params["install_recommends"], params["lock_timeout"])
        result["commands"].append(argv)
        rc, out, err = run(argv)
        if rc != 0 and not result["cache_updated"]:
            update()
            result["commands"].append(argv)
            rc, out, err = run(argv)
        if rc != 0:
            module.fail_json(msg="apt-get could not install %s (rc %d): %s" % (", ".join(missing), rc, err.strip()),
                             rc=rc, stdout=out, stderr=err, **result)
        result["packages"] = parse_unpacked(out)
    if module._diff:
        result["diff"] = {"before": "", "after": diff_text(result["packages"]),
                          "before_header": "installed packages", "after_header": "installed packages"}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
