"""Captures aimed at the edges of the audit's per-host rules, for proving
the C engine against the Python path (``test_audit_engine.py``): random but
seeded sequences of the frames the rules read, from a few hosts, so that
every bound and window is crossed.

What they hold: more than 64 DNS names answered to one host (the oldest
name evicted), more than 32 addresses per host and family, more than 128
DAD targets, more than 16 resolvers, more than 8 router lifetimes, RDNSS
and PREF64 with every Prefix Length Code; DHCPDISCOVER/REQUEST with and
without option 108, OFFERs with option 108 of no, zero, small, large and
the largest value, interface restarts (DAD of a link-local address) inside
and after V6ONLY_WAIT; SYNs to names with A and AAAA answers; DNS over TCP;
ICMPv6 and ICMPv4 errors quoting DNS, a SYN and DHCP; ND with other hop
limits; bad and zero checksums; 802.1Q and QinQ, 802.3 lengths, frames cut
by a snaplen; frames from group addresses; times that stand still, jump
past V6ONLY_WAIT and go back.  Written as nanosecond pcap (Ethernet),
or with the frames moved to Linux cooked (SLL) and raw IP link types.
"""

from __future__ import annotations

import random
import struct

from v6gate.net.offload import ones_sum

HOSTS = [bytes.fromhex(f"0200000001{i:02x}") for i in range(8)]
GROUP_SOURCE = bytes.fromhex("030000000199")
SERVER = bytes.fromhex("02000000fe01")
ROUTER = bytes.fromhex("02000000fe02")
BROADCAST = b"\xff" * 6
NAMES = [f"n{i}.example" for i in range(80)] + ["Mixed.Case.EXAMPLE", "a,comma.example", "sp ace.example", "",
                                             "ipv4only.arpa", "IPv4Only.ARPA", "ipv4only.arpa.example", "pv4only.arpa"]
