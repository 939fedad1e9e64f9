# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs a module's commands: argv lists through AnsibleModule.run_command, never a shell string.

One place for the binary lookup, the commands' environment and the failure message (the object, the
command, rc and stderr), so that every module fails the same way.

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations


def failure_message(argv: list, rc: int, out: str, err: str, context: str = "", hint: str = "") -> str:
    """`CONTEXT: COMMAND failed: rc=N, stderr: TEXT. HINT`. Some CLIs print their errors on stdout
    (gluster, docker exec of a missing command): stdout stands in for an empty stderr."""
    msg = f"{' '.join(str(word) for word in argv)} failed: rc={rc}, stderr: {(err or out or '').strip()}"
    if context:
        msg = f"{context}: {msg}"
    if hint:
        msg += f". {hint}"
    return msg


class CommandRunner:
    """Runs argv lists whose first word is a command name, looked up on the PATH (and OPT_DIRS) once,
    with ENVIRON added to the command's environment."""

    def __init__(self, module, environ: dict | None = None, opt_dirs: list | None = None):
        self.module = module
        self.environ = dict(environ or {})
        self.opt_dirs = list(opt_dirs or [])
        self._paths = {}

    def path(self, name: str) -> str:
        """The absolute path of command NAME; the module fails naming it when it is not installed."""
        if name not in self._paths:
            self._paths[name] = self.module.get_bin_path(name, required=True, opt_dirs=self.opt_dirs)
        return self._paths[name]

    def run(self, argv: list) -> tuple:
        """Run ARGV and return (rc, stdout, stderr), whatever rc is."""
        return self.module.run_command([self.path(argv[0]), *argv[1:]], environ_update=self.environ)

    def fail(self, argv: list, rc: int, out: str, err: str, context: str = "", hint: str = "", **result) -> None:
        """Fail the module with failure_message() and the command's rc, stdout and stderr, plus RESULT."""
        self.module.fail_json(
            msg=failure_message(argv, rc, out, err, context, hint), rc=rc, stdout=out, stderr=err, **result
        )

    def check(self, argv: list, context: str = "", hint: str = "", **result) -> str:
        """Run ARGV and return its stdout; on a non-zero rc fail as fail() does."""
        rc, out, err = self.run(argv)
        if rc != 0:
            self.fail(argv, rc, out, err, context, hint, **result)
        return out
