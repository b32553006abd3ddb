"""The lab DUT's CLAT (RFC 6877 §6.3): a customer-side translator that
gives an IPv6-only host an IPv4 address (192.0.0.1, RFC 7335) and
translates its IPv4 traffic into IPv6 towards the NAT64 prefix it
discovers, the way clatd does on Linux (clatd is not packaged for Debian 12):

* NAT64 prefix discovery, in this order:
  - a static prefix in the override file, if one is written there (the
    "plat-prefix" setting of clatd; the lab fault of a CLAT ignoring
    discovery writes it);
  - PREF64 options of Router Advertisements (RFC 8781 §5), read from a raw
    ICMPv6 socket, honouring their lifetime;
  - the AAAA records of ipv4only.arpa through the host's resolver
    (RFC 7050 §3), retried every second while unknown.
* Translation: tayga on a TUN device ``clat``, mapping 192.0.0.1 to a
  dedicated IPv6 address of the host (the SLAAC prefix with the IID
  ::c1a7, probed with DAD first, then answered by proxy ND), with the IPv4
  default route through it;
  IPv6 forwarding carries the translated packets between the TUN and the
  link (the link interface keeps forwarding=0: it stays a host there).

Run in the DUT's namespace:  python -m v6gate.lab.clat_agent --iface eth0 --workdir DIR --override FILE
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

CLAT_IID = 0xC1A7
CLAT_IPV4 = "192.0.0.1"  # RFC 7335: the IPv4 service continuity prefix 192.0.0.0/29
TAYGA_IPV4 = "192.0.0.2"
TUN = "clat"
ND_RA = 134
OPT_PREF64 = 38
PLC = {0: 96, 1: 64, 2: 56, 3: 48, 4: 40, 5: 32}
WELL_KNOWN = (ipaddress.IPv4Address("192.0.0.170"), ipaddress.IPv4Address("192.0.0.171"))


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} clat: {msg}", flush=True)


def pref64_of(ra: bytes) -> tuple[ipaddress.IPv6Network, int] | None:
    """(prefix, lifetime in s) of the first valid PREF64 option of an RA (RFC 8781 §4)."""
    off = 16
    while off + 2 <= len(ra):
        otype, olen = ra[off], ra[off + 1] * 8
        if olen == 0 or off + olen > len(ra):
            return None
        if otype == OPT_PREF64 and olen == 16:
            word = struct.unpack("!H", ra[off + 2:off + 4])[0]
            plc, lifetime = word & 0x7, (word >> 3) * 8
            if plc in PLC:
                raw = ra[off + 4:off + 16] + b"\x00" * 4
                net = ipaddress.IPv6Network((int.from_bytes(raw, "big"), PLC[plc]), strict=False)
                return net, lifetime
        off += olen
    return None


def prefix_from_rfc7050() -> ipaddress.IPv6Network | None:
    """RFC 7050 §3: ask the host's resolver for the AAAA records of
    ipv4only.arpa and find the well-known IPv4 address in them."""
    try:
        infos = socket.getaddrinfo("ipv4only.arpa", None, socket.AF_INET6, socket.SOCK_DGRAM)
    except OSError:
        return None
    for info in infos:
        addr = ipaddress.IPv6Address(info[4][0])
        for plen in (96, 64, 56, 48, 40, 32):
            net = ipaddress.IPv6Network((int(addr), plen), strict=False)
            raw = addr.packed
            pos, v4 = plen // 8, bytearray()
            while len(v4) < 4:
                if pos == 8:
                    pos += 1
                v4.append(raw[pos])
                pos += 1
            if ipaddress.IPv4Address(bytes(v4)) in WELL_KNOWN:
                return net
    return None


def global_prefix(iface: str) -> ipaddress.IPv6Network | None:
    out = subprocess.run(["ip", "-6", "-o", "addr", "show", "dev", iface, "scope", "global"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if "inet6" in parts and "tentative" not in line:
            iface_addr = ipaddress.IPv6Interface(parts[parts.index("inet6") + 1])
            if iface_addr.ip != clat_address(iface_addr.network):
                return iface_addr.network
    return None


def clat_address(net: ipaddress.IPv6Network) -> ipaddress.IPv6Address:
    return net.network_address + CLAT_IID


def sh(*argv: str) -> None:
    subprocess.run(argv, capture_output=True, text=True)


class Clat:
    def __init__(self, iface: str, workdir: str):
        self.iface = iface
        self.workdir = workdir
        self.tayga: subprocess.Popen | None = None
        self.config: tuple | None = None

    def probe(self, clat6: ipaddress.IPv6Address, timeout: float = 5.0) -> bool:
        """Duplicate Address Detection for the CLAT's address (RFC 6877 §6.3:
        the CLAT SHOULD run DAD on an address that is not from a dedicated
        prefix): the kernel probes it as an address of the link interface,
        which is removed again once it is no longer tentative."""
        sh("ip", "-6", "addr", "add", f"{clat6}/128", "dev", self.iface)
        deadline = time.monotonic() + timeout
        ok = False
        while time.monotonic() < deadline:
            out = subprocess.run(["ip", "-6", "-o", "addr", "show", "dev", self.iface, "to", f"{clat6}/128"],
                                 capture_output=True, text=True).stdout
            if "dadfailed" in out:
                break
            if out and "tentative" not in out:
                ok = True
                break
            time.sleep(0.02)
        sh("ip", "-6", "addr", "del", f"{clat6}/128", "dev", self.iface)
        return ok

    def apply(self, prefix: ipaddress.IPv6Network, net: ipaddress.IPv6Network) -> None:
        if self.config == (prefix, net):
            return
        self.stop()
        clat6 = clat_address(net)
        if not self.probe(clat6):
            log(f"{clat6} failed Duplicate Address Detection; not translating")
            self.config = (prefix, net)
            return
        conf = os.path.join(self.workdir, "clat-tayga.conf")
        data = os.path.join(self.workdir, "clat-tayga")
        os.makedirs(data, exist_ok=True)
        with open(conf, "w") as f:
            f.write(f"tun-device {TUN}\nipv4-addr {TAYGA_IPV4}\nprefix {prefix}\nmap {CLAT_IPV4} {clat6}\n"
                    f"data-dir {data}\n")
        sh("tayga", "-c", conf, "--mktun")
        sh("ip", "link", "set", TUN, "up")
        sh("ip", "addr", "add", f"{CLAT_IPV4}/32", "dev", TUN)
        sh("ip", "route", "add", "default", "dev", TUN, "mtu", "1260")
        sh("ip", "-6", "route", "add", f"{clat6}/128", "dev", TUN)
        # translated packets cross from the TUN to the link: IPv6 forwarding (a global switch in
        # Linux), while the link interface itself keeps behaving as a host's (NA R=0, RAs)
        sh("sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1", f"net.ipv6.conf.{self.iface}.forwarding=0",
           f"net.ipv6.conf.{self.iface}.proxy_ndp=1")
        sh("ip", "-6", "neigh", "add", "proxy", str(clat6), "dev", self.iface)
        self.tayga = subprocess.Popen(["tayga", "-c", conf, "--nodetach"])
        self.config = (prefix, net)
        log(f"translating {CLAT_IPV4} <-> {clat6} with NAT64 prefix {prefix}")

    def stop(self) -> None:
        if self.tayga and self.tayga.poll() is None:
            self.tayga.terminate()
            self.tayga.wait(3)
        if self.config:
            _, net = self.config
            sh("ip", "-6", "neigh", "del", "proxy", str(clat_address(net)), "dev", self.iface)
            sh("ip", "link", "del", TUN)
        self.tayga, self.config = None, None


def read_override(path: str) -> ipaddress.IPv6Network | None:
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key.strip() == "plat_prefix" and value.strip():
                    return ipaddress.IPv6Network(value.strip())
    except (OSError, ValueError):
        return None
    return None


def read_setting(path: str, key: str) -> str | None:
    """Another ``key=value`` of the override file: lab faults of a CLAT that
    mishandles the PREF64 lifetime write ``pref64_lifetime=ignore`` (keep a
    prefix whatever its lifetime says) or ``pref64_units=seconds`` (read the
    scaled lifetime as seconds, not units of 8 s)."""
    try:
        with open(path) as f:
            for line in f:
                k, _, value = line.strip().partition("=")
                if k.strip() == key:
                    return value.strip()
    except OSError:
        return None
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="the lab DUT's CLAT (RFC 6877) with NAT64 prefix discovery")
    ap.add_argument("--iface", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--override", required=True, help="file with 'plat_prefix=<prefix>' to skip discovery")
    args = ap.parse_args(argv)
    clat = Clat(args.iface, args.workdir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ra_sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    pref64: tuple[ipaddress.IPv6Network, float] | None = None  # (prefix, expiry)
    dns_prefix, next_dns = None, 0.0
    net, next_net = None, 0.0
    log(f"started on {args.iface}")
    try:
        while True:
            r, _, _ = select.select([ra_sock], [], [], 0.1)
            now = time.monotonic()
            if r:
                data, _ = ra_sock.recvfrom(2048)
                if data and data[0] == ND_RA:
                    found = pref64_of(data)
                    if found:
                        advertised, lifetime = found
                        if read_setting(args.override, "pref64_units") == "seconds":
                            lifetime //= 8  # fault: the scaled lifetime read as seconds
                        if read_setting(args.override, "pref64_lifetime") == "ignore":
                            lifetime = 10**9  # fault: the prefix kept whatever the lifetime says
                        pref64 = (advertised, now + lifetime) if lifetime else None
                        log(f"PREF64 {advertised} lifetime {lifetime} s")
            if pref64 and pref64[1] <= now:
                pref64 = None
            static = read_override(args.override)
            if static is None and pref64 is None and now >= next_dns:
                dns_prefix, next_dns = prefix_from_rfc7050(), now + 1.0
                if dns_prefix:
                    log(f"RFC 7050: ipv4only.arpa gives {dns_prefix}")
            prefix = static or (pref64[0] if pref64 else None) or dns_prefix
            if prefix and now >= next_net:
                net, next_net = global_prefix(args.iface), now + 0.25
            if prefix and net:
                clat.apply(prefix, net)
            elif prefix is None and clat.config:
                # RFC 8781 §5: a PREF64 whose lifetime ran out (or was 0) is no longer used
                log("no NAT64 prefix any more (PREF64 expired or withdrawn); not translating")
                clat.stop()
    finally:
        clat.stop()


if __name__ == "__main__":
    sys.exit(main())
