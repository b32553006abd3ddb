"""Private host paths for a lab daemon: the one way the lab keeps a daemon's
fixed host paths (/run/<daemon>, /var/lib/<daemon>, /etc/resolv.conf, ...)
away from the host and from other labs.

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
the tmpfs mounts, then directories inside those tmpfs.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LabError
from ..util.proc import need


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
        for n, (src, dst) in enumerate(self.binds):
            if not src.exists():
                raise LabError(f"private path {dst}: its source {src} does not exist")
            if any(_under(dst, h) for h in hidden):
                raise LabError(f"private path {dst} is under a private tmpfs: bind it elsewhere")
            cmds += self._mount_point(dst, src.is_file(), n)
            cmds.append(f"mount --bind {q(str(src))} {q(str(dst))}")
        for target, subs in self.tmpfs_dirs:
            cmds += self._mount_point(target, False, len(self.binds) + len(cmds))
            cmds.append(f"mount -t tmpfs -o mode=0755 v6gate-private {q(str(target))}")
            cmds += [f"mkdir -p {q(str(d))}" for d in subs]
        return cmds

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run in the private mount namespace (exec'd: signals reach it)."""
        need(argv[0])  # the wrapper's own argv[0] is unshare: say which program is missing
        script = " && ".join([*self.script(), "exec " + shlex.join(argv)])
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
