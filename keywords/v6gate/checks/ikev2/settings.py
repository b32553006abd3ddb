"""``extensions.ikev2`` of a target file: how the DUT's IKEv2 is configured,
so that the tester can be the peer it expects (see example-host.yaml).

    extensions:
      ikev2:
        address: 2001:db8:1::5            # the DUT's IKE address (default: its global address on the link)
        identity: 2001:db8:1::5           # the ID it sends (default: its address)
        tester_address: 2001:db8:1::7e57  # the address its IKE configuration knows the tester by
        tester_identity: 2001:db8:1::7e57 # the ID it expects of the tester (default: tester_address)
        psk: {env: V6GATE_IKE_PSK}        # or {file: dut.psk} (relative to this file); never inline
        proposals:                        # what the DUT accepts (strongSwan keywords)
          ike: [aes128-sha256-modp2048, aes128gcm16-prfsha256-ecp256]
          esp: [aes128-sha256, aes128gcm16]
        mode: transport                   # its CHILD_SA mode: transport or tunnel
        roles: [responder, initiator]     # the roles it plays
        initiate: "swanctl --initiate --child v6gate"   # the control adapter's command that makes it
                                          # initiate; without it, an Echo Request to the tester (a trap policy)
        retransmit_wait_s: 30             # how long its retransmissions are watched
        interop_peer:                     # the tester-side strongSwan of the interoperability checks: a
          address: 2001:db8:1::1ce        # namespace of the run's own on a macvlan of the tester interface,
          kernel: libipsec                # with this address (the DUT's configuration knows it); ESP by
                                          # kernel-libipsec (this machine's kernel has none) or netlink
          initiate: "swanctl --initiate --child peer"   # makes the DUT initiate to it (the DUT-initiates part)

The pre-shared key is read when a check needs it and is never written into
results, reports, the manifest or a bundle (``Secret`` hides it from repr).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import TargetFileError
from ...net.ikev2 import proposals as PR
from ...net.ikev2.const import Proto

FIELDS = {"address", "identity", "tester_address", "tester_identity", "psk", "proposals", "mode", "roles",
          "initiate", "retransmit_wait_s", "interop_peer"}
ROLES = ("responder", "initiator")
PSK_MAX = 1024


class Secret:
    """A pre-shared key: its octets, never shown (repr and str name where it came from)."""

    def __init__(self, value: bytes, source: str):
        self._value, self.source = value, source

    @property
    def value(self) -> bytes:
        return self._value

    def __repr__(self) -> str:
        return f"<secret from {self.source}>"

    __str__ = __repr__


@dataclass
class IkeSettings:
    address: str | None = None
    identity: str | None = None
    tester_address: str | None = None
    tester_identity: str | None = None
    psk_source: dict | None = None
    ike: list[str] = field(default_factory=lambda: ["aes128-sha256-modp2048"])
    esp: list[str] = field(default_factory=lambda: ["aes128-sha256"])
    mode: str = "transport"
    roles: tuple[str, ...] = ("responder",)
    initiate: str | None = None
    retransmit_wait_s: float = 30.0
    interop_peer: dict | None = None
    base: Path | None = None  # the target file's directory (a relative psk file)
    source: str = "target file"

    def psk(self) -> Secret:
        """The pre-shared key, read now (TargetFileError when it cannot be)."""
        return load_psk(self.psk_source, self.base, self.source)

    def ike_proposals(self):
        return [PR.parse(p, Proto.IKE, num=i + 1) for i, p in enumerate(self.ike)]

    def esp_proposals(self):
        return [PR.parse(p, Proto.ESP, num=i + 1) for i, p in enumerate(self.esp)]


def load_psk(src: dict | None, base: Path | None, where: str) -> Secret:
    def bad(problem, fix):
        return TargetFileError(where, "extensions.ikev2.psk", problem, fix)

    if src is None:
        raise bad("is missing", "give the DUT's pre-shared key as psk: {env: NAME} or psk: {file: PATH}")
    if "env" in src:
        name = src["env"]
        value = os.environ.get(name)
        if value is None:
            raise bad(f"the environment variable {name} is not set", f"export {name}=... before the run")
        data, origin = value.encode(), f"${name}"
    else:
        path = Path(src["file"])
        if not path.is_absolute() and base is not None:
            path = base / path
        try:
            if not path.is_file():
                raise bad(f"{path} is not a regular file", "name a file holding the key")
            if path.stat().st_size > PSK_MAX:
                raise bad(f"{path} is over {PSK_MAX} octets", "the file holds the key alone")
            data = path.read_bytes()
        except OSError as exc:
            raise bad(f"{path} cannot be read ({exc.strerror})", "make it readable by the run") from None
        data, origin = data.rstrip(b"\r\n"), str(path)
    if not data:
        raise bad(f"the key from {origin} is empty", "put the DUT's pre-shared key there")
    if len(data) > PSK_MAX:
        raise bad(f"the key from {origin} is over {PSK_MAX} octets", "give the key alone")
    return Secret(data, origin)


def settings(target) -> IkeSettings:
    """The validated ``extensions.ikev2`` (defaults when absent); one-line TargetFileError otherwise."""
    raw = (target.extensions or {}).get("ikev2")
    src = getattr(target, "source", None) or "target file"
    base = Path(src).resolve().parent if src != "target file" else None
    s = IkeSettings(base=base, source=src)
    if raw is None:
        return s

    def bad(name, problem, fix):
        return TargetFileError(src, f"extensions.ikev2.{name}" if name else "extensions.ikev2", problem, fix)

    if not isinstance(raw, dict):
        raise bad(None, "is not a mapping", "write address:, psk:, proposals: ... (see example-host.yaml)")
    unknown = sorted(set(raw) - FIELDS)
    if unknown:
        raise bad(unknown[0], "unknown field", f"the fields allowed here are: {', '.join(sorted(FIELDS))}")
    for name in ("address", "tester_address"):
        if name in raw:
            v = raw[name]
            try:
                ip = ipaddress.ip_address(v) if isinstance(v, str) else None
            except ValueError:
                ip = None
            if ip is None or ip.version != 6:
                raise bad(name, f"{v!r} is not an IPv6 address", "write an IPv6 address such as 2001:db8:1::5")
            setattr(s, name, str(ip))
    for name in ("identity", "tester_identity", "initiate"):
        if name in raw:
            v = raw[name]
            if not isinstance(v, str) or not v.strip() or len(v) > 512 or "\n" in v:
                raise bad(name, f"{v!r} is not a one-line string", "give it as text of at most 512 characters")
            setattr(s, name, v.strip())
    if "psk" in raw:
        p = raw["psk"]
        if not isinstance(p, dict) or len(p) != 1 or not ({"env", "file"} & set(p)) \
                or not isinstance(next(iter(p.values())), str) or not next(iter(p.values())):
            raise bad("psk", "must be {env: NAME} or {file: PATH}", "never write the key itself into the target file")
        s.psk_source = dict(p)
    if "proposals" in raw:
        props = raw["proposals"]
        if not isinstance(props, dict) or set(props) - {"ike", "esp"}:
            raise bad("proposals", f"{props!r} is not a mapping of ike and esp lists",
                      "write proposals: {ike: [aes128-sha256-modp2048], esp: [aes128-sha256]}")
        for kind, proto in (("ike", Proto.IKE), ("esp", Proto.ESP)):
            if kind not in props:
                continue
            lst = props[kind]
            if not isinstance(lst, list) or not lst or len(lst) > 32:
                raise bad(f"proposals.{kind}", f"{lst!r} is not a list of 1 to 32 proposals",
                          "list strongSwan proposal strings, e.g. [aes128-sha256-modp2048]")
            for i, text in enumerate(lst):
                if not isinstance(text, str):
                    raise bad(f"proposals.{kind}[{i}]", f"{text!r} is not a string", "e.g. aes128-sha256-modp2048")
                try:
                    PR.parse(text, proto)
                except PR.ProposalError as exc:
                    raise bad(f"proposals.{kind}[{i}]", str(exc), "use strongSwan's algorithm keywords") from None
            setattr(s, kind, list(lst))
    if "mode" in raw:
        if raw["mode"] not in ("transport", "tunnel"):
            raise bad("mode", f"{raw['mode']!r} is not transport or tunnel", "the DUT's CHILD_SA mode")
        s.mode = raw["mode"]
    if "roles" in raw:
        roles = raw["roles"]
        if not isinstance(roles, list) or not roles or any(r not in ROLES for r in roles) or len(set(roles)) != len(roles):
            raise bad("roles", f"{roles!r} is not a list of responder and/or initiator", "e.g. [responder, initiator]")
        s.roles = tuple(roles)
    if "retransmit_wait_s" in raw:
        w = raw["retransmit_wait_s"]
        if isinstance(w, bool) or not isinstance(w, int | float) or not 1 <= w <= 600:
            raise bad("retransmit_wait_s", f"{w!r} is not a number of seconds from 1 to 600", "e.g. 30")
        s.retransmit_wait_s = float(w)
    if "interop_peer" in raw:
        peer = raw["interop_peer"]
        if not isinstance(peer, dict) or set(peer) - {"address", "kernel", "initiate"} or "address" not in peer:
            raise bad("interop_peer", f"{peer!r} is not {{address, kernel}}",
                      "give the address the tester-side strongSwan uses (the DUT's configuration knows it)")
        try:
            if ipaddress.ip_address(peer["address"]).version != 6:
                raise ValueError
        except (ValueError, TypeError):
            raise bad("interop_peer.address", f"{peer['address']!r} is not an IPv6 address",
                      "e.g. 2001:db8:1::1ce") from None
        if peer.get("kernel", "libipsec") not in ("libipsec", "netlink"):
            raise bad("interop_peer.kernel", f"{peer['kernel']!r} is not libipsec or netlink",
                      "libipsec (ESP in user space) unless this machine's kernel has ESP")
        init = peer.get("initiate")
        if init is not None and (not isinstance(init, str) or not init.strip() or "\n" in init or len(init) > 512):
            raise bad("interop_peer.initiate", f"{init!r} is not a one-line command",
                      "the control adapter's command that makes the DUT initiate to this peer")
        s.interop_peer = {"address": str(ipaddress.ip_address(peer["address"])),
                          "kernel": peer.get("kernel", "libipsec"), "initiate": init}
    if "initiator" in s.roles and s.tester_address is None:
        raise bad("tester_address", "is missing, and the DUT plays the initiator",
                  "give the address the DUT's IKE configuration initiates to")
    return s


def validate(target) -> None:
    """What ``v6gate validate`` and ``v6gate run`` check before anything runs: the fields, and that the key
    can be read where the DUT claims IKEv2."""
    s = settings(target)
    if target.claims("IKEv2") and s.psk_source is not None:
        s.psk()
