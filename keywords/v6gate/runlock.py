"""One run per bench: locks on what a run drives.

Two ``v6gate run``s on the same tester interface, the same lab or the same
DUT would send into each other's windows (RAs, prefixes, neighbour games)
and judge each other's packets: the second is refused with one line that
names the first (its pid, run id and directory; exit 3, nothing was run).
Two runs on different DUTs proceed.

A lock is an ``flock`` on a file under ``STATE_DIR/locks/`` (``/run``: a
tmpfs, empty after a reboot).  The kernel drops it when its owner ends, even
by SIGKILL, so a dead owner's lock is never in the way: the next run takes
it over and says whose it was (the file still names the dead owner).  A
clean release removes the file while it still holds the lock; a run that
opened the file before it was removed finds, once it has the lock, that the
path no longer names the inode it locked, and opens the path again (so two
runs never hold two inodes of one lock, and /run keeps no file per run).

What is locked (``keys_for``): the tester interface (namespace, name); the
DUT by its MAC and by each address the target gives it (on the tester's
side: the same MAC in two separate lab namespaces is two DUTs); the DUT's
management host (control.ssh.host); the lab a tester namespace belongs to
(``lab down`` waits for nobody: it is refused while a run uses the lab).

``v6gate repeat`` holds the locks for all its runs; each child run sees
that its parent holds them (``V6GATE_LOCKS_OF``) and proceeds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BenchError
from .paths import STATE_DIR

LOCKS_DIR = STATE_DIR / "locks"
INHERIT_ENV = "V6GATE_LOCKS_OF"


class Busy(BenchError):
    """Another run holds a lock this run needs (one line naming it)."""


@dataclass
class Held:
    """The locks a run holds; ``release`` (or the end of the process) lets them go."""

    keys: list[str] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # locks taken over from dead owners, one line each

    def release(self) -> None:
        for key, fd in zip(self.keys, self.fds):
            with contextlib.suppress(OSError):
                if _names(_path(key), fd):
                    os.unlink(_path(key))  # under the lock: a waiter on this inode opens the path again
                fcntl.flock(fd, fcntl.LOCK_UN)
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()
        self.keys.clear()

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def keys_for(target) -> list[tuple[str, str]]:
    """(what a person calls it, lock key) of everything a run against ``target`` drives."""
    lab_section = getattr(target, "lab", None)
    if lab_section is not None and not lab_section.get("external_dut"):
        # a lab target whose DUT the lab builds: the run makes its tester, link and DUT afresh in namespaces of
        # its own (its eth0 is not this machine's), so it shares nothing with another run (a campaign's lab DUTs)
        return []
    ns = target.tester_netns or "-"
    where = f" in namespace {target.tester_netns}" if target.tester_netns else ""
    out = [(f"tester interface {target.tester_interface}{where}", f"tester:{ns}:{target.tester_interface}")]
    if target.dut_mac and target.dut_mac != "discover":
        out.append((f"the DUT {target.dut_mac}{where}", f"dut-mac:{ns}:{target.dut_mac}"))
    for a in target.dut_global:
        out.append((f"the DUT at {a}{where}", f"dut-addr:{ns}:{a}"))
    ssh = target.control.get("ssh") or {}
    if target.control.get("adapter") == "ssh" and ssh.get("host"):
        out.append((f"the DUT managed at {ssh['host']}", f"dut-ssh:{ssh['host']}:{ssh.get('port', 22)}"))
    lab = lab_of_namespace(target.tester_netns)
    if lab:
        out.append((f"lab {lab}", f"lab:{lab}"))
    return out


def lab_of_namespace(ns: str | None) -> str | None:
    """The v6gate lab a namespace belongs to (``v6g<name>-<node>``), if any."""
    from .lab.registry import PREFIX

    if ns and ns.startswith(PREFIX) and "-" in ns:
        return ns.rsplit("-", 1)[0]
    return None


def _path(key: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)[:80]
    return LOCKS_DIR / f"{slug}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.lock"


def _names(path: Path, fd: int) -> bool:
    """``path`` still names the inode ``fd`` has open (a released lock's file is removed)."""
    try:
        st, mine = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _open_locked(path: Path) -> tuple[int, bool]:
    """(fd of ``path``, whether this process holds its flock), on the inode the path names once locked."""
    for _ in range(50):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                os.close(fd)
                raise
            return fd, False
        if _names(path, fd):
            return fd, True
        os.close(fd)  # its holder released and removed it between our open and our lock: open the path again
    raise OSError(errno.EAGAIN, f"{path} kept changing under the lock")


def _owner_of(fd: int) -> dict:
    """What the lock file says about its holder ({} while the holder is still writing it)."""
    for _ in range(20):
        with contextlib.suppress(OSError, ValueError):
            data = os.pread(fd, 4096, 0)
            if data:
                return json.loads(data)
        time.sleep(0.02)
    return {}


def _start_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def describe(owner: dict) -> str:
    if not owner:
        return "another v6gate process (it is still writing its lock)"
    return (f"v6gate {owner.get('command', 'run')} {owner.get('run_id', '?')} (pid {owner.get('pid', '?')}, "
            f"since {owner.get('since', '?')}{', ' + str(owner['run_dir']) if owner.get('run_dir') else ''})")


def _inherited(owner: dict) -> bool:
    """The lock is our parent's (v6gate repeat), which told us so."""
    mine = os.environ.get(INHERIT_ENV)
    return bool(mine) and str(owner.get("pid")) == mine == str(os.getppid())


def acquire(keys: list[tuple[str, str]], *, run_id: str = "", run_dir: str | Path | None = None,
            command: str = "run") -> Held:
    """Take every lock, in a fixed order, without waiting; Busy (one line naming the holder) if one is held."""
    held = Held()
    me = {"pid": os.getpid(), "start": _start_of(os.getpid()), "run_id": run_id, "command": command,
          "run_dir": str(run_dir) if run_dir else None, "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        LOCKS_DIR.mkdir(parents=True, exist_ok=True)
        for label, key in sorted(set(keys), key=lambda k: k[1]):
            fd, mine = _open_locked(_path(key))
            if not mine:
                owner = _owner_of(fd)
                os.close(fd)
                if _inherited(owner):
                    continue
                raise Busy(f"{label} is in use by {describe(owner)}; wait for it to end, or stop it "
                           f"(kill {owner.get('pid', '<pid>')})") from None
            before = {}
            with contextlib.suppress(OSError, ValueError):
                data = os.pread(fd, 4096, 0)
                before = json.loads(data) if data else {}
            if before.get("pid") and before.get("pid") != me["pid"]:
                held.notes.append(f"{label}: took over the lock of {describe(before)}, which is gone")
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({**me, "key": key}).encode(), 0)
            held.fds.append(fd)
            held.keys.append(key)
    except Busy:
        held.release()
        raise
    except OSError as exc:
        held.release()
        raise BenchError(f"cannot take the run's locks in {LOCKS_DIR} ({exc.strerror or exc}); "
                         "check that directory is writable") from None
    return held


def holder(key: str) -> dict | None:
    """Who holds ``key`` now (None: nobody)."""
    try:
        fd = os.open(_path(key), os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return _owner_of(fd) or {"pid": "?"}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