V4 = [bytes((10, 1, i // 8, i % 8)) for i in range(48)]
V6 = [bytes.fromhex("20010db80000000100000000000000") + bytes([i]) for i in range(48)]
RESOLVERS6 = [bytes.fromhex("20010db800000053") + bytes(7) + bytes([i]) for i in range(20)]
RESOLVERS4 = [bytes((192, 0, 2, 50 + i)) for i in range(20)]


def _ck(data: bytes) -> int:
    return ~ones_sum(data) & 0xFFFF


def ll(mac: bytes) -> bytes:
    return bytes.fromhex("fe80000000000000") + bytes((mac[0] ^ 2,)) + mac[1:3] + b"\xff\xfe" + mac[3:6]


class Gen:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.t = 1_700_000_000 * 10**9 + self.rng.randrange(10**9)
        self.frames: list[tuple[int, int, bytes]] = []  # (ns, original length, captured bytes)

    # -- layers -------------------------------------------------------------------------------------------
    def eth(self, dst: bytes, src: bytes, etype: int, payload: bytes) -> bytes:
        r = self.rng.random()
        if r < 0.15:
            return dst + src + struct.pack("!HHH", 0x8100, 7, etype) + payload
        if r < 0.18:
            return dst + src + struct.pack("!HHHHH", 0x88A8, 5, 0x8100, 6, etype) + payload
        return dst + src + struct.pack("!H", etype) + payload

    def l4ck(self, pseudo: bytes, seg: bytes, at: int, mode: str) -> bytes:
        ck = 0 if mode == "zero" else _ck(pseudo + seg) or 0xFFFF
        if mode == "bad":
            ck ^= 0x0101
        return seg[:at] + struct.pack("!H", ck) + seg[at + 2:]

    def mode(self) -> str:
        r = self.rng.random()
        return "bad" if r < 0.04 else "zero" if r < 0.07 else "good"

    def ipv6(self, src: bytes, dst: bytes, nh: int, seg: bytes, hlim: int = 64, ck_at: int | None = None) -> bytes:
        if ck_at is not None:
            pseudo = src + dst + struct.pack("!IxxxB", len(seg), nh)
            seg = self.l4ck(pseudo, seg, ck_at, "bad" if self.rng.random() < 0.04 else "good")
        ext = b""
        r = self.rng.random()
        if r < 0.08:  # hop-by-hop (router alert), then the payload
            ext, nh = struct.pack("!BB", nh, 0) + bytes.fromhex("050200000100"), 0
        elif r < 0.11:  # a first fragment, or a later one
            ext, nh = struct.pack("!BxHI", nh, self.rng.choice((1, 8 | 1, 16)), 7), 44
        return struct.pack("!IHBB", 6 << 28, len(ext) + len(seg), nh, hlim) + src + dst + ext + seg

    def ipv4(self, src: bytes, dst: bytes, proto: int, seg: bytes) -> bytes:
        flags = self.rng.choice((0x4000,) * 20 + (0x2000, 0x0010))
        head = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(seg), 1, flags, 64, proto, 0) + src + dst
        ck = _ck(head) ^ (0x0101 if self.rng.random() < 0.03 else 0)
        return head[:10] + struct.pack("!H", ck) + head[12:] + seg

    def udp6(self, src, dst, sport, dport, body, hlim=64) -> bytes:
        seg = struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body
        mode = self.mode()
        if mode != "zero":
            seg = self.l4ck(src + dst + struct.pack("!IxxxB", len(seg), 17), seg, 6, mode)
        return self.ipv6(src, dst, 17, seg, hlim)

    def udp4(self, src, dst, sport, dport, body) -> bytes:
        seg = struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body
        mode = self.mode()
        if mode != "zero":
            seg = self.l4ck(src + dst + struct.pack("!xBH", 17, len(seg)), seg, 6, mode)
        return self.ipv4(src, dst, 17, seg)

    def tcp(self, src, dst, sport, dport, flags, body=b"") -> tuple[int, bytes]:
        seg = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags, 1024, 0, 0) + body
        if len(src) == 16:
            return 6, self.ipv6(src, dst, 6, seg, ck_at=16)
        seg = self.l4ck(src + dst + struct.pack("!xBH", 6, len(seg)), seg, 16, self.mode().replace("zero", "good"))
        return 4, self.ipv4(src, dst, 6, seg)

    # -- messages -----------------------------------------------------------------------------------------
    def name(self, n: str) -> bytes:
        return b"".join(bytes((len(p),)) + p.encode() for p in n.split(".") if p) + b"\0"

    def dns(self, response: bool, names: list[tuple[str, int]], answers=()) -> bytes:
        out = struct.pack("!HHHHHH", self.rng.randrange(65536), 0x8180 if response else 0x0100, len(names),
                          len(answers), 0, 0)
        for n, qt in names:
            out += self.name(n) + struct.pack("!HH", qt, 1)
        for rtype, rdata in answers:
            out += b"\xc0\x0c" + struct.pack("!HHIH", rtype, 1, 60, len(rdata)) + rdata
        return out

    def dhcp(self, op: int, msg: int, chaddr: bytes, yiaddr: bytes, prl=None, opt108=None) -> bytes:
        b = bytearray(240)
        b[0], b[1], b[2] = op, 1, 6
        b[4:8] = struct.pack("!I", self.rng.randrange(1 << 32))
        b[16:20] = yiaddr
        b[28:34] = chaddr
        b[236:240] = b"\x63\x82\x53\x63"
        opts = bytes((53, 1, msg))
        if prl is not None:
            opts += bytes((55, len(prl))) + bytes(prl)
        if opt108 is not None:
            opts += bytes((108, len(opt108))) + opt108
        return bytes(b) + opts + b"\xff" + b"\0" * self.rng.randrange(4)

    def icmp6(self, src, dst, t: int, body: bytes, hlim=255) -> bytes:
        return self.ipv6(src, dst, 58, struct.pack("!BBH", t, 0, 0) + body, hlim, ck_at=2)

    # -- the sequence -------------------------------------------------------------------------------------
    def host(self) -> bytes:
        return self.rng.choice(HOSTS) if self.rng.random() > 0.03 else GROUP_SOURCE

    def addr6(self, mac: bytes) -> bytes:
        return ll(mac) if self.rng.random() < 0.3 else self.rng.choice(V6[:34] if mac == HOSTS[0] else V6[:8])

    def addr4(self, mac: bytes) -> bytes:
        return self.rng.choice(V4[:36] if mac == HOSTS[1] else V4[:6])

    def step(self) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.05:
            self.t += 400 * 10**9  # past V6ONLY_WAIT
        elif r < 0.08:
            self.t -= rng.randrange(2 * 10**9)  # back in time
        elif r < 0.12:
            pass  # the same nanosecond
        else:
            self.t += rng.randrange(3 * 10**9)
        h = self.host()
        kind = rng.choice(("query6", "query4", "answer", "answer", "syn", "syn", "dhcp", "offer", "dad", "use6",
                           "rs", "ra", "arp", "v4", "error6", "error4", "other", "tcpdns", "mdns", "ns"))
        if h == HOSTS[2] and rng.random() < 0.6:
            kind = "dad"  # (a host with more DAD targets than the rules keep)
        fr = getattr(self, "f_" + kind)(h)
        cut = len(fr)
        if rng.random() < 0.06:
            cut = rng.randrange(14, len(fr) + 1)
        self.frames.append((self.t, len(fr), fr[:cut]))

    def f_query6(self, h):
        names = [(n, self.rng.choice((1, 28, 28, 16, 65))) for n in self.rng.sample(NAMES, self.rng.choice((1, 1, 2)))]
        return self.eth(SERVER, h, 0x86DD, self.udp6(self.addr6(h), self.rng.choice(RESOLVERS6), 40000, 53,
                                                     self.dns(False, names)))

    def f_query4(self, h):
        names = [(self.rng.choice(NAMES), self.rng.choice((1, 28)))]
        return self.eth(SERVER, h, 0x0800, self.udp4(self.addr4(h), self.rng.choice(RESOLVERS4), 40000, 53,
                                                     self.dns(False, names)))

    def answers(self):
        ans = [(1, self.rng.choice(V4)) for _ in range(self.rng.randrange(3))]
        return ans + [(28, self.rng.choice(V6)) for _ in range(self.rng.randrange(3))]

    def f_answer(self, h):
        dst = HOSTS[3] if self.rng.random() < 0.5 else self.rng.choice(HOSTS)  # (one host told 80 names)
        body = self.dns(True, [(self.rng.choice(NAMES), 1)], self.answers())
        if self.rng.random() < 0.5:
            return self.eth(dst, SERVER, 0x86DD, self.udp6(RESOLVERS6[0], V6[0], 53, 40000, body))
        return self.eth(dst, SERVER, 0x0800, self.udp4(RESOLVERS4[0], V4[0], 53, 40000, body))

    def f_mdns(self, h):
        body = self.dns(True, [(self.rng.choice(NAMES), 28)], self.answers())
        dst = bytes.fromhex("3333000000fb") if self.rng.random() < 0.7 else self.rng.choice(HOSTS)
        return self.eth(dst, h, 0x86DD,
                        self.udp6(ll(h), bytes.fromhex("ff0200000000000000000000000000fb"), 5353, 5353, body))

    def f_syn(self, h):
        dst = self.rng.choice(V4[:10] + V6[:10])
        src = self.addr6(h) if len(dst) == 16 else self.addr4(h)
        fam, pkt = self.tcp(src, dst, 40000, 443, self.rng.choice((0x02, 0x02, 0x12, 0x10)))
        return self.eth(SERVER, h, 0x86DD if fam == 6 else 0x0800, pkt)

    def f_tcpdns(self, h):
        msg = self.dns(self.rng.random() < 0.5, [(self.rng.choice(NAMES), 28)], self.answers())
        _, pkt = self.tcp(self.addr6(h), RESOLVERS6[1], 40001, 53, 0x18, struct.pack("!H", len(msg)) + msg)
        return self.eth(SERVER, h, 0x86DD, pkt)

    def f_dhcp(self, h):
        prl = self.rng.choice(([1, 3, 6], [1, 3, 6, 108], [108], []))
        body = self.dhcp(1, self.rng.choice((1, 3, 3, 8, 9)), h, bytes(4), prl)
        src = bytes(4) if self.rng.random() < 0.5 else self.addr4(h)
        return self.eth(BROADCAST, h, 0x0800, self.udp4(src, b"\xff" * 4, 68, 67, body))

    def f_offer(self, h):
        client = self.rng.choice([*HOSTS, GROUP_SOURCE])
        opt = self.rng.choice((None, b"\0\0\0\0", struct.pack("!I", 60), struct.pack("!I", 300),
                               struct.pack("!I", 900), b"\xff\xff\xff\xff", b"\x01\x02"))
        body = self.dhcp(2, self.rng.choice((2, 2, 2, 5)), client, self.rng.choice(V4), [], opt)
        return self.eth(client, SERVER, 0x0800, self.udp4(bytes((192, 0, 2, 1)), self.rng.choice(V4), 67, 68, body))

    def f_dad(self, h):
        target = ll(h) if self.rng.random() < 0.3 else self.rng.choice(V6 if h == HOSTS[2] else V6[:10])
        if h == HOSTS[2] and self.rng.random() < 0.8:  # more than 128 targets
            target = bytes.fromhex("20010db80000000a") + struct.pack("!Q", self.rng.randrange(1000))
        body = b"\0\0\0\0" + target + (b"\x01\x01" + h if self.rng.random() < 0.5 else b"")
        return self.eth(bytes.fromhex("3333ff") + target[13:], h, 0x86DD,
                        self.icmp6(bytes(16), bytes.fromhex("ff0200000000000000000001ff") + target[13:], 135, body,
                                   255 if self.rng.random() < 0.9 else 254))

    def f_ns(self, h):
        target = self.rng.choice(V6[:8])
        return self.eth(SERVER, h, 0x86DD, self.icmp6(self.addr6(h), target, 135, b"\0" * 4 + target,
                                                      255 if self.rng.random() < 0.9 else 64))

    def f_use6(self, h):
        return self.eth(SERVER, h, 0x86DD, self.udp6(self.addr6(h), V6[40], 40000, 9999, b"payload"))

    def f_rs(self, h):
        src = bytes(16) if self.rng.random() < 0.3 else ll(h)
        return self.eth(bytes.fromhex("333300000002"), h, 0x86DD,
                        self.icmp6(src, bytes.fromhex("ff020000000000000000000000000002"), 133, b"\0" * 4,
                                   255 if self.rng.random() < 0.85 else 1))

    def f_ra(self, h):
        src = ROUTER if self.rng.random() < 0.8 else h
        opts = b""
        for _ in range(self.rng.randrange(3)):
            n = self.rng.randrange(1, 8)
            addrs = b"".join(self.rng.choice(RESOLVERS6) for _ in range(n))
            opts += struct.pack("!BBHI", 25, 1 + 2 * n, 0, 600) + addrs
        for _ in range(self.rng.randrange(3)):
            plc = self.rng.randrange(8)
            opts += struct.pack("!BBH", 38, 2, (300 << 3) | plc) + bytes.fromhex("0064ff9b00000000000000") + bytes(
                (self.rng.randrange(4),))
        lifetime = self.rng.choice((0, 300, 600, 900, 1200, 1500, 1800, 2400, 3600, 4000, 5000, 9000))
        flags = 0x40 if self.rng.random() < 0.5 else 0
        body = struct.pack("!BBHII", 64, flags, lifetime, 0, 0) + opts
        return self.eth(bytes.fromhex("333300000001"), src, 0x86DD,
                        self.icmp6(ll(src), bytes.fromhex("ff020000000000000000000000000001"), 134, body))

    def f_arp(self, h):
        spa = bytes(4) if self.rng.random() < 0.2 else self.addr4(h)
        op = self.rng.choice((1, 1, 2, 3))
        body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + h + spa + bytes(6) + self.rng.choice(V4)
        return self.eth(BROADCAST, h, 0x0806, body)

    def f_v4(self, h):
        return self.eth(SERVER, h, 0x0800, self.udp4(self.addr4(h), V4[47], 5000, 6000, b"data"))

    def f_error6(self, h):
        inner = self.rng.choice((
            lambda: self.udp6(self.addr6(h), RESOLVERS6[2], 40000, 53, self.dns(False, [("q.example", 28)])),
            lambda: self.tcp(self.addr6(h), V6[1], 40000, 443, 0x02)[1],
            lambda: self.icmp6(ll(h), V6[2], 134, struct.pack("!BBHII", 64, 0x40, 1800, 0, 0)),
        ))()
        return self.eth(SERVER, h, 0x86DD, self.icmp6(self.addr6(h), V6[3], 1, b"\0" * 4 + inner[:120], 64))

    def f_error4(self, h):
        inner = self.rng.choice((
            lambda: self.udp4(self.addr4(h), RESOLVERS4[0], 40000, 53, self.dns(False, [("q4.example", 1)])),
            lambda: self.udp4(bytes((192, 0, 2, 1)), V4[3], 67, 68,
                              self.dhcp(2, 2, self.rng.choice(HOSTS), V4[4], [], struct.pack("!I", 1000))),
        ))()
        seg = struct.pack("!BBHI", 3, 3, 0, 0) + inner
        seg = seg[:2] + struct.pack("!H", _ck(seg)) + seg[4:]
        return self.eth(SERVER, h, 0x0800, self.ipv4(self.addr4(h), V4[5], 1, seg))

    def f_other(self, h):
        if self.rng.random() < 0.5:
            return SERVER + h + struct.pack("!H", 60) + b"\x42" * 60  # an 802.3 length, not an EtherType
        return SERVER + h + struct.pack("!H", 0x88CC) + b"\x02\x07" + b"\0" * 20  # LLDP


def frames(seed: int, n: int) -> list[tuple[int, int, bytes]]:
    g = Gen(seed)
    for _ in range(n):
        g.step()
    return g.frames


def write_pcap(path, fr: list[tuple[int, int, bytes]], linktype: int = 1) -> None:
    """Nanosecond pcap; ``linktype`` 113 (Linux cooked) or 101 (raw IP): each frame's Ethernet header is
    replaced by that link type's."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, linktype)]
    for ns, orig, data in fr:
        if linktype != 1 and len(data) >= 14:
            etype = data[12:14]
            if linktype == 113:
                head = struct.pack("!HHH", 0, 1, 6) + data[6:12] + b"\0\0" + etype
                data, orig = head + data[14:], orig + 2
            else:
                data, orig = data[14:], orig - 14
        out.append(struct.pack("<IIII", ns // 10**9, ns % 10**9, len(data), orig) + data)
    with open(path, "wb") as f:
        f.write(b"".join(out))
