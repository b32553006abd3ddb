"""Certificates for IKE_AUTH with signatures (RFC 7296 §3.6, RFC 7427): the
peer's end-entity certificate taken from its CERT payload and checked
against the trust anchors, and a small CA for the lab (ECDSA P-256) whose
certificates the lab's strongSwan and the tester both use."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .codec import Cert, Message
from .const import CertEncoding


def peer_public_key(msg: Message, trust: list[bytes]):
    """The public key of the end-entity certificate in ``msg``'s first CERT payload, once it chains directly
    to one of ``trust`` (DER CA certificates) and is within its validity; ProtocolError otherwise."""
    from .peer import ProtocolError

    certs = [p for p in msg.all_payloads() if isinstance(p, Cert) and not p.request]
    if not certs:
        raise ProtocolError("the peer signed its AUTH but sent no CERT payload (the tester has no copy of its "
                            "certificate)")
    if certs[0].encoding != CertEncoding.X509_SIGNATURE:
        raise ProtocolError(f"CERT encoding {certs[0].encoding}, not X.509 Certificate - Signature (4)")
    try:
        ee = x509.load_der_x509_certificate(certs[0].data)
    except ValueError as exc:
        raise ProtocolError(f"the peer's CERT payload is not a DER X.509 certificate: {exc}") from None
    now = datetime.datetime.now(datetime.UTC)
    if not ee.not_valid_before_utc <= now <= ee.not_valid_after_utc:
        raise ProtocolError(f"the peer's certificate {ee.subject.rfc4514_string()} is outside its validity "
                            f"({ee.not_valid_before_utc:%Y-%m-%d} to {ee.not_valid_after_utc:%Y-%m-%d})")
    for der in trust:
        ca = x509.load_der_x509_certificate(der)
        try:
            ee.verify_directly_issued_by(ca)
            return ee.public_key()
        except (ValueError, TypeError, Exception):  # InvalidSignature, name mismatch
            continue
    raise ProtocolError(f"the peer's certificate {ee.subject.rfc4514_string()} (issuer "
                        f"{ee.issuer.rfc4514_string()}) is not issued by a trusted CA")


def certreq_data(trust: list[bytes]) -> bytes:
    """A CERTREQ's Certification Authority field (RFC 7296 §3.7): the SHA-1 hashes of the trusted CAs'
    SubjectPublicKeyInfo, concatenated."""
    out = b""
    for der in trust:
        spki = x509.load_der_x509_certificate(der).public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        out += hashlib.sha1(spki).digest()
    return out


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "v6gate lab"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn: str = "v6gate lab CA", days: int = 30):
    """(private key, DER certificate) of a self-signed CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert.public_bytes(serialization.Encoding.DER)


def make_cert(ca_key, ca_der: bytes, cn: str, san: str, days: int = 30):
    """(private key, DER certificate) of an end entity named ``san`` (an IP address or a DNS name)."""
    ca = x509.load_der_x509_certificate(ca_der)
    key = ec.generate_private_key(ec.SECP256R1())
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(san))
    except ValueError:
        alt = x509.DNSName(san)
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    return key, cert.public_bytes(serialization.Encoding.DER)


def pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
