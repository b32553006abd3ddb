"""Storage servers of the lab DUT (area ``storage``) and the client node.

* ``tgt``: the tgtd iSCSI target with one LUN (a sparse file in the lab's work
  directory), its portal on ``[::]:3260`` (the connection's own address is
  what SendTargets reports).
* ``nfs-ganesha``: NFSv3 and NFSv4.x from one VFS export, with its own
  rpcbind (NFSv3 needs one; rpcbind keeps its socket in /run).
* ``samba``: smbd (SMB 2/3) with multichannel on, so that it answers
  FSCTL_QUERY_NETWORK_INTERFACE_INFO with the DUT's interface addresses.
* ``storage-client`` (optional, on the peer node): the peer's kernel stack
  comes alive with a static IPv6 address and no IPv4, for the real clients
  (libiscsi, libnfs, smbclient) the storage checks run.

Host paths (lab-notes §8): every daemon runs in a private mount namespace
(``lab/hostpaths.py``, the lab's one isolation helper) with a tmpfs over
/run (tgtd's control socket, rpcbind's socket and state, ganesha's
/run/ganesha, samba's /run/samba) and over the other host directories it
writes (samba's /var/lib, /var/cache and /var/log directories), and
/var/lib/nfs bound to a directory of the lab; a mount point the host lacks
is made in a private overlay, never on the host.  Stopping a service kills
its process group (tgtd ignores SIGTERM while targets exist); the private
mounts vanish with the processes.
"""

from __future__ import annotations

import os
import shlex
import sys
import time

from ...errors import LabError
from ...paths import ROOT
from ...util.hostpaths import PrivatePaths
from ...util.proc import run
from ..daemon import Daemon
from . import Service, service
from .farpath import FarPath
from .perf import PerfPeer

#: host directories samba writes besides /run/samba, hidden behind a tmpfs in its private mount namespace
SAMBA_DIRS = ("/var/lib/samba", "/var/cache/samba", "/var/log/samba")
IQN_PREFIX = "iqn.2026-11.test.v6gate"


def _wait_for(pred, timeout: float, what: str, daemon: Daemon) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if not daemon.alive():
            raise LabError(f"{what}: {daemon.name} exited at start: {daemon.log_tail()}")
        if time.monotonic() > deadline:
            raise LabError(f"{what}: not ready after {timeout:g} s ({daemon.name} log: {daemon.log_tail()})")
        time.sleep(0.02)


def listening(ns: str, port: int, proto: str = "tcp") -> bool:
    flag = "-t" if proto == "tcp" else "-u"
    cp = run(["ss", "-H", "-l", "-n", flag, f"sport = :{port}"], ns=ns, check=False, what="ss")
    return bool(cp.stdout.strip())


class _StorageService(Service):
    """A daemon in the DUT's namespace and its own mount namespace."""

    def dir(self) -> str:
        d = self.lab.workdir / f"{self.node}-{self.sid}"
        d.mkdir(parents=True, exist_ok=True)
        return str(d)

    def private(self, run_dirs: tuple[str, ...] = ()) -> PrivatePaths:
        """The daemon's private mounts: a tmpfs over /run (with ``run_dirs`` made
        in it) and the lab's work directory kept visible."""
        return (PrivatePaths(self.lab.workdir / f"{self.node}-{self.sid}-private")
                .tmpfs("/run", mkdirs=run_dirs).keep(self.lab.workdir))

    def write_helpers(self) -> None:
        """``{lab_dir}/<node>-<id>-exec CMD...`` runs CMD where the daemon lives
        (the faults use it: fixtures/faults/storage.yaml)."""
        helper = self.lab.workdir / f"{self.node}-{self.sid}-exec"
        helper.write_text(f"#!/bin/sh\nexec nsenter -t {self.daemons[0].pid} -m -n -r -w \"$@\"\n")
        helper.chmod(0o755)

    def in_mount_ns(self, argv: list[str], what: str, check: bool = True):
        """Run a tool where the daemon lives (its network and mount namespaces)."""
        if not self.daemons or not self.daemons[0].alive():
            raise LabError(f"{self.sid}: not running")
        pid = str(self.daemons[0].pid)
        return run(["nsenter", "-t", pid, "-m", "-n", "-r", "-w", *argv], check=check, what=what)


