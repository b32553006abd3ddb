"""The repairer: a lab fault that makes the DUT's own kernel skip a validity
test, by repairing the invalid message in front of it.

Where an impostor *answers as* the DUT, the repairer changes what the DUT
*receives*: an NFQUEUE rule in the DUT namespace hands incoming packets of
one protocol to this thread, a repair rule turns an invalid message into the
valid one it imitates (hop limit, checksum, code, a zero-length option, an
atomic or split fragment, ...), and the kernel then processes it as a stack
without that validity test would.  The consequences (an address not
assigned, a router used, a hop limit applied) are the real kernel's.

Rules live in ``v6gate/lab/repair_rules/`` and are named by faults:

    dut_skips_ra_validation:
      reason: ...
      repair: {rule: nd_validity, params: {types: [134]}}

With ``direction: out`` the rule sees what the DUT's kernel sends instead
(the OUTPUT chain) and changes it on the way out: a stack that builds a
message wrongly, for checks that judge the DUT's own messages.  With
``direction: both`` it sees both (one queue), for a rule that rewrites an
answer by what was asked; a rule that accepts a ``repairer`` keyword gets
the Repairer, whose ``state`` dict it may keep between packets (a stack's
memory: what it already sent, the last Query).

A rule gets the IPv6 packet (bytes, no link-layer header), the DUT's
addresses and its params, and returns the bytes to deliver instead, None to
deliver it unchanged, or ``DROP`` to hold it back (a fragment the rule keeps
for reassembly).  The NFQUEUE rule (ip6tables-legacy, xt_NFQUEUE; the
nftables queue expression is not in every kernel) is removed with the DUT's
namespace when the lab rebuilds it.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import select
import socket
import struct
import threading
from collections.abc import Callable

from ..errors import LabError
from ..util.netns import netns
from ..util.proc import run

RULES: dict[str, Callable] = {}
DROP = b""

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS = 1, 2
NFQA_PACKET_HDR, NFQA_VERDICT_HDR, NFQA_PAYLOAD = 1, 2, 10
NFQNL_CFG_CMD_BIND, NFQNL_COPY_PACKET = 1, 2
NF_DROP, NF_ACCEPT = 0, 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
QUEUE_NUM = 6


def repair(name: str):
    def register(func):
        RULES[name] = func
        return func

    return register


def _load_rules() -> None:
    from . import repair_rules

    for mod in pkgutil.iter_modules(repair_rules.__path__):
        importlib.import_module(f"{repair_rules.__name__}.{mod.name}")


def _nla(atype: int, data: bytes) -> bytes:
    n = 4 + len(data)
    return struct.pack("=HH", n, atype) + data + b"\0" * ((4 - n % 4) % 4)


def _msg(msg: int, flags: int, attrs: list[bytes], seq: int = 0) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(QUEUE_NUM)) + b"".join(attrs)
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, seq, 0) + body


def _attrs(data: bytes, off: int, end: int) -> dict[int, bytes]:
    out = {}
    while off + 4 <= end:
        alen, atype = struct.unpack("=HH", data[off:off + 4])
        if alen < 4:
            break
        out[atype & 0x7FFF] = data[off + 4:off + alen]
        off += (alen + 3) & ~3
    return out


class Repairer:
    def __init__(self, ns: str, iface: str, spec: dict, dut: dict):
        _load_rules()
        name = spec.get("rule")
        if name not in RULES:
            raise LabError(f"unknown repair rule {name!r}; known: {', '.join(sorted(RULES))}")
        self.rule = RULES[name]
        self.params = dict(spec.get("params") or {})
        if "repairer" in inspect.signature(self.rule).parameters:
            self.params["repairer"] = self
        self.state: dict = {}
        self.direction = spec.get("direction", "in")
        self.protocol = spec.get("protocol", "icmpv6")  # the packets queued to the rule (icmpv6, tcp, udp)
        if self.direction not in ("in", "out", "both"):
            raise LabError(f"repair direction {self.direction!r}: use 'in' (what the DUT receives), 'out' or 'both'")
        self.ns, self.iface, self.dut = ns, iface, dut
        self.sock: socket.socket | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.repaired = 0
        self.errors = 0

    def start(self) -> Repairer:
        with netns(self.ns):
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        s.bind((0, 0))
        self.sock = s
        self._config(_nla(NFQA_CFG_CMD, struct.pack("=BxH", NFQNL_CFG_CMD_BIND, 0)))
        self._config(_nla(NFQA_CFG_PARAMS, struct.pack("!IB", 0xFFFF, NFQNL_COPY_PACKET)))
        hooks = {"in": [["PREROUTING", "1", "-i"]], "out": [["OUTPUT", "1", "-o"]],
                 "both": [["PREROUTING", "1", "-i"], ["OUTPUT", "1", "-o"]]}[self.direction]
        for where in hooks:
            rule = ["-t", "mangle", "-I", *where, self.iface, "-p", self.protocol,
                    "-j", "NFQUEUE", "--queue-num", str(QUEUE_NUM), "--queue-bypass"]
            run(["ip6tables-legacy", *rule], ns=self.ns, what="repair fault (ip6tables-legacy NFQUEUE rule)")
        self._thread = threading.Thread(target=self._loop, name="lab-repairer", daemon=True)
        self._thread.start()
        return self

    def _config(self, attr: bytes) -> None:
        self.sock.send(_msg(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, [attr]))
        ack = self.sock.recv(4096)
        if len(ack) >= 20:
            err = struct.unpack("=i", ack[16:20])[0]
            if struct.unpack("=H", ack[4:6])[0] == 2 and err != 0:  # NLMSG_ERROR
                raise LabError(f"repair fault: NFQUEUE configuration refused (errno {-err})")

    def _loop(self) -> None:
        sock = self.sock
        while not self._stop.is_set():
            try:
                r, _, _ = select.select([sock], [], [], 0.2)
                if not r:
                    continue
                data = sock.recv(65535)
            except OSError:
                return
            off = 0
            while off + 16 <= len(data):
                mlen, mtype = struct.unpack("=IH", data[off:off + 6])
                if mlen < 16:
                    break
                if mtype == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                    self._packet(_attrs(data, off + 20, off + mlen))
                off += (mlen + 3) & ~3

    def _packet(self, attrs: dict[int, bytes]) -> None:
        hdr, payload = attrs.get(NFQA_PACKET_HDR), attrs.get(NFQA_PAYLOAD, b"")
        if not hdr:
            return
        pid = struct.unpack("!I", hdr[:4])[0]
        try:
            out = self.rule(payload, self.dut, **self.params)
        except Exception:
            self.errors += 1
            out = None
        verdict = [_nla(NFQA_VERDICT_HDR, struct.pack("!II", NF_DROP if out == DROP else NF_ACCEPT, pid))]
        if out:
            verdict.append(_nla(NFQA_PAYLOAD, out))
        if out is not None:  # rewritten, or held back (DROP): either changes what the kernel gets or sends
            self.repaired += 1
        with contextlib.suppress(OSError):
            self.sock.send(_msg(NFQNL_MSG_VERDICT, NLM_F_REQUEST, verdict))

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(1)
        if self.sock:
            self.sock.close()
            self.sock = None
