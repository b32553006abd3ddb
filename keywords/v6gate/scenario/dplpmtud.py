"""Datagram PLPMTUD (RFC 8899) through QUIC (RFC 9000 §14.3): the target's
settings, one transfer from the DUT's QUIC endpoint to the node behind the
narrower path, and the judgement of the DUT's datagram sizes on the wire.

Target settings (``extensions.plpmtud``; ``v6gate validate`` checks them):

* ``quic: {port, alpn, path, octets}``: the DUT's QUIC endpoint that claims
  DPLPMTUD.  The tester's client (``v6gate-quicpeer``, quic-go) speaks the
  QUIC interop runner's ``hq-interop`` (HTTP/0.9 over QUIC: ``GET <path>``
  on one stream, the answer until the stream ends), which most QUIC stacks'
  interop servers serve; ``octets`` is the answer's size (default: the
  number in a path like ``/4194304``, which the lab's server answers with
  that many octets).
* ``datagram_client: {netns, address, path_mtu}``: a node this host controls
  behind a hop of ``path_mtu`` octets (below the DUT's link MTU, above 1280)
  whose router drops every Packet Too Big; the lab fills it in (its
  ``far-path`` service ``dplpmtud-path``, a 1400-octet hop).

Sizes are IPv6 packet sizes (the pcap's), as the path MTU is.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ..core.context import CheckContext
from ..errors import BenchError, NotApplicable, TargetFileError
from ..net import quicpeer
from ..util.proc import in_ns
from .plpmtud import client_answer

BASE_PLPMTU = 1280  # RFC 8899 §5.1.2 for IPv6 (the IPv6 minimum link MTU), as an IPv6 packet size
START_FLIGHT = 3  # the DUT's first datagrams (its handshake flight), which show the size it starts at
SETTLED_MIN = 10  # datagrams after the last one above the path MTU that show the size the DUT settled at
DEFAULT_TIMEOUT_S = 30.0
_ALPN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,63}")
_PATH = re.compile(r"/[A-Za-z0-9._~/-]{0,199}")
_NETNS = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Endpoint:
    port: int
    alpn: str
    path: str
    octets: int


@dataclass(frozen=True)
class Client:
    netns: str | None
    address: str
    path_mtu: int


def _int(value, lo: int, hi: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        return None
    return value


def parse(raw, source) -> tuple[Endpoint | None, Client | None, float]:
    """(the DUT's QUIC endpoint or None, the datagram client or None, the time limit); TargetFileError naming the
    field for a bad value."""
    def bad(field: str, problem: str, fix: str):
        return TargetFileError(source, f"extensions.plpmtud.{field}", problem, fix)

    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise bad("", "is not a mapping", "write {quic: {port, alpn, path}, datagram_client: {...}}")
    timeout = raw.get("transfer_timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 600:
        raise bad("transfer_timeout_s", f"{timeout!r} is not valid", "give seconds in [1, 600]")
    endpoint = None
    q = raw.get("quic")
    if q is not None:
        if not isinstance(q, dict):
            raise bad("quic", "is not a mapping", "write quic: {port: 4433, alpn: hq-interop, path: /4194304}")
        unknown = sorted(set(q) - {"port", "alpn", "path", "octets"})
        if unknown:
            raise bad(f"quic.{unknown[0]}", "is not a known field", "use port, alpn, path and octets")
        port = _int(q.get("port"), 1, 65535)
        if port is None:
            raise bad("quic.port", f"{q.get('port')!r} is not a UDP port", "give the port in [1, 65535]")
        alpn = q.get("alpn", "hq-interop")
        if not isinstance(alpn, str) or not _ALPN.fullmatch(alpn):
            raise bad("quic.alpn", f"{alpn!r} is not valid", "give the ALPN id the endpoint serves, such as "
                                                             "hq-interop (letters, digits, . _ / -)")
        path = q.get("path", "/4194304")
        if not isinstance(path, str) or not _PATH.fullmatch(path):
            raise bad("quic.path", f"{path!r} is not valid", "give the path to request, such as /4194304 (/ then "
                                                             "letters, digits, . _ ~ / -)")
        octets = q.get("octets")
        if octets is None and path[1:].isdigit():
            octets = int(path[1:])
        if _int(octets, 1 << 16, 1 << 30) is None:
            raise bad("quic.octets", f"{octets!r} is not valid", "give the size of the answer to the path, in "
                                                                 "[65536, 1073741824] octets (a few MiB is enough)")
        endpoint = Endpoint(port, alpn, path, int(octets))
    client = None
    c = raw.get("datagram_client")
    if c is not None:
        if not isinstance(c, dict):
            raise bad("datagram_client", "is not a mapping", "write datagram_client: {netns, address, path_mtu}")
        try:
            address = str(ipaddress.IPv6Address(str(c.get("address"))))
        except ValueError:
            raise bad("datagram_client.address", f"{c.get('address')!r} is not an IPv6 address",
                      "give the client's address behind the narrower path") from None
        netns = c.get("netns")
        if netns is not None and (not isinstance(netns, str) or not _NETNS.fullmatch(netns)):
            raise bad("datagram_client.netns", f"{netns!r} is not valid", "give a network namespace name or null")
        mtu = _int(c.get("path_mtu"), BASE_PLPMTU + 1, 9216)
        if mtu is None:
            raise bad("datagram_client.path_mtu", f"{c.get('path_mtu')!r} is not valid",
                      f"give the narrower hop's MTU in octets, above {BASE_PLPMTU} and below the DUT's link MTU")
        client = Client(netns, address, mtu)
    return endpoint, client, float(timeout)


def validate_extension(path, raw) -> None:
    """Target loading's hook (core/target.py EXTENSION_CHECKS)."""
    parse(raw, path)


def settings(t: CheckContext) -> tuple[Endpoint, Client, float]:
    endpoint, client, timeout = parse((t.target.extensions or {}).get("plpmtud"), t.target.source)
    if endpoint is None:
        raise NotApplicable("the target names no DPLPMTUD endpoint of the DUT (extensions.plpmtud.quic: {port, "
                            "alpn, path}): a QUIC endpoint is the datagram transport this check drives")
    if client is None:
        raise NotApplicable("the target names no node behind a narrower, Packet-Too-Big-dropping path for datagrams "
                            "(extensions.plpmtud.datagram_client: {netns, address, path_mtu}; the lab fills it in)")
    return endpoint, client, timeout


def transfer(client: Client, dut: str, endpoint: Endpoint, timeout_s: float) -> dict:
    """One request from the client node to the DUT's QUIC endpoint (v6gate-quicpeer client); its JSON answer:
    {received, complete, seconds, error}.  BenchError when the client itself could not run."""
    argv = in_ns(client.netns, [quicpeer.binary(), "client", "-connect", f"[{dut}]:{endpoint.port}", "-alpn",
                                endpoint.alpn, "-path", endpoint.path, "-expect", str(endpoint.octets),
                                "-local", client.address, "-timeout", f"{timeout_s:g}s"])
    answer = client_answer(argv, timeout_s, "the QUIC client")
    if answer.get("bench_error"):
        raise BenchError(f"the QUIC client could not run: {answer.get('error')}")
    return answer


@dataclass
class Search:
    """What the DUT's datagram sizes show (sizes: IPv6 packet octets, times: seconds from its first datagram)."""
    datagrams: int
    largest: int
    above: list[tuple[float, int]]  # datagrams above the path MTU: probes, which the path dropped
    after: int  # datagrams after the last one above the path MTU
    settled: int | None  # the largest of those: the PLPMTU it settled at
    duration: float
    start: int = 0  # the largest of its first START_FLIGHT datagrams: the size it started at (handshake)


def search(sizes: list[tuple[float, int]], path_mtu: int) -> Search:
    """The DUT's search as the wire shows it, from (time, size) of its datagrams in time order."""
    if not sizes:
        return Search(0, 0, [], 0, None, 0.0)
    t0 = sizes[0][0]
    rel = [(t - t0, n) for t, n in sizes]
    above = [(t, n) for t, n in rel if n > path_mtu]
    last = max((i for i, (_, n) in enumerate(rel) if n > path_mtu), default=-1)
    rest = [n for _, n in rel[last + 1:]]
    return Search(len(rel), max(n for _, n in rel), above, len(rest), max(rest) if rest else None, rel[-1][0],
                  max(n for _, n in rel[:START_FLIGHT]))


def stopped_below(s: Search, path_mtu: int) -> str | None:
    """Why the path could not judge the search, when the DUT did search but its own largest size
    (MAX_PLPMTU, RFC 8899 §5.1.2) is below the path MTU: its datagrams grew past the size it started at and
    none went above the path MTU, so no probe met the black hole.  Such a DUT is not at fault (a search may
    stop at MAX_PLPMTU, §5.2), and nothing showed that it does without Packet Too Big."""
    if s.above or not s.datagrams or s.largest <= s.start:
        return None
    return (f"the DUT's datagrams grew from {s.start} to {s.largest} octets and stopped there, below the path MTU "
            f"{path_mtu}: its search ended at its own MAX_PLPMTU (RFC 8899 §5.1.2), so no probe met the path that "
            f"drops Packet Too Big; set extensions.plpmtud.datagram_client.path_mtu below {s.largest} to judge it")


def judge(s: Search, path_mtu: int) -> tuple[str, list[str]]:
    """(seen, problems) for RFC 8899's search on a path of ``path_mtu`` that drops every Packet Too Big."""
    if s.above:
        sizes = sorted({n for _, n in s.above})
        probes = (f"{len(s.above)} datagram(s) above the path MTU {path_mtu} ({', '.join(map(str, sizes))} octets, "
                  f"from {s.above[0][0]:.3f} s to {s.above[-1][0]:.3f} s; the path dropped them, no Packet Too Big); "
                  + (f"then {s.after} datagram(s), the largest {s.settled} octets (the size it settled at)"
                     if s.settled is not None else "nothing after them"))
    else:
        probes = f"none above the path MTU {path_mtu}, the largest {s.largest} octets"
    seen = f"{s.datagrams} datagrams from the DUT's QUIC endpoint in {s.duration:.2f} s: {probes}"
    problems = []
    if not s.above:
        problems.append(f"no probe above the path MTU ({path_mtu} octets) in {s.duration:.1f} s of the flow: the DUT "
                        f"never searched for a larger PLPMTU (RFC 8899 §5.2, SEARCHING); its largest datagram was "
                        f"{s.largest} octets")
    elif s.after < SETTLED_MIN:
        problems.append(f"the DUT's datagram size did not settle: {s.after} datagram(s) after its last one above the "
                        f"path MTU {path_mtu} (at {s.above[-1][0]:.3f} s), fewer than {SETTLED_MIN}; "
                        "datagrams above the PLPMTU other than probes are lost on this path (RFC 8899 §4.4)")
    elif s.settled is not None and s.settled <= BASE_PLPMTU:
        problems.append(f"the DUT's datagrams settled at {s.settled} octets, not above BASE_PLPMTU {BASE_PLPMTU}: "
                        f"its search confirmed no larger size on a path that carries {path_mtu} (RFC 8899 §5.2, §5.3)")
    return seen, problems
