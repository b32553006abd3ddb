"""Private mount namespaces for programs that write fixed host paths
(storage daemons and clients: tgtd, rpcbind, ganesha, smbd, smbclient).

``isolated(dirs, script, workdir)`` is an argv running a shell line in a new
mount namespace (``unshare -m``, private propagation) with a tmpfs over
each of ``dirs`` that exists; the host never sees those mounts or the files
written under them, and they vanish with the last process.  Every tmpfs is
named ``v6gate-...`` so the leftover checks can look for them
(lab/hostpaths.py).
"""

from __future__ import annotations

import shlex


def private_mounts(dirs: list[str]) -> str:
    """Shell lines mounting a tmpfs over each existing directory (the mount
    namespace is private, so the host never sees them)."""
    return " && ".join(f"{{ [ ! -d {d} ] || mount -t tmpfs -o size=16m,mode=755 v6gate-{d.strip('/').replace('/', '-')} {d}; }}"
                       for d in dirs)


def isolated(dirs: list[str], script: str, workdir) -> list[str]:
    """argv running ``script`` (a shell line ending in ``exec daemon``) in a
    private mount namespace; the lab's work directory (under /run) stays
    visible: the shell holds it as its working directory while the tmpfs
    covers /run, then binds it back to its path."""
    wd = shlex.quote(str(workdir))
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            f"cd {wd} && {private_mounts(dirs)} && mkdir -p {wd} && mount --no-canonicalize --bind . {wd} && cd / && {script}"]
