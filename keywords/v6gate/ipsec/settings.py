"""``extensions.ipsec`` of a target file: how the harness gets SAs that the
DUT and the tester share (docs/ipsec.md, fixtures/targets/example-host.yaml).

Two ways, the first that the target offers:

* ``commands``: the DUT's hooks, command templates run through its control
  adapter (``control.command``): ``install`` one SA pair and its policies
  with keys the check draws fresh, ``flush`` them when the check ends,
  optionally ``state`` (counters, printed as evidence).  The lab's VM has
  them (``v6g-sa``); a Linux DUT over ssh can take the same script.
* ``sas``: SAs configured on the DUT by hand, one per algorithm and mode a
  check needs: SPIs, the tester's address they are bound to, and keys from
  an environment variable (``{env: NAME}``) or a file (``{file: PATH}``,
  relative to the target file; hex, whitespace ignored), or written inline
  as hex (discouraged: the target file then holds a secret).

Keys are read only when a check needs them, held as bytes in ``net.esp.SA``
(whose repr leaves them out), and never written into results, reports,
manifests or bundles; a check writes Wireshark's ``esp_sa`` table next to its
pcap only for keys it drew itself.  Validation (at every load of the target,
so ``v6gate validate`` and ``v6gate run`` refuse a bad one in one line) checks
types, SPIs, addresses, that each key source exists and holds a key of the
algorithm's length, and names the field, never the key.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TargetFileError
from ..net.esp import ALGORITHMS

#: the placeholders an ``install`` template may use (docs/ipsec.md says what each holds)
INSTALL_FIELDS = ("mode", "dut", "peer", "gateway", "spi_in", "spi_out", "encr", "key_in", "key_out", "integ",
                  "auth_in", "auth_out", "window")
MODES = ("transport", "tunnel")
#: RFC 4303 §3.4.3: a window of at least 32 MUST be supported, 64 SHOULD be the default
DEFAULT_WINDOW = 64
MAX_KEY_FILE = 4096
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")


@dataclass(frozen=True)
class KeySource:
    """Where a key is: ``env`` (a variable's name), ``file`` (a path) or
    ``inline`` (hex in the target file).  ``read()`` gives the bytes."""

    kind: str
    where: str
    base: Path = field(default=Path("."), compare=False)
    _value: str = field(default="", repr=False, compare=False)

    def describe(self) -> str:
        return {"env": f"environment variable {self.where}", "file": f"file {self.where}",
                "inline": "the target file (inline)"}[self.kind]

    def read(self) -> bytes:
        """The key; ValueError says what is wrong with its source (never the key)."""
        if self.kind == "env":
            text = os.environ.get(self.where)
            if text is None:
                raise ValueError(f"environment variable {self.where} is not set")
        elif self.kind == "file":
            path = (self.base / self.where) if not os.path.isabs(self.where) else Path(self.where)
            try:
                if not path.is_file():
                    raise ValueError(f"{path} is not a file")
                if path.stat().st_size > MAX_KEY_FILE:
                    raise ValueError(f"{path} is larger than {MAX_KEY_FILE} bytes: not a key file")
                text = path.read_text()
            except OSError as exc:
                raise ValueError(f"{path} cannot be read ({exc.strerror or exc})") from None
            except UnicodeDecodeError:
                raise ValueError(f"{path} is not text (write the key in hex)") from None
        else:
            text = self._value
        text = "".join(text.split())
        if not text or not _HEX.match(text) or len(text.removeprefix("0x")) % 2:
            raise ValueError(f"the key in {self.describe()} is not an even number of hex digits")
        return bytes.fromhex(text.removeprefix("0x"))


@dataclass(frozen=True)
class ManualSa:
    """An SA pair configured on the DUT by hand (``extensions.ipsec.sas[i]``)."""

    name: str
    mode: str
    encr: str
    peer: str  # the tester's address the DUT's SAs and policies name
    gateway: str  # tunnel mode: the security gateway's (outer) address; transport: the peer's
    spi_in: int  # the DUT's inbound SA (tester -> DUT)
    spi_out: int
    key_in: KeySource
    key_out: KeySource
    auth_in: KeySource | None
    auth_out: KeySource | None
    window: int
    sequence_start: int | None  # the tester's first sequence number on spi_in (None: see association.py)


@dataclass(frozen=True)
class IpsecSettings:
    commands: dict[str, str]
    window: int
    sas: tuple[ManualSa, ...]
    source: str

    def manual(self, encr: str, mode: str) -> ManualSa | None:
        return next((s for s in self.sas if s.encr == encr and s.mode == mode), None)


def _bad(path, where, problem, fix):
    return TargetFileError(path, f"extensions.ipsec{where}", problem, fix)


def _key_source(path, base: Path, where: str, value) -> KeySource:
    if isinstance(value, str):
        return KeySource("inline", "", base, value)
    if isinstance(value, dict) and len(value) == 1:
        (kind, ref), = value.items()
        if kind in ("env", "file") and isinstance(ref, str) and ref:
            if kind == "env" and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", ref):
                raise _bad(path, where, f"{ref!r} is not an environment variable name", "write {env: NAME}")
            return KeySource(kind, ref, base)
    raise _bad(path, where, "is not a key source", "write {env: VARIABLE}, {file: PATH} or the key in hex")


def _int(path, where, value, lo, hi, what) -> int:
    if isinstance(value, str) and re.match(r"^0x[0-9a-fA-F]+$", value):
        value = int(value, 16)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise _bad(path, where, f"{value!r} is not {what}", f"write a number from {lo} to {hi:#x}")
    return value


def _address(path, where, value) -> str:
    try:
        a = ipaddress.IPv6Address(str(value))
    except ValueError:
        raise _bad(path, where, f"{value!r} is not an IPv6 address", "write the address, e.g. 2001:db8:1::100") from None
    if a.is_multicast or a.is_unspecified or a.is_link_local:
        raise _bad(path, where, f"{value} is not a global unicast address", "SAs here are between global addresses")
    return str(a)


def parse(raw, path) -> IpsecSettings:
    """``extensions.ipsec`` as settings; TargetFileError (one line) on the first problem."""
    if not isinstance(raw, dict):
        raise _bad(path, "", "is not a mapping", "see fixtures/targets/example-host.yaml")
    unknown = set(raw) - {"commands", "replay_window", "sas", "gate"}
    if unknown:
        raise _bad(path, "", f"unknown field {sorted(unknown)[0]!r}", "the fields are commands, replay_window, sas, gate")
    gate = raw.get("gate")
    if gate is not None:
        if not isinstance(gate, dict) or set(gate) - {"setup", "counters"}:
            raise _bad(path, ".gate", "must be {setup: COMMAND, counters: COMMAND}", "see docs/ipsec.md (the ESP gate)")
        for k in ("setup", "counters"):
            if not isinstance(gate.get(k), str) or not gate[k].strip():
                raise _bad(path, f".gate.{k}", "is not a command", "see docs/ipsec.md (the ESP gate)")
    base = Path(path).resolve().parent
    commands = raw.get("commands") or {}
    if not isinstance(commands, dict) or set(commands) - {"install", "flush", "state"}:
        raise _bad(path, ".commands", "must map install, flush and state to command templates",
                   "see docs/ipsec.md")
    for name, tmpl in commands.items():
        if not isinstance(tmpl, str) or not tmpl.strip():
            raise _bad(path, f".commands.{name}", "is not a command", "write the command as one string")
    if commands and not {"install", "flush"} <= set(commands):
        raise _bad(path, ".commands", "needs both install and flush", "flush removes what install added")
    for fld in re.findall(r"\{(\w+)\}", commands.get("install", "")):
        if fld not in INSTALL_FIELDS:
            raise _bad(path, ".commands.install", f"{{{fld}}} is not a field", f"use {', '.join(INSTALL_FIELDS)}")
    window = _int(path, ".replay_window", raw.get("replay_window", DEFAULT_WINDOW), 0, 1 << 20, "a window size")
    sas = []
    for i, s in enumerate(raw.get("sas") or []):
        w = f".sas[{i}]"
        if not isinstance(s, dict):
            raise _bad(path, w, "is not a mapping", "see fixtures/targets/example-host.yaml")
        known = {"name", "mode", "encr", "peer", "gateway", "spi_in", "spi_out", "key_in", "key_out", "auth_in",
                 "auth_out", "replay_window", "sequence_start"}
        if set(s) - known:
            raise _bad(path, w, f"unknown field {sorted(set(s) - known)[0]!r}", f"the fields are {', '.join(sorted(known))}")
        for req in ("mode", "encr", "peer", "spi_in", "spi_out", "key_in", "key_out"):
            if req not in s:
                raise _bad(path, w, f"missing {req}", "see docs/ipsec.md")
        if s["mode"] not in MODES:
            raise _bad(path, f"{w}.mode", f"{s['mode']!r} is not a mode", "write transport or tunnel")
        if s["encr"] not in ALGORITHMS:
            raise _bad(path, f"{w}.encr", f"{s['encr']!r} is not an algorithm the checks use",
                       f"write one of {', '.join(ALGORITHMS)}")
        alg = ALGORITHMS[s["encr"]]
        integ = alg.integ_key_len > 0
        for k in ("auth_in", "auth_out"):
            if integ and k not in s:
                raise _bad(path, w, f"missing {k} ({s['encr']} takes an HMAC-SHA2-256 key)", "add the integrity key")
            if not integ and k in s:
                raise _bad(path, f"{w}.{k}", f"{s['encr']} has no separate integrity key", f"remove {k}")
        spi_in = _int(path, f"{w}.spi_in", s["spi_in"], 256, 0xFFFFFFFF, "an SPI")
        spi_out = _int(path, f"{w}.spi_out", s["spi_out"], 256, 0xFFFFFFFF, "an SPI")
        peer = _address(path, f"{w}.peer", s["peer"])
        gateway = _address(path, f"{w}.gateway", s.get("gateway", peer))
        keys = {k: _key_source(path, base, f"{w}.{k}", s[k]) for k in ("key_in", "key_out", "auth_in", "auth_out")
                if k in s}
        for k, src in keys.items():
            want = alg.integ_key_len if k.startswith("auth") else alg.key_len
            try:
                got = len(src.read())
            except ValueError as exc:
                raise _bad(path, f"{w}.{k}", str(exc), "make the key readable where it says") from None
            if got != want:
                raise _bad(path, f"{w}.{k}", f"the key in {src.describe()} is {got} bytes; {s['encr']} takes {want}",
                           "give the SA's key" + (" (AES key and 4-byte salt)" if s["encr"] == "aes-gcm-16" else ""))
        start = s.get("sequence_start")
        sas.append(ManualSa(str(s.get("name", f"sa{i}")), s["mode"], s["encr"], peer, gateway, spi_in, spi_out,
                            keys["key_in"], keys["key_out"], keys.get("auth_in"), keys.get("auth_out"),
                            _int(path, f"{w}.replay_window", s.get("replay_window", window), 0, 1 << 20, "a window"),
                            None if start is None else _int(path, f"{w}.sequence_start", start, 1, 0xFFFFFFFF,
                                                            "a sequence number")))
    return IpsecSettings(dict(commands), window, tuple(sas), str(path))


def settings_of(target) -> IpsecSettings | None:
    raw = (target.extensions or {}).get("ipsec")
    return None if raw is None else parse(raw, target.source or "target")


def validate_extension(path, raw) -> None:
    """Target loading's hook (target.py EXTENSION_CHECKS)."""
    parse(raw, path)
