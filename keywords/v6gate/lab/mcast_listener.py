"""The lab DUT's multicast listener: an application holding one socket's
filter for one group (RFC 3810 §3, IPv6MulticastListen(socket, interface,
group, filter mode, source list)), as the RFC 3678 socket API sets it.

Run by the netns control adapter inside the DUT's namespace with the
system's python3 (standard library only, no v6gate import):

    python3 mcast_listener.py IFNAME GROUP

It says ``ready`` once started, then reads commands from stdin, one a
line, and answers each with one line, ``ok`` or ``err <reason>``:

    set include|exclude [SOURCE ...]

The first ``set`` joins (include: MCAST_JOIN_SOURCE_GROUP per source, so a
new channel is one INCLUDE join; exclude: MCAST_JOIN_GROUP, then the source
list with MCAST_MSFILTER); later ones replace the filter in one
MCAST_MSFILTER call, so each change is one state change of the interface
(RFC 3810 §6.1); ``set include`` with no source leaves.  Linux takes a filter
only for a group already joined, so a first ``set exclude S...`` is two
changes (EXCLUDE {}, then EXCLUDE {S...}), and a first ``set include S1 S2``
one per source: checks judge only single changes made from a settled state.  End of input (or
SIGTERM) closes the socket, which leaves the group.
"""

import socket
import struct
import sys

IPPROTO_IPV6 = 41
# linux/in.h (RFC 3678 protocol-independent API)
MCAST_JOIN_GROUP, MCAST_LEAVE_GROUP = 42, 45
MCAST_JOIN_SOURCE_GROUP, MCAST_MSFILTER = 46, 48
MODES = {"exclude": 0, "include": 1}  # MCAST_EXCLUDE, MCAST_INCLUDE
MAX_SOURCES = 64  # the kernel's default mld_max_msf


def _storage(addr: str) -> bytes:
    """A struct sockaddr_storage holding a sockaddr_in6."""
    sin6 = struct.pack("=HHI16sI", socket.AF_INET6, 0, 0, socket.inet_pton(socket.AF_INET6, addr), 0)
    return sin6 + b"\0" * (128 - len(sin6))


def _group_req(ifindex: int, group: str) -> bytes:
    return struct.pack("=I4x", ifindex) + _storage(group)


def _group_source_req(ifindex: int, group: str, source: str) -> bytes:
    return _group_req(ifindex, group) + _storage(source)


def _group_filter(ifindex: int, group: str, mode: str, sources: list) -> bytes:
    return (_group_req(ifindex, group) + struct.pack("=II", MODES[mode], len(sources))
            + b"".join(_storage(s) for s in sources))


def main() -> int:
    ifname, group = sys.argv[1], sys.argv[2]
    ifindex = socket.if_nametoindex(ifname)
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    joined = False
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] != "set" or len(words) < 2 or words[1] not in MODES or len(words) - 2 > MAX_SOURCES:
                raise ValueError(f"usage: set include|exclude [SOURCE ...] (at most {MAX_SOURCES} sources)")
            mode, sources = words[1], words[2:]
            for s in sources:
                socket.inet_pton(socket.AF_INET6, s)
            if mode == "include" and not sources:
                if joined:
                    sock.setsockopt(IPPROTO_IPV6, MCAST_LEAVE_GROUP, _group_req(ifindex, group))
                    joined = False
            elif not joined and mode == "include":
                for s in sources:
                    sock.setsockopt(IPPROTO_IPV6, MCAST_JOIN_SOURCE_GROUP, _group_source_req(ifindex, group, s))
                joined = True
            elif not joined:
                sock.setsockopt(IPPROTO_IPV6, MCAST_JOIN_GROUP, _group_req(ifindex, group))
                joined = True
                if sources:
                    sock.setsockopt(IPPROTO_IPV6, MCAST_MSFILTER, _group_filter(ifindex, group, mode, sources))
            else:
                sock.setsockopt(IPPROTO_IPV6, MCAST_MSFILTER, _group_filter(ifindex, group, mode, sources))
        except (OSError, ValueError) as exc:
            print(f"err {exc}", flush=True)
            continue
        print("ok", flush=True)
    sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
