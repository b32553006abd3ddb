"""Proposals as people write them, and the choice a responder makes
(RFC 7296 §2.7, §3.3).

A proposal string uses strongSwan's keywords, so a target file, the lab's
swanctl.conf and a check name the same thing: ``aes128-sha256-modp2048``
(IKE: encryption, integrity, PRF from the integrity unless ``prfsha*`` is
given, DH groups), ``aes256gcm16-prfsha256-ecp256`` (an AEAD),
``aes128gcm16-esn`` (ESP).  Several keywords of one type make one proposal
offering each (``aes128-aes256-sha256-modp2048-ecp256``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .codec import Proposal, Transform
from .const import TT, Encr, Esn, Group, Integ, Prf, Proto

_ENCR = {"3des": (Encr.TRIPLE_DES, None), "null": (Encr.NULL, None), "chacha20poly1305": (Encr.CHACHA20_POLY1305, None),
         "des": (Encr.DES, None)}
_INTEG = {"sha256": Integ.HMAC_SHA2_256_128, "sha2_256": Integ.HMAC_SHA2_256_128, "sha384": Integ.HMAC_SHA2_384_192,
          "sha512": Integ.HMAC_SHA2_512_256, "sha1": Integ.HMAC_SHA1_96, "sha": Integ.HMAC_SHA1_96,
          "md5": Integ.HMAC_MD5_96}
_PRF = {"prfsha256": Prf.HMAC_SHA2_256, "prfsha384": Prf.HMAC_SHA2_384, "prfsha512": Prf.HMAC_SHA2_512,
        "prfsha1": Prf.HMAC_SHA1, "prfmd5": Prf.HMAC_MD5}
_PRF_OF_INTEG = {Integ.HMAC_SHA2_256_128: Prf.HMAC_SHA2_256, Integ.HMAC_SHA2_384_192: Prf.HMAC_SHA2_384,
                 Integ.HMAC_SHA2_512_256: Prf.HMAC_SHA2_512, Integ.HMAC_SHA1_96: Prf.HMAC_SHA1,
                 Integ.HMAC_MD5_96: Prf.HMAC_MD5}
_DH = {"modp768": Group.MODP_768, "modp1024": Group.MODP_1024, "modp1536": Group.MODP_1536,
       "modp2048": Group.MODP_2048, "modp3072": Group.MODP_3072, "modp4096": Group.MODP_4096,
       "ecp256": Group.ECP_256, "ecp384": Group.ECP_384, "ecp521": Group.ECP_521, "curve25519": Group.CURVE25519,
       "x25519": Group.CURVE25519, "curve448": Group.CURVE448, "x448": Group.CURVE448}
_AEAD = {8: Encr.AES_GCM_8, 12: Encr.AES_GCM_12, 16: Encr.AES_GCM_16, 64: Encr.AES_GCM_8, 96: Encr.AES_GCM_12,
         128: Encr.AES_GCM_16}


class ProposalError(ValueError):
    """A proposal string with a keyword this implementation does not know (which one)."""


def parse(text: str, proto: int = Proto.IKE, num: int = 1) -> Proposal:
    """One proposal from a strongSwan-style string (see the module docstring)."""
    encrs, integs, prfs, groups, esns = [], [], [], [], []
    for word in text.strip().lower().split("-"):
        m = re.fullmatch(r"aes(128|192|256)(?:gcm(8|12|16|64|96|128))?", word)
        if m:
            bits = int(m.group(1))
            encrs.append(Transform(TT.ENCR, _AEAD[int(m.group(2))] if m.group(2) else Encr.AES_CBC, bits))
        elif word in _ENCR:
            encrs.append(Transform(TT.ENCR, _ENCR[word][0]))
        elif word in _INTEG:
            integs.append(Transform(TT.INTEG, _INTEG[word]))
        elif word in _PRF:
            prfs.append(Transform(TT.PRF, _PRF[word]))
        elif word in _DH:
            groups.append(Transform(TT.DH, _DH[word]))
        elif word in ("esn", "noesn"):
            esns.append(Transform(TT.ESN, Esn.YES if word == "esn" else Esn.NO))
        else:
            raise ProposalError(f"proposal {text!r}: {word!r} is not a known algorithm keyword")
    if not encrs:
        raise ProposalError(f"proposal {text!r} names no encryption algorithm")
    aead = all(is_aead(t.id) for t in encrs)
    if proto == Proto.IKE:
        if not aead and not integs:
            raise ProposalError(f"IKE proposal {text!r} names no integrity algorithm")
        if not prfs:
            prfs = [Transform(TT.PRF, _PRF_OF_INTEG[t.id]) for t in integs if t.id in _PRF_OF_INTEG] or \
                   [Transform(TT.PRF, Prf.HMAC_SHA2_256)]
        if not groups:
            raise ProposalError(f"IKE proposal {text!r} names no Diffie-Hellman group")
        if esns:
            raise ProposalError(f"IKE proposal {text!r}: ESN is an ESP transform")
        return Proposal(num, proto, encrs + prfs + ([] if aead else integs) + groups)
    if prfs:
        raise ProposalError(f"ESP proposal {text!r}: a PRF is an IKE transform")
    if not aead and not integs:
        raise ProposalError(f"ESP proposal {text!r} names no integrity algorithm")
    return Proposal(num, proto, encrs + ([] if aead else integs) + groups + (esns or [Transform(TT.ESN, Esn.NO)]))


def is_aead(encr_id: int) -> bool:
    return encr_id in (Encr.AES_GCM_8, Encr.AES_GCM_12, Encr.AES_GCM_16, Encr.AES_CCM_8, Encr.AES_CCM_16,
                       Encr.CHACHA20_POLY1305)


def text(p: Proposal) -> str:
    """A proposal back as a strongSwan-style string (for notes and swanctl.conf)."""
    words = []
    for t in p.transforms:
        if t.type == TT.ENCR:
            if t.id == Encr.AES_CBC:
                words.append(f"aes{t.key_length}")
            elif t.id in (Encr.AES_GCM_8, Encr.AES_GCM_12, Encr.AES_GCM_16):
                words.append(f"aes{t.key_length}gcm{ {Encr.AES_GCM_8: 8, Encr.AES_GCM_12: 12}.get(t.id, 16)}")
            else:
                words.append(next((k for k, v in _ENCR.items() if v[0] == t.id), f"encr{t.id}"))
        elif t.type == TT.INTEG:
            words.append(next((k for k, v in _INTEG.items() if v == t.id), f"integ{t.id}"))
        elif t.type == TT.PRF:
            words.append(next((k for k, v in _PRF.items() if v == t.id), f"prf{t.id}"))
        elif t.type == TT.DH:
            words.append(next((k for k, v in _DH.items() if v == t.id), f"dh{t.id}"))
        elif t.type == TT.ESN:
            words.append("esn" if t.id == Esn.YES else "noesn")
    return "-".join(words)


@dataclass(frozen=True)
class Chosen:
    """One transform of each type, as a responder picked them (or a response carried them)."""
    proto: int
    encr: int
    key_bits: int | None
    integ: int | None
    prf: int | None
    group: int | None
    esn: int | None
    num: int = 1
    spi: bytes = b""

    def proposal(self) -> Proposal:
        ts = [Transform(TT.ENCR, self.encr, self.key_bits)]
        if self.prf is not None:
            ts.append(Transform(TT.PRF, self.prf))
        if self.integ is not None:
            ts.append(Transform(TT.INTEG, self.integ))
        if self.group:
            ts.append(Transform(TT.DH, self.group))
        if self.esn is not None:
            ts.append(Transform(TT.ESN, self.esn))
        return Proposal(self.num, self.proto, ts, self.spi)

    def label(self) -> str:
        return text(self.proposal())


def chosen_from(p: Proposal) -> Chosen:
    """What a responder's one-proposal SA payload says it chose; ProposalError when it is not one of each type."""
    for ttype in (TT.ENCR, TT.PRF, TT.INTEG, TT.DH, TT.ESN):
        if len(p.of_type(ttype)) > 1:
            raise ProposalError(f"the chosen proposal {p.num} carries {len(p.of_type(ttype))} transforms of type "
                                f"{ttype.name}, not one (RFC 7296 §3.3.6)")
    e = p.first(TT.ENCR)
    if e is None:
        raise ProposalError(f"the chosen proposal {p.num} has no encryption transform")
    i, f, g, s = p.first(TT.INTEG), p.first(TT.PRF), p.first(TT.DH), p.first(TT.ESN)
    return Chosen(p.proto, e.id, e.key_length, i.id if i else None, f.id if f else None, g.id if g else None,
                  s.id if s else None, p.num, p.spi)


