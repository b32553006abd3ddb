"""Private host paths for a daemon or client program: the one way v6gate
keeps a program's fixed host paths (/run/<daemon>, /var/lib/<daemon>,
/etc/resolv.conf, ...) away from the host and from other labs.  Used by the
lab's dhcpcd, the storage daemons (tgtd, rpcbind, nfs-ganesha, smbd) and
the storage checks' smbclient.

A daemon that insists on a compiled-in path runs in a private mount
namespace (``unshare --mount``, propagation private) in which each such path
is a bind of a directory or file of the lab's work directory, or an empty
tmpfs.  Nothing is created on the host: when a mount point does not exist
(a fresh machine has no /run/dhcpcd, a debootstrap root may have no
/etc/resolv.conf), the wrapper makes it inside a private overlay of its
nearest existing ancestor whose upper layer is in the lab's scratch
directory, so the host's tree is never written and the daemon never fails
with ``mount point does not exist``.

Order inside the namespace: binds first (their sources may live under a
path a tmpfs is about to hide, such as the lab's own /run/v6gate), then
the tmpfs mounts, then directories inside those tmpfs, then the one
``keep`` directory (the lab's work directory, which a tmpfs over /run
hides) bound back at its own path: the shell holds it as its working
directory while the tmpfs goes over it.  Every tmpfs and overlay is named
``v6gate-private`` so the leftover checks can look for them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LabError
from .proc import need


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists():
        p = p.parent
    return p


def _under(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


@dataclass
class PrivatePaths:
    """Mounts of one daemon's private mount namespace.  ``scratch`` is a
    directory of the lab (removed with it) for the overlays' upper layers."""

    scratch: Path
    binds: list[tuple[Path, Path]] = field(default_factory=list)
    tmpfs_dirs: list[tuple[Path, list[Path]]] = field(default_factory=list)
    kept: Path | None = None

    def bind(self, source: Path | str, target: Path | str) -> PrivatePaths:
        """``target`` shows ``source`` (a directory or a file of the lab)."""
        self.binds.append((Path(source), Path(target)))
        return self

    def tmpfs(self, target: Path | str, mkdirs: tuple[str, ...] = ()) -> PrivatePaths:
        """``target`` is an empty private tmpfs, with ``mkdirs`` (paths under it) created."""
        target = Path(target)
        subs = [Path(d) for d in mkdirs]
        for d in subs:
            if not _under(d, target):
                raise LabError(f"private tmpfs {target}: {d} is not under it")
        self.tmpfs_dirs.append((target, subs))
        return self

    def keep(self, directory: Path | str) -> PrivatePaths:
        """``directory`` (the lab's work directory) stays visible at its path
        even where a private tmpfs covers it; one per namespace."""
        if self.kept is not None:
            raise LabError(f"private paths: {self.kept} is already kept; keep one directory")
        self.kept = Path(directory)
        return self

    def _mount_point(self, target: Path, is_file: bool, n: int) -> list[str]:
        """Commands that make ``target`` exist without writing the host's tree.  A
        symlink (/etc/resolv.conf -> /run/systemd/resolve/...) is replaced by a
        plain file or directory in the overlay: a bind would follow it."""
        if target.exists() and not target.is_symlink():
            return []
        anc = target.parent if target.is_symlink() else _nearest_existing(target.parent)
        if _under(self.scratch, anc):
            raise LabError(f"cannot create the mount point {target} privately: the lab's scratch directory "
                           f"{self.scratch} is under {anc}; use a private tmpfs on {anc} instead")
        upper, work = self.scratch / f"ov{n}-upper", self.scratch / f"ov{n}-work"
        upper.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        q = shlex.quote
        make = [f"mkdir -p {q(str(target.parent))}", f"touch {q(str(target))}"] if is_file \
            else [f"mkdir -p {q(str(target))}"]
        if target.is_symlink():
            make.insert(0, f"rm -f {q(str(target))}")
        return [f"mount -t overlay v6gate-private -o lowerdir={q(str(anc))},upperdir={q(str(upper))},"
                f"workdir={q(str(work))} {q(str(anc))}", *make]

    def script(self) -> list[str]:
        q = shlex.quote
        cmds = ["mount --make-rprivate /"]
        hidden = [t for t, _ in self.tmpfs_dirs]
        hold = self.kept is not None and any(_under(self.kept, h) for h in hidden)
        if hold:
            if not self.kept.is_dir():
                raise LabError(f"private paths: the kept directory {self.kept} does not exist")
            cmds.insert(0, f"cd {q(str(self.kept))}")
        for n, (src, dst) in enumerate(self.binds):
            if not src.exists():
                raise LabError(f"private path {dst}: its source {src} does not exist")
            if any(_under(dst, h) for h in hidden):
                raise LabError(f"private path {dst} is under a private tmpfs: bind it elsewhere")
            cmds += self._mount_point(dst, src.is_file(), n)
            cmds.append(f"mount --bind {q(str(src))} {q(str(dst))}")
        for target, subs in self.tmpfs_dirs:
            cmds += self._mount_point(target, False, len(self.binds) + len(cmds))
            cmds.append(f"mount -t tmpfs -o size=64m,mode=0755 v6gate-private {q(str(target))}")
            cmds += [f"mkdir -p {q(str(d))}" for d in subs]
        if hold:  # '.' is the kept directory as it was before the tmpfs hid it
            cmds += [f"mkdir -p {q(str(self.kept))}", f"mount --no-canonicalize --bind . {q(str(self.kept))}", "cd /"]
        return cmds

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run in the private mount namespace (exec'd: signals reach it)."""
        need(argv[0])  # the wrapper's own argv[0] is unshare: say which program is missing
        return self.wrap_shell("exec " + shlex.join(argv))

    def wrap_shell(self, line: str) -> list[str]:
        """A shell ``line`` (ending in ``exec program``) run in the private mount namespace."""
        need("unshare")
        script = " && ".join([*self.script(), line])
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
