"""The lab DUT's ordinary TCP/UDP services (area offload), one small program:

* ``--tcp-echo PORT``: TCP echo (RFC 862), every byte returned as it arrives;
* ``--udp-echo PORT``: UDP echo (RFC 862), each datagram returned to its sender;
* ``--discard PORT``: TCP discard (RFC 863), a sink;
* ``--tcp-echo-dstopts PORT``: TCP echo whose sockets carry a Destination
  Options header (``IPV6_DSTOPTS``, RFC 3542 §6.1) on every packet they send,
  so the DUT's transmit path (and its segmentation offload) handles an
  extension header.

Sockets are bound to ``::`` with IPV6_V6ONLY off: a DUT with an IPv4 address
answers over IPv4 too (parity checks).  Run by ``lab/services/offload.py`` as a
daemon in the DUT's namespace; it logs one line per event to stdout.
"""

from __future__ import annotations

import argparse
import selectors
import socket
import sys

#: a Destination Options header of 8 octets: Next Header (filled by the
#: kernel), Hdr Ext Len 0, then one PadN option of 4 octets (RFC 8200 §4.2)
#: padding it to 8.  PadN carries no meaning, so every stack accepts it.
DSTOPTS = bytes([0, 0, 1, 4, 0, 0, 0, 0])
#: how long one echo may wait for the peer's window before it is given up (``--send-timeout``: area plpmtud
#: waits out a black-holed path's recovery, which takes Linux's PLPMTUD about 6 s)
SEND_TIMEOUT_S = 5.0


def listener(kind: int, port: int, dstopts: bool = False) -> socket.socket:
    s = socket.socket(socket.AF_INET6, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    if dstopts:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_DSTOPTS, DSTOPTS)
    s.bind(("::", port))
    if kind == socket.SOCK_STREAM:
        s.listen(64)
    s.setblocking(False)
    return s


def serve(args) -> None:
    sel = selectors.DefaultSelector()
    for port, role, dst in ((args.tcp_echo, "echo", False), (args.discard, "discard", False),
                            (args.tcp_echo_dstopts, "echo", True)):
        if port:
            sel.register(listener(socket.SOCK_STREAM, port, dst), selectors.EVENT_READ, ("listen", role, dst))
    if args.udp_echo:
        sel.register(listener(socket.SOCK_DGRAM, args.udp_echo), selectors.EVENT_READ, ("udp", "echo", False))
    print("ready", flush=True)
    pending: dict[socket.socket, bytearray] = {}
    while True:
        for key, _ in sel.select():
            sock, (what, role, dst) = key.fileobj, key.data
            if what == "listen":
                try:
                    conn, peer = sock.accept()
                except BlockingIOError:
                    continue
                if dst:
                    conn.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_DSTOPTS, DSTOPTS)
                conn.setblocking(False)
                pending[conn] = bytearray()
                sel.register(conn, selectors.EVENT_READ, ("conn", role, dst))
                print(f"accept {role} {peer[0]} {peer[1]}", flush=True)
            elif what == "udp":
                try:
                    data, peer = sock.recvfrom(65535)
                except BlockingIOError:
                    continue
                print(f"udp {peer[0]} {peer[1]} {len(data)}", flush=True)
                sock.sendto(data, peer)
            else:
                _conn_event(sel, sock, role, pending)


def _conn_event(sel, conn: socket.socket, role: str, pending: dict) -> None:
    buf = pending[conn]
    try:
        data = conn.recv(262144)
    except (BlockingIOError, InterruptedError):
        data = None
    except OSError:
        data = b""
    if data == b"":
        sel.unregister(conn)
        pending.pop(conn, None)
        conn.close()
        return
    if data and role == "echo":
        buf += data
    if buf:
        conn.settimeout(SEND_TIMEOUT_S)  # echo everything back before reading more (bounded by the peer's window)
        try:
            conn.sendall(bytes(buf))
        except OSError:  # a peer that stopped reading (or vanished) loses its echo, not the other clients'
            pass
        finally:
            conn.setblocking(False)
        buf.clear()


def main(argv: list[str] | None = None) -> int:
    global SEND_TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tcp-echo", type=int, default=0)
    ap.add_argument("--udp-echo", type=int, default=0)
    ap.add_argument("--discard", type=int, default=0)
    ap.add_argument("--tcp-echo-dstopts", type=int, default=0)
    ap.add_argument("--send-timeout", type=float, default=SEND_TIMEOUT_S)
    args = ap.parse_args(argv)
    SEND_TIMEOUT_S = args.send_timeout
    serve(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
