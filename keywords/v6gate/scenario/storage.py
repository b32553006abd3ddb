"""What every storage check shares: where the real clients run, the DUT's
declared storage services, and the session window on the tester's capture.

Clients: the tester's own kernel stays silent (it only crafts packets), so
the clients (libiscsi's tools, libnfs's tools, rpcinfo, smbclient, the
iSCSI discovery speaker in ``net/iscsi.py``) run on a node with a kernel
IPv6 stack on the DUT's link:

* the lab: the peer node, brought up IPv6-only by its ``storage-client``
  service, with the link in ``hub`` mode so that the tester's capture holds
  every frame of the session (the pcap of the check);
* a real target: ``extensions.storage.client`` in the target file (a
  namespace on this host, or the host itself; see example-storage.yaml).
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ..core.context import CheckContext, NotApplicable
from ..core.control import NotSupported
from ..core.verdict import Deviation
from ..errors import BenchError
from ..net import match as M
from ..net import v6only as V
from ..paths import ROOT
from ..util.hostpaths import PrivatePaths
from ..util.proc import in_ns, need
from .v6only import ipv4_summary

#: USGv6-style capability label -> the ``protocol`` of a target file's service entry, default port
PROTOCOLS = {"iSCSI": ("iscsi", 3260), "NFS": ("nfs", 2049), "SMB": ("smb", 445), "NVMe-TCP": ("nvme-tcp", 4420)}
#: host directories smbclient writes besides /run/samba (lab-notes: /run/samba/gencache.tdb)
SMB_CLIENT_DIRS = ("/var/lib/samba", "/var/cache/samba")
LAB_CLIENT_SERVICES = {"storage-client", "hub"}


@dataclass
class Client:
    netns: str | None
    address: str | None
    workdir: Path

    def run(self, argv: list[str], timeout: float, env: dict | None = None) -> tuple[int | None, str, str]:
        """(exit code or None on timeout, stdout, stderr) of a client program."""
        need(argv[0])
        if self.netns and not os.path.exists(f"/run/netns/{self.netns}"):
            raise BenchError(f"the storage client's namespace {self.netns!r} does not exist (extensions.storage.client"
                             ".netns in the target file)")
        try:
            cp = subprocess.run(in_ns(self.netns, argv), capture_output=True, text=True, timeout=timeout,
                                env={**os.environ, **(env or {})})
        except subprocess.TimeoutExpired as exc:
            return None, _text(exc.stdout), _text(exc.stderr)
        return cp.returncode, cp.stdout, cp.stderr

    def python(self, module: str, args: list[str], timeout: float) -> tuple[int | None, str, str]:
        pypath = os.pathsep.join([str(ROOT / "keywords"), os.environ.get("PYTHONPATH", "")])
        return self.run([sys.executable, "-m", module, *args], timeout, env={"PYTHONPATH": pypath})

    def smbclient(self, args: list[str], timeout: float) -> tuple[int | None, str, str]:
        return self.run(self.smbclient_argv(args), timeout)

    def smbclient_argv(self, args: list[str]) -> list[str]:
        """smbclient in a private mount namespace: its gencache and state stay off the host."""
        private = PrivatePaths(self.workdir / "smbclient-private").tmpfs("/run", mkdirs=("/run/samba",))
        for sub in SMB_CLIENT_DIRS:
            private.tmpfs(sub)
        return private.keep(self.workdir).wrap(["smbclient", *args])


def ask(t: CheckContext, cl: Client, module: str, args: list[str], what: str, settle: float = 0.2) -> tuple[dict, float]:
    """Run a protocol speaker of ``net/`` (``python -m MODULE ARGS``, see
    ``net/speaker.py``) on the client node: (its JSON answer, the session's
    start on the tester's clock).  A speaker still waiting on the DUT's
    socket when its time is up is the DUT's doing; no answer otherwise is the
    bench's fault."""
    since = t.now()
    limit = max(10.0, 5 * t.reply_timeout)
    rc, out, err = cl.python(module, args, limit)
    t.wait(settle)  # the session's last frames reach the capture
    if rc is None:
        return {"error": f"timed out after {limit:g} s waiting for the DUT", "dut_fault": True}, since
    try:
        return json.loads(out.strip().splitlines()[-1]), since
    except (ValueError, IndexError):
        raise BenchError(f"the {what} gave no answer (exit {rc}): {err.strip()[-300:]}") from None


def speaker_error(answer: dict, msg: str) -> Exception:
    """A speaker's error, to raise: the check's FAIL when the DUT caused it
    (``dut_fault``: Deviation), else the bench's ERROR."""
    return Deviation(msg) if answer.get("dut_fault") else BenchError(msg)


def _text(b) -> str:
    if b is None:
        return ""
    return b.decode(errors="replace") if isinstance(b, bytes) else b


def client(t: CheckContext, far: bool = False) -> Client:
    """The node the clients run on (see the module docstring); ``far``: the
    one behind a lower-MTU path (lab: storage-far-client; a real bench:
    extensions.storage.low_mtu_path.client)."""
    kind = "storage-far-client" if far else "storage-client"
    try:
        return Client(*t.session.client_node(kind, also=LAB_CLIENT_SERVICES))
    except NotSupported:
        pass  # the target file names the client nodes
    if far:
        ext = (settings(t.target).get("low_mtu_path") or {}).get("client")
        if not isinstance(ext, dict):
            raise NotApplicable("the target file names no client behind a lower-MTU path "
                                "(extensions.storage.low_mtu_path.client: {netns, interface, address})")
    else:
        ext = settings(t.target).get("client")
    if not isinstance(ext, dict):
        raise NotApplicable("the target file names no storage client node (extensions.storage.client: "
                            "{netns: NS or null, interface: IF, address: A}); see fixtures/targets/example-storage.yaml")
    work = Path(tempfile.mkdtemp(prefix="v6gate-storage-"))
    t.defer(lambda: __import__("shutil").rmtree(work, ignore_errors=True))
    return Client(ext.get("netns"), ext.get("address"), work)


def settings(target) -> dict:
    ext = target.extensions.get("storage") or {}
    if not isinstance(ext, dict):
        raise BenchError(f"{target.source}: extensions.storage must be a mapping (see example-storage.yaml)")
    return ext


def service(t: CheckContext, capability: str, having: str | None = None) -> dict:
    """The target's declared service for a storage capability (services with
    ``protocol``, then extensions.storage.services), or its default port;
    ``having``: the first entry that declares that field (SKIP when none does)."""
    if not t.target.claims(capability):
        raise NotApplicable(f"the target does not claim {capability}")
    proto, port = PROTOCOLS[capability]
    declared = [s for s in [*t.target.services, *(settings(t.target).get("services") or [])]
                if isinstance(s, dict) and s.get("protocol") == proto]
    if having:
        declared = [s for s in declared if s.get(having)]
        if not declared:
            raise NotApplicable(f"the target's {capability} services declare no {having} (services[].{having}; "
                                "see fixtures/targets/example-storage.yaml)")
    return {"port": port, **(declared[0] if declared else {"name": proto})}


def endpoint(t: CheckContext, capability: str, far: bool = False, having: str | None = None) -> tuple[str, dict, int, Client]:
    """(the service's address, its declared service, the service's port, the client node): the
    address the entry names (``address``: an endpoint that is a device of its own, as the lab's
    VM target), else the DUT's global address."""
    svc = service(t, capability, having)
    addr = str(svc["address"]) if svc.get("address") else dut_address(t)
    return addr, svc, int(svc["port"]), client(t, far)


def dut_address(t: CheckContext) -> str:
    """The DUT's global address the clients talk to (the precondition of every storage check).  A DUT
    without one is NOT_JUDGED ``global-address`` (judged by slaac.global_address_is_formed_and_probed),
    not FAIL or ERROR: ``global_address`` raises that itself (tests/lab/test_storage_preconditions.py)."""
    return str(t.dut.global_address())


def lab_export(t: CheckContext) -> str:
    """The lab's NFS export path (the NFSv3 MOUNT path), when the target file gives none."""
    export = t.session.service_setting("nfs-ganesha", "export_path")
    if not export:
        raise NotApplicable("the target's NFS service declares no export (services[].export) for NFSv3")
    return export


def url_host(addr: str) -> str:
    return f"[{addr}]" if ":" in addr else addr


# -- the session on the wire ------------------------------------------------------------------
def session_frames(t: CheckContext, since: float, dut: str, port: int) -> list:
    """IPv6 frames of the session between any client and the DUT's service port."""
    def is_session(p) -> bool:
        if IPv6 not in p:
            return False
        ip = p[IPv6]
        l4 = p[TCP] if TCP in p else p.getlayer(UDP)
        return l4 is not None and dut in (ip.src, ip.dst) and port in (l4.sport, l4.dport)

    return t.collect(is_session, 0, since=since, any_source=True)


def ipv4_problem(t: CheckContext, since: float, mac: str | None = None) -> str | None:
    """The DUT's IPv4 frames on the link in the window (RFC 8925 DHCPv4
    excepted), as a problem line; ``mac``: those of the device with that
    MAC instead (an endpoint of its own, e.g. a separate NVMe/TCP target)."""
    if mac is None:
        bad, firsts, _ = ipv4_summary(t, since)
    else:
        frames = t.collect(lambda p: Ether in p and p[Ether].src == mac, 0, since=since, any_source=True)
        bad, firsts = V.summarize_ipv4(frames, since)
        if bad:
            t.measure("ipv4_frames", dict(bad))
    if not bad:
        return None
    counts = ", ".join(f"{n} {k}" for k, n in bad.items())
    return f"IPv4 on the wire during the session ({counts}); first: {'; '.join(firsts[:2])}"


def classify(addr: str, link_is_global: bool = True) -> str | None:
    """What is wrong with an address a storage server hands out for use on
    this link (None: a global IPv6 address)."""
    try:
        ip = ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return None  # a name: resolved by the client, judged elsewhere
    if ip.version == 4:
        return "an IPv4 address"
    if ip.ipv4_mapped:
        return "an IPv4-mapped address"
    if ip.is_loopback:
        return "the loopback address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_link_local and link_is_global:
        return "a link-local address (not usable off its link, and ambiguous without a zone)"
    if ip.is_multicast:
        return "a multicast address"
    return None


def dut_frames_summary(t: CheckContext, since: float, dut: str, limit: int = 4) -> str:
    def wanted(p) -> bool:  # its Neighbor Discovery aside
        return IPv6 in p and p[IPv6].src == dut and not (
            p[IPv6].nh == 58 and 133 <= getattr(p[IPv6].payload, "type", 0) <= 137)

    frames = t.collect(wanted, 0, since=since, any_source=True)
    if not frames:
        return "the DUT sent nothing but Neighbor Discovery from that address"
    return "the DUT sent: " + "; ".join(f.pkt.summary() for f in frames[:limit])


__all__ = ["Client", "M", "classify", "client", "dut_address", "endpoint", "ipv4_problem", "service", "session_frames"]
