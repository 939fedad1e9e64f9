"""A small real NFS client for the verifiers: libnfs (Debian's libnfs13) through ctypes.

The kernel of these machines has no NFS client, and libnfs-utils only ships nfs-ls/-cat/-cp; the
CSI provisioning contract also needs mkdir, chmod, stat, rename and recursive removal. This runs
inside a node container: python3 nfs_client.py SERVER EXPORT VERSION COMMAND ARGS...
  mkdir PATH MODE | chmod PATH MODE | stat PATH | rename OLD NEW | rmtree PATH | exists PATH
Prints JSON for stat, "yes"/"no" for exists; exit 1 with libnfs's error on failure.
Use VERSION 3 for chmod of a directory: libnfs 5.0.2's NFSv4 chmod opens the object first and gets
NFS4ERR_ISDIR on directories (seen in the lab).
"""

import ctypes
import json
import stat as st
import sys


class Stat64(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "dev", "ino", "mode", "nlink", "uid", "gid", "rdev", "size", "blksize", "blocks",
        "atime", "mtime", "ctime", "atime_nsec", "mtime_nsec", "ctime_nsec", "used")]


class Dirent(ctypes.Structure):
    pass


Dirent._fields_ = [("next", ctypes.POINTER(Dirent)), ("name", ctypes.c_char_p)]

lib = ctypes.CDLL("libnfs.so.13")
lib.nfs_init_context.restype = ctypes.c_void_p
lib.nfs_get_error.restype = ctypes.c_char_p
lib.nfs_get_error.argtypes = [ctypes.c_void_p]
for fn in ("nfs_mount", "nfs_mkdir2", "nfs_chmod", "nfs_rename", "nfs_rmdir", "nfs_unlink", "nfs_stat64",
           "nfs_opendir", "nfs_set_version"):
    getattr(lib, fn).restype = ctypes.c_int
lib.nfs_readdir.restype = ctypes.POINTER(Dirent)


class Client:
    def __init__(self, server: str, export: str, version: int):
        self.ctx = ctypes.c_void_p(lib.nfs_init_context())
        if version == 4:
            self.check(lib.nfs_set_version(self.ctx, 4), "set version 4")
        self.check(lib.nfs_mount(self.ctx, server.encode(), export.encode()), f"mount {server}:{export}")

    def check(self, rc: int, what: str) -> None:
        if rc < 0:
            raise OSError(f"{what}: {lib.nfs_get_error(self.ctx).decode(errors='replace')}")

    def stat(self, path: str):
        buf = Stat64()
        rc = lib.nfs_stat64(self.ctx, path.encode(), ctypes.byref(buf))
        return None if rc < 0 else buf

    def mkdir(self, path: str, mode: int) -> None:
        self.check(lib.nfs_mkdir2(self.ctx, path.encode(), mode), f"mkdir {path}")

    def chmod(self, path: str, mode: int) -> None:
        self.check(lib.nfs_chmod(self.ctx, path.encode(), mode), f"chmod {path}")

    def rename(self, old: str, new: str) -> None:
        self.check(lib.nfs_rename(self.ctx, old.encode(), new.encode()), f"rename {old} {new}")

    def listdir(self, path: str) -> list:
        handle = ctypes.c_void_p()
        self.check(lib.nfs_opendir(self.ctx, path.encode(), ctypes.byref(handle)), f"opendir {path}")
        names = []
        while True:
            entry = lib.nfs_readdir(self.ctx, handle)
            if not entry:
                break
            name = entry.contents.name.decode()
            if name not in (".", ".."):
                names.append(name)
        lib.nfs_closedir(self.ctx, handle)
        return names

    def rmtree(self, path: str) -> None:
        for name in self.listdir(path):
            child = f"{path.rstrip('/')}/{name}"
            info = self.stat(child)
            if info is not None and st.S_ISDIR(info.mode):
                self.rmtree(child)
            else:
                self.check(lib.nfs_unlink(self.ctx, child.encode()), f"unlink {child}")
        self.check(lib.nfs_rmdir(self.ctx, path.encode()), f"rmdir {path}")


def main(argv: list) -> int:
    server, export, version, command, *args = argv
    client = Client(server, export, int(version))
    if command == "mkdir":
        client.mkdir(args[0], int(args[1], 8))
    elif command == "chmod":
        client.chmod(args[0], int(args[1], 8))
    elif command == "rename":
        client.rename(args[0], args[1])
    elif command == "rmtree":
        client.rmtree(args[0])
    elif command == "exists":
        print("yes" if client.stat(args[0]) is not None else "no")
    elif command == "stat":
        info = client.stat(args[0])
        if info is None:
            raise OSError(f"stat {args[0]}: no such file or directory")
        print(json.dumps({"mode": st.S_IMODE(info.mode), "is_dir": st.S_ISDIR(info.mode), "uid": info.uid, "gid": info.gid, "size": info.size}))
    else:
        raise SystemExit(f"unknown command {command}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