@service("tgt")
class Tgt(_StorageService):
    #: ipv4_portal: also listen on 0.0.0.0 (tgtd's [::] socket is IPv6-only), for the IPv4 arm of the gates
    defaults = {"port": 3260, "portal": "[::]", "iqn": f"{IQN_PREFIX}:lun0", "lun_mb": 64, "tid": 1,
                "ipv4_portal": False}

    def start(self) -> None:
        p = self.params
        d = self.dir()
        backing = os.path.join(d, "lun0.img")
        with open(backing, "wb") as f:
            f.truncate(int(p["lun_mb"]) << 20)
        # a control port unique to this lab (tgtd's socket path is per port; lab-notes §8)
        self.control_port = 1000 + int.from_bytes(os.urandom(2), "big") % 30000  # tgtd accepts up to 32767
        argv = self.private().wrap(["tgtd", "-f", "-C", str(self.control_port), "--iscsi",
                                    f"portal={p['portal']}:{p['port']}"])
        dmn = Daemon("tgtd", argv, self.ns, self.lab.workdir / f"{self.node}-tgtd.log").start()
        self.daemons = [dmn]
        _wait_for(lambda: listening(self.ns, p["port"]), 10, "tgtd", dmn)
        tid = str(p["tid"])
        for args in (["--op", "new", "--mode", "target", "--tid", tid, "-T", p["iqn"]],
                     ["--op", "new", "--mode", "logicalunit", "--tid", tid, "--lun", "1", "-b", backing],
                     ["--op", "bind", "--mode", "target", "--tid", tid, "-I", "ALL"]):
            self.tgtadm(args)
        if p["ipv4_portal"]:
            self.tgtadm(["--op", "new", "--mode", "portal", "--param", f"portal=0.0.0.0:{p['port']}"])
        # the faults reconfigure the running target with the same tool (fixtures/faults/storage.yaml)
        self.write_helpers()
        helper = self.lab.workdir / f"{self.node}-tgtadm"
        helper.write_text(f"#!/bin/sh\nexec nsenter -t {dmn.pid} -m -n -r -w tgtadm -C {self.control_port} --lld iscsi \"$@\"\n")
        helper.chmod(0o755)
        # an impostor discovery service (answers SendTargets with a given portal) for the faults
        impostor = self.lab.workdir / f"{self.node}-iscsi-impostor"
        impostor.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT / 'keywords'))} exec "
                            f"{shlex.quote(sys.executable)} -m v6gate.net.iscsi impostor {p['port']} {p['iqn']} \"$@\"\n")
        impostor.chmod(0o755)

    def tgtadm(self, args: list[str]):
        return self.in_mount_ns(["tgtadm", "-C", str(self.control_port), "--lld", "iscsi", *args],
                                what=f"tgtadm {' '.join(args[:4])}")