def choose(offered: list[Proposal], acceptable: list[Proposal], *, want_group: bool = True) -> Chosen | None:
    """The responder's choice (§2.7): the first offered proposal of which every transform type the acceptable
    proposals use has an acceptable transform (in the offerer's order); None: NO_PROPOSAL_CHOSEN."""
    for off in offered:
        for acc in acceptable:
            if off.proto != acc.proto:
                continue
            pick: dict[int, Transform | None] = {}
            ok = True
            for ttype in (TT.ENCR, TT.PRF, TT.INTEG, TT.DH, TT.ESN):
                mine = acc.of_type(ttype)
                theirs = off.of_type(ttype)
                if not mine and not theirs:
                    pick[ttype] = None
                    continue
                if ttype == TT.INTEG and not mine and all(is_aead(t.id) for t in off.of_type(TT.ENCR)):
                    pick[ttype] = None  # an AEAD needs no integrity transform
                    continue
                if ttype == TT.DH and (not want_group or not mine):
                    # no group wanted (an IKE_AUTH CHILD_SA), or none configured: the offer's first, if any
                    # (a CREATE_CHILD_SA with a KE of that group)
                    pick[ttype] = theirs[0] if (want_group and theirs) else None
                    continue
                match = next((t for t in theirs if any(t.id == m.id and t.key_length == m.key_length
                                                       for m in mine)), None)
                if match is None:
                    ok = False
                    break
                pick[ttype] = match
            if ok:
                e = pick[TT.ENCR]
                return Chosen(off.proto, e.id, e.key_length, *(pick[x].id if pick[x] else None
                                                               for x in (TT.INTEG, TT.PRF, TT.DH, TT.ESN)),
                              num=off.num, spi=off.spi)
    return None


def offered_groups(proposals: list[Proposal]) -> list[int]:
    out = []
    for p in proposals:
        for t in p.of_type(TT.DH):
            if t.id not in out:
                out.append(t.id)
    return out

