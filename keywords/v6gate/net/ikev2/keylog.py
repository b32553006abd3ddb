"""Wireshark's IKEv2 and ESP decryption tables for a check's pcap, so a
reader sees inside the SK payloads and the ESP packets.

Two files next to the pcap, in the formats of Wireshark's
``ikev2_decryption_table`` and ``esp_sa`` UAT files (as strongSwan's
save-keys plugin writes them, which Debian 12 does not ship; AES-GCM ESP as Wireshark 4.0 names it):

    tshark -r CHECK.pcapng -o "uat:ikev2_decryption_table:$(head -1 CHECK.ikev2_decryption_table)" ...

or copy them into a Wireshark profile directory (``wireshark_command``
prints the whole tshark line).  Keys come from the tester's own SAs (exact)
or, for the interoperability checks, from the tester-side charon's log,
each candidate proven against the capture before it is written (``from_
charon_log``).  They are the SAs' session keys, not the pre-shared key, which
is never written.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from .const import Encr, Integ
from .proposals import Chosen, is_aead

IKE_ENCR = {(Encr.TRIPLE_DES, None): "3DES [RFC2451]", (Encr.NULL, None): "NULL [RFC2410]",
            **{(Encr.AES_CBC, b): f"AES-CBC-{b} [RFC3602]" for b in (128, 192, 256)},
            **{(Encr.AES_GCM_16, b): f"AES-GCM-{b} with 16 octet ICV [RFC5282]" for b in (128, 192, 256)},
            **{(Encr.AES_GCM_12, b): f"AES-GCM-{b} with 12 octet ICV [RFC5282]" for b in (128, 192, 256)},
            **{(Encr.AES_GCM_8, b): f"AES-GCM-{b} with 8 octet ICV [RFC5282]" for b in (128, 192, 256)}}
IKE_INTEG = {Integ.HMAC_MD5_96: "HMAC_MD5_96 [RFC2403]", Integ.HMAC_SHA1_96: "HMAC_SHA1_96 [RFC2404]",
             Integ.HMAC_SHA2_256_128: "HMAC_SHA2_256_128 [RFC4868]",
             Integ.HMAC_SHA2_384_192: "HMAC_SHA2_384_192 [RFC4868]",
             Integ.HMAC_SHA2_512_256: "HMAC_SHA2_512_256 [RFC4868]", None: "NONE [RFC4306]"}
ESP_ENCR = {Encr.NULL: "NULL", Encr.TRIPLE_DES: "TripleDes-CBC [RFC2451]", Encr.AES_CBC: "AES-CBC [RFC3602]",
            Encr.AES_CTR: "AES-CTR [RFC3686]", Encr.AES_GCM_8: "AES-GCM with 8 octet ICV [RFC4106]",
            Encr.AES_GCM_12: "AES-GCM with 12 octet ICV [RFC4106]", Encr.AES_GCM_16: "AES-GCM with 16 octet ICV [RFC4106]"}
ESP_INTEG = {Integ.HMAC_SHA1_96: "HMAC-SHA-1-96 [RFC2404]", Integ.HMAC_MD5_96: "HMAC-MD5-96 [RFC2403]",
             Integ.HMAC_SHA2_256_128: "HMAC-SHA-256-128 [RFC4868]",
             Integ.HMAC_SHA2_384_192: "HMAC-SHA-384-192 [RFC4868]",
             Integ.HMAC_SHA2_512_256: "HMAC-SHA-512-256 [RFC4868]"}


@dataclass(frozen=True)
class IkeRecord:
    spi_i: bytes
    spi_r: bytes
    chosen: Chosen
    sk_ei: bytes
    sk_er: bytes
    sk_ai: bytes
    sk_ar: bytes

    def line(self) -> str | None:
        enc = IKE_ENCR.get((self.chosen.encr, self.chosen.key_bits if self.chosen.encr != Encr.TRIPLE_DES else None))
        integ = IKE_INTEG.get(None if is_aead(self.chosen.encr) else self.chosen.integ)
        if enc is None or integ is None:
            return None
        return (f"{self.spi_i.hex()},{self.spi_r.hex()},{self.sk_ei.hex()},{self.sk_er.hex()},\"{enc}\","
                f"{self.sk_ai.hex()},{self.sk_ar.hex()},\"{integ}\"")


@dataclass(frozen=True)
class EspRecord:
    src: str
    dst: str
    spi: bytes
    chosen: Chosen
    encr_key: bytes
    integ_key: bytes

    def line(self) -> str | None:
        enc = ESP_ENCR.get(self.chosen.encr)
        if enc is None:
            return None
        if is_aead(self.chosen.encr):
            integ = "NULL"  # Wireshark 4.0 (Debian 12) refuses any other with AES-GCM; the tag is the ICV
        else:
            integ = ESP_INTEG.get(self.chosen.integ)
            if integ is None:
                return None
        return (f"\"IPv6\",\"{self.src}\",\"{self.dst}\",\"0x{self.spi.hex()}\",\"{enc}\",\"0x{self.encr_key.hex()}\","
                f"\"{integ}\",\"0x{self.integ_key.hex()}\"")


def ike_record(ike) -> IkeRecord:
    """The record of an ``sa.IkeSa`` the tester holds."""
    k = ike.keys
    return IkeRecord(ike.spi_i, ike.spi_r, ike.chosen, k.sk_ei, k.sk_er, k.sk_ai, k.sk_ar)


def esp_records(child, local: str, remote: str) -> list[EspRecord]:
    """Both directions of a ``sa.ChildSa`` the tester holds (``local`` is the tester's address)."""
    return [EspRecord(local, remote, child.spi_out, child.chosen, child.encr_out, child.integ_out),
            EspRecord(remote, local, child.spi_in, child.chosen, child.encr_in, child.integ_in)]


def write(pcap: str | Path, ike: list[IkeRecord], esp: list[EspRecord]) -> list[Path]:
    """Write the tables next to ``pcap`` (``<stem>.ikev2_decryption_table``, ``<stem>.esp_sa``); the paths."""
    pcap = Path(pcap)
    out = []
    for suffix, records in ((".ikev2_decryption_table", ike), (".esp_sa", esp)):
        lines = list(dict.fromkeys(ln for ln in (r.line() for r in records) if ln))
        if not lines:
            continue
        path = pcap.with_suffix(suffix)
        path.write_text("\n".join(lines) + "\n")
        out.append(path)
    return out


def wireshark_command(pcap: str | Path) -> str:
    """A tshark command line that reads ``pcap`` with its tables."""
    pcap = Path(pcap)
    args = ["tshark", "-r", str(pcap)]
    for suffix, uat in ((".ikev2_decryption_table", "ikev2_decryption_table"), (".esp_sa", "esp_sa")):
        p = pcap.with_suffix(suffix)
        if p.exists():
            for ln in p.read_text().splitlines():
                args += ["-o", f"uat:{uat}:{ln}"]
    if pcap.with_suffix(".esp_sa").exists():
        args += ["-o", "esp.enable_encryption_decode:TRUE", "-o", "esp.enable_null_encryption_decode_heuristic:TRUE"]
    return shlex.join(args)


# -- keys from a tester-side charon's log (its filelog at ike/chd level 4) ------------------------------------------
_HEADER = re.compile(r"\[(?:IKE|CHD)\] (Sk_\w+ secret|encryption (?:initiator|responder) key|integrity "
                     r"(?:initiator|responder) key) => (\d+) bytes")
_HEX = re.compile(r"\[(?:IKE|CHD)\]\s+\d+: ((?:[0-9A-F]{2} )+)")


def charon_key_blocks(log_text: str) -> list[dict[str, bytes]]:
    """Each IKE SA's {Sk_d..Sk_pr} and each CHILD_SA's {encryption/integrity initiator/responder key} that
    charon derived, in the order of the log (a dict per derivation)."""
    blocks: list[dict[str, bytes]] = []
    name, want, buf = None, 0, b""
    for line in log_text.splitlines():
        m = _HEADER.search(line)
        if m:
            name, want, buf = m.group(1), int(m.group(2)), b""
            if want == 0:
                _store(blocks, name, b"")
                name = None
            continue
        if name is not None:
            h = _HEX.search(line)
            if h:
                buf += bytes.fromhex(h.group(1).replace(" ", ""))
                if len(buf) >= want:
                    _store(blocks, name, buf[:want])
                    name = None
    return blocks


def _store(blocks: list[dict[str, bytes]], name: str, value: bytes) -> None:
    kind = "ike" if name.startswith("Sk_") else "child"
    key = name.split()[0] if kind == "ike" else name.replace(" key", "")
    first = "Sk_d" if kind == "ike" else "encryption initiator"
    if not blocks or key == first or blocks[-1].get("_kind") != kind or key in blocks[-1]:
        blocks.append({"_kind": kind})
    blocks[-1][key] = value
