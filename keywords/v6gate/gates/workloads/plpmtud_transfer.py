"""What a black hole costs a PLPMTUD sender (RFC 4821), against an open path.

One sample is one pair of bulk transfers, interleaved in ABBA order (which
arm leads alternates from sample to sample): the node behind the lab's
narrower path (area plpmtud, ``extensions.plpmtud.client``) sends ``octets``
to the DUT's TCP echo and reads them back, once from its address behind the
1280-octet, Packet-Too-Big-dropping hop and once from its address on the
open path (``open_address``: the same node at the full MTU).  ``extra_s``
is the black-holed transfer's time minus the open one's: the price of
finding the path MTU with no ICMPv6.  A transfer that does not complete
within ``timeout_s`` counts as ``timeout_s`` (a DUT that never probes is a
very slow sample, not a hang); an open transfer that does not complete is
the bench's (BenchError), since the open path needs no PMTU discovery."""

from __future__ import annotations

from ...core.context import CheckContext, NotApplicable
from ...errors import BenchError
from ...scenario import plpmtud as PL
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload


def plpmtud_transfer(t: CheckContext, prof: GateProfile, i: int) -> Measure:
    p = prof.params
    octets, timeout = int(p.get("octets", PL.TRANSFER_OCTETS)), float(p.get("timeout_s", PL.DEFAULT_TIMEOUT_S))
    netns, black, _ = PL.settings(t)
    client = ((t.target.extensions or {}).get("plpmtud") or {}).get("client") or {}
    open_src = client.get("open_address")
    if not open_src:
        raise NotApplicable("the target names no open path to the same node (extensions.plpmtud.client."
                            "open_address: its address on a path at the link's full MTU)")
    dut, port = t.dut.global_address(), PL.echo_port(t)
    order = ("open", "black") if i % 2 else ("black", "open")
    seconds, raw = {}, {"order": list(order)}
    for arm in order:
        answer = PL.transfer(netns, dut, port, octets, timeout, open_src if arm == "open" else black)
        raw[arm] = {k: answer.get(k) for k in ("received", "seconds", "error")}
        if answer.get("complete"):
            seconds[arm] = float(answer["seconds"])
        elif arm == "open":
            raise BenchError(f"the transfer over the open path did not complete ({answer.get('error')}): the open "
                             "path needs no PMTU discovery, so the bench is broken")
        else:
            seconds[arm] = timeout
    return Measure({"extra_s": round(seconds["black"] - seconds["open"], 4), "black_s": seconds["black"],
                    "open_s": seconds["open"]}, seconds["black"] + seconds["open"], 0.0, raw)


register_workload(Workload(
    "plpmtud_transfer", compare=frozenset({"target"}),
    metrics={"extra_s": ("s", False), "black_s": ("s", False), "open_s": ("s", False)},
    params=frozenset({"octets", "timeout_s"}), sample=plpmtud_transfer))
