"""Host paths the lab's daemons could leave files in, for the leftover checks.

The storage daemons (tgtd, rpcbind, nfs-ganesha, smbd; smbclient on the
client side) keep sockets, pid files and databases in fixed host
directories.  The lab runs them in private mount namespaces with tmpfs over
those directories (lab/hostpaths.py), so after a lab nothing may
appear here, nor may any of those tmpfs mounts be visible on the host.
"""

from __future__ import annotations

import glob
import os

#: globs of files only a lab daemon running *without* isolation would create
DAEMON_FILES = [
    "/run/tgtd/socket.*",          # tgtd control sockets (one per -C port)
    "/run/rpcbind.sock", "/run/rpcbind/*.xdr", "/run/rpcbind.lock",
    "/run/ganesha/*", "/var/lib/nfs/ganesha/*", "/var/lib/nfs/ganesha.*",
    "/run/samba/*.tdb", "/run/samba/*.pid", "/run/samba/msg.*", "/run/samba/ncalrpc",
    "/var/lib/samba/*.tdb", "/var/lib/samba/private/*.tdb", "/var/cache/samba/*.tdb",
]
#: the source name of every tmpfs and overlay the isolation mounts (lab/hostpaths.py)
MOUNT_TAG = "v6gate-"


def daemon_files() -> list[str]:
    """Files in host paths that a lab daemon wrote (should be none)."""
    return sorted({p for g in DAEMON_FILES for p in glob.glob(g) if os.path.lexists(p)})


def lab_mounts(mountinfo: str = "/proc/self/mountinfo") -> list[str]:
    """Mount points of the lab's private tmpfs visible in this mount namespace (should be none)."""
    out = []
    try:
        with open(mountinfo) as f:
            for line in f:
                fields = line.split()
                sep = fields.index("-")
                if fields[sep + 2].startswith(MOUNT_TAG):
                    out.append(fields[4])
    except (OSError, ValueError, IndexError):
        return out
    return out