@service("nfs-ganesha")
class Ganesha(_StorageService):
    defaults = {"protocols": "3, 4", "bind": "::", "nfs_port": 2049, "mnt_port": 20048, "export": "export",
                "pseudo": "/export"}

    def start(self) -> None:
        p = self.params
        d = self.dir()
        export = os.path.join(d, p["export"])
        state = os.path.join(d, "state")
        for sub in (export, state, os.path.join(d, "varlibnfs")):
            os.makedirs(sub, exist_ok=True)
        conf = self.render("ganesha.conf", f"{self.sid}.conf", protocols=p["protocols"], bind=p["bind"],
                           nfs_port=p["nfs_port"], mnt_port=p["mnt_port"], export=export, pseudo=p["pseudo"],
                           state=state)
        self.export_path = export
        v3 = "3" in str(p["protocols"]).replace(" ", "").split(",")
        # NFSv3 needs an rpcbind; it runs in this private /run (lab-notes: its socket is /run/rpcbind.sock)
        rpcbind = ("rpcbind -f -w & "
                   "i=0; while [ ! -S /run/rpcbind.sock ] && [ $i -lt 200 ]; do sleep 0.02; i=$((i+1)); done; "
                   if v3 else "")
        line = (f"{{ {rpcbind}exec ganesha.nfsd -F -f {shlex.quote(conf)} -L /dev/stdout "
                f"-p /run/ganesha/ganesha.pid; }}")
        private = self.private(("/run/ganesha", "/run/rpcbind") if v3 else ("/run/ganesha",))
        argv = private.bind(os.path.join(d, "varlibnfs"), "/var/lib/nfs").wrap_shell(line)
        dmn = Daemon("ganesha.nfsd", argv, self.ns, self.lab.workdir / f"{self.node}-ganesha.log").start()
        self.daemons = [dmn]
        _wait_for(lambda: listening(self.ns, p["nfs_port"]), 15, "nfs-ganesha", dmn)
        self.write_helpers()


@service("samba")
class Samba(_StorageService):
    defaults = {"share": "v6gate", "netbios": "V6GATEDUT", "interfaces": None, "bind_only": "no"}

    def start(self) -> None:
        p = self.params
        d = self.dir()
        for sub in ("private", "lock", "state", "cache", "run", "ncalrpc", "binddns", "share"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        conf = self.render("smb.conf", f"{self.sid}.conf", netbios=p["netbios"], share=p["share"], dir=d,
                           path=os.path.join(d, "share"), interfaces=p["interfaces"] or self.ifname(),
                           bind_only=p["bind_only"])
        self.conf = conf
        private = self.private(("/run/samba",))
        for sub in SAMBA_DIRS:
            private.tmpfs(sub)
        argv = private.wrap(["smbd", "--foreground", "--no-process-group", "-s", conf, "--debug-stdout"])
        dmn = Daemon("smbd", argv, self.ns, self.lab.workdir / f"{self.node}-smbd.log").start()
        self.daemons = [dmn]
        _wait_for(lambda: listening(self.ns, 445), 15, "smbd", dmn)
        self.write_helpers()


@service("storage-client")
class StorageClient(PerfPeer):
    """The peer's kernel stack for the storage clients: IPv6 only (the
    perf-peer's set-up without its IPv4 address)."""

    defaults = {"ipv6": "2001:db8:1::c/64", "ipv4": None}

    @property
    def address(self) -> str:
        return self.params["ipv6"].split("/")[0]


@service("storage-far-client")
class StorageFarClient(FarPath):
    """A storage client one router hop away behind a lower-MTU path: the lab
    router gets an address on the client's link (``router_ipv6``) and its
    route to the client's prefix carries MTU ``mtu`` (the links stay at
    their MTU, so nothing is lost without a Packet Too Big).  The route's
    MTU is locked (``lock_mtu: true``), as far-path's: the hop then does
    not depend on how a kernel treats an unlocked route MTU for forwarded
    packets (measured on the lab's kernel 6.18, IPv6 forwarding honours both:
    a 1400-octet ping from the DUT got "Packet too big: mtu=1280" either
    way).  Part D of storage.data_reads_back_intact_at_link_mtu needs the
    router's Packet Too Big on the wire (its stimulus); without one it is the
    bench's ERROR, never a PASS.  Stopping it removes the router's
    address (and so the route)."""

    defaults = {"ipv6": "2001:db8:2::c/64", "router_ipv6": "2001:db8:2::1/64", "mtu": 1280, "router": "router",
                "lock_mtu": True, "drop_ptb": False}
