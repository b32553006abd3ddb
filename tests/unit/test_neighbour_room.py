"""How many parts run side by side: the DUT's Neighbor Cache room found out
(core/neighbour_room.py).  The probe's counting against emulated caches
(pure logic: a cache of a given size and eviction policy answering the
probe's frames); the packets against the lab's Linux are in the external
lab tests (tests/lab/test_external_parity.py)."""

from types import SimpleNamespace

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from v6gate.core import neighbour_room as NR
from v6gate.net import packets as P

DUT_MAC, DUT_LL = "52:54:00:ab:cd:02", "fe80::5054:ff:feab:cd02"


class _Frame:
    def __init__(self, t, pkt):
        self.time, self.pkt = t, pkt


class _Cache:
    """A DUT's Neighbor Cache of ``size`` entries: ``evicts`` the states it
    may replace when full, oldest first (lwIP: not REACHABLE ones)."""

    def __init__(self, size, evicts=("STALE", "REACHABLE")):
        self.size, self.evicts = size, evicts
        self.entries: dict[str, list] = {}  # address -> [state, mac, created]
        self.clock = 0

    def make_room(self) -> bool:
        if len(self.entries) < self.size:
            return True
        for state in self.evicts:
            old = sorted((e[2], a) for a, e in self.entries.items() if e[0] == state)
            if old:
                del self.entries[old[0][1]]
                return True
        return False


class _Port:
    """The tester's port with the emulated DUT on the other end."""

    def __init__(self, cache):
        self.cache, self.frames, self.responders, self.t = cache, [], [], 0.0
        self.queued: dict[str, object] = {}

    def now(self):
        return self.t

    def add_responder(self, r):
        self.responders.append(r)

    def remove_responder(self, r):
        self.responders.remove(r)

    def _from_dut(self, pkt):
        self.t += 0.001
        self.frames.append(_Frame(self.t, pkt))
        for r in list(self.responders):
            r(self, _Frame(self.t, pkt))

    def send(self, pkt):
        self.t += 0.001
        sent, c = self.t, self.cache
        src, mac = pkt[IPv6].src, pkt[Ether].src
        if ICMPv6EchoRequest in pkt:
            reply = (Ether(src=DUT_MAC, dst=mac) / IPv6(src=DUT_LL, dst=src)
                     / ICMPv6EchoReply(id=pkt[ICMPv6EchoRequest].id, seq=1))
            if src in c.entries and c.entries[src][0] != "INCOMPLETE":
                self._from_dut(reply)
            elif c.make_room():
                c.clock += 1
                c.entries[src] = ["INCOMPLETE", None, c.clock]
                self.queued[src] = reply
                group = P.solicited_node(src)
                self._from_dut(Ether(src=DUT_MAC, dst=P.multicast_mac(group)) / IPv6(src=DUT_LL, dst=group)
                               / ICMPv6ND_NS(tgt=src) / ICMPv6NDOptSrcLLAddr(lladdr=DUT_MAC))
        elif ICMPv6ND_NA in pkt and src in c.entries:
            na = pkt[ICMPv6ND_NA]
            if na.S:
                c.entries[src][0] = "REACHABLE"
                if src in self.queued:
                    self._from_dut(self.queued.pop(src))
            elif na.O:
                c.entries[src][0] = "STALE"
        return sent

    def expect(self, match, within, since=None):
        return next((f for f in self.frames if f.time >= since and match(f.pkt)), None)

    def collect(self, match, within, since=None):
        return [f for f in self.frames if f.time >= since and match(f.pkt)]


def _probe(cache):
    port = _Port(cache)
    return NR.probe(port, DUT_MAC, DUT_LL, NR.entries_for(NR.MAX_PARTS), 1.0), cache


def test_a_cache_with_room_for_the_worst_case_holds_every_neighbour_and_gets_the_larger_batches():
    found, cache = _probe(_Cache(64))
    assert (found.taken, found.held, found.parts) == (14, 14, NR.MAX_PARTS)
    # the probe leaves its neighbours STALE, so that a cache that keeps REACHABLE entries can evict them
    assert {e[0] for e in cache.entries.values()} == {"STALE"}


def test_lwips_ten_entries_that_keep_reachable_ones_take_ten_and_the_run_keeps_the_safe_batches():
    found, _ = _probe(_Cache(10, evicts=("STALE",)))
    assert (found.taken, found.held, found.parts) == (10, 10, NR.SAFE_PARTS)
    # it stops at the first neighbour not taken: the answer is known, a small cache is not kept waiting
    assert found.dropped == [found.dropped[0]] and "no Echo Reply when it was new (neighbour 11 of 14" in found.dropped[0]
    assert NR.entries_for(NR.SAFE_PARTS) <= 10  # what SAFE_PARTS rests on


def test_a_cache_that_evicts_its_oldest_entries_answers_each_new_one_and_is_caught_asking_again():
    found, _ = _probe(_Cache(12))
    assert found.taken == 14 and found.held < 14 and found.parts == NR.SAFE_PARTS
    assert any("resolved again (multicast NS)" in d for d in found.dropped)


def test_a_check_with_few_parts_asks_for_no_probe_and_a_broken_probe_means_the_safe_batches():
    calls = []

    class Capture:
        def begin(self, path):
            calls.append("begin")
            raise OSError("the run directory is full")

        def end(self):
            calls.append("end")

    session = SimpleNamespace(run_dir=__import__("pathlib").Path("/nonexistent"), capture=Capture(), pace=None,
                              target=SimpleNamespace(dut_mac=DUT_MAC, timing={"reply_timeout_s": 1.0}),
                              dut=SimpleNamespace(link_local=DUT_LL), port=None)
    room = NR.NeighbourRoom(session)
    assert room.parts(NR.SAFE_PARTS) == NR.SAFE_PARTS and calls == [] and room.summary() is None
    assert room.parts(NR.MAX_PARTS) == NR.SAFE_PARTS
    assert room.parts(NR.MAX_PARTS) == NR.SAFE_PARTS and calls == ["begin"]  # found out once per run
    assert room.summary()["held"] == 0 and "did not run: OSError" in room.summary()["dropped"][0]
