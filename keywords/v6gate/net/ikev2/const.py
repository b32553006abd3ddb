"""IKEv2 numbers (RFC 7296 §3, IANA "Internet Key Exchange Version 2 (IKEv2)
Parameters") and the RFC 8247 status of each algorithm."""

from __future__ import annotations

from enum import IntEnum

IKE_PORT, NATT_PORT = 500, 4500
VERSION = 0x20  # major 2, minor 0
HEADER_LEN = 28
#: a message this long or longer is refused by the decoder (RFC 7296 §2: an implementation MUST accept 1280
#: octets; 64 KiB is the UDP ceiling)
MAX_MESSAGE = 65535


class Exchange(IntEnum):
    IKE_SA_INIT = 34
    IKE_AUTH = 35
    CREATE_CHILD_SA = 36
    INFORMATIONAL = 37


class Flag:
    INITIATOR = 0x08
    VERSION = 0x10
    RESPONSE = 0x20


class PT(IntEnum):
    """Payload types (RFC 7296 §3.2; SKF RFC 7383)."""
    NONE = 0
    SA = 33
    KE = 34
    IDi = 35
    IDr = 36
    CERT = 37
    CERTREQ = 38
    AUTH = 39
    NONCE = 40
    NOTIFY = 41
    DELETE = 42
    VENDOR = 43
    TSi = 44
    TSr = 45
    SK = 46
    CP = 47
    EAP = 48
    SKF = 53


class Proto(IntEnum):
    IKE = 1
    AH = 2
    ESP = 3


class TT(IntEnum):
    """Transform types (RFC 7296 §3.3.2)."""
    ENCR = 1
    PRF = 2
    INTEG = 3
    DH = 4
    ESN = 5


class Encr(IntEnum):
    DES_IV64 = 1
    DES = 2
    TRIPLE_DES = 3
    NULL = 11
    AES_CBC = 12
    AES_CTR = 13
    AES_CCM_8 = 14
    AES_CCM_16 = 16
    AES_GCM_8 = 18
    AES_GCM_12 = 19
    AES_GCM_16 = 20
    NULL_AUTH_AES_GMAC = 21
    CHACHA20_POLY1305 = 28


class Prf(IntEnum):
    HMAC_MD5 = 1
    HMAC_SHA1 = 2
    AES128_XCBC = 4
    HMAC_SHA2_256 = 5
    HMAC_SHA2_384 = 6
    HMAC_SHA2_512 = 7
    AES128_CMAC = 8


class Integ(IntEnum):
    NONE = 0
    HMAC_MD5_96 = 1
    HMAC_SHA1_96 = 2
    AES_XCBC_96 = 5
    HMAC_SHA1_160 = 7
    HMAC_SHA2_256_128 = 12
    HMAC_SHA2_384_192 = 13
    HMAC_SHA2_512_256 = 14


class Group(IntEnum):
    NONE = 0
    MODP_768 = 1
    MODP_1024 = 2
    MODP_1536 = 5
    MODP_2048 = 14
    MODP_3072 = 15
    MODP_4096 = 16
    ECP_256 = 19
    ECP_384 = 20
    ECP_521 = 21
    MODP_1024_160 = 22
    MODP_2048_224 = 23
    MODP_2048_256 = 24
    CURVE25519 = 31
    CURVE448 = 32


class Esn(IntEnum):
    NO = 0
    YES = 1


#: transform attribute "Key Length" (TV format: the AF bit set)
ATTR_KEY_LENGTH = 14


class IdType(IntEnum):
    IPV4_ADDR = 1
    FQDN = 2
    RFC822_ADDR = 3
    IPV6_ADDR = 5
    DER_ASN1_DN = 9
    DER_ASN1_GN = 10
    KEY_ID = 11


class AuthMethod(IntEnum):
    RSA_SIG = 1
    PSK = 2
    DSS = 3
    ECDSA_256 = 9
    ECDSA_384 = 10
    ECDSA_521 = 11
    DIGITAL_SIGNATURE = 14


class TsType(IntEnum):
    IPV4_ADDR_RANGE = 7
    IPV6_ADDR_RANGE = 8


class CertEncoding(IntEnum):
    X509_SIGNATURE = 4


class Notify(IntEnum):
    # errors (RFC 7296 §3.10.1)
    UNSUPPORTED_CRITICAL_PAYLOAD = 1
    INVALID_IKE_SPI = 4
    INVALID_MAJOR_VERSION = 5
    INVALID_SYNTAX = 7
    INVALID_MESSAGE_ID = 9
    INVALID_SPI = 11
    NO_PROPOSAL_CHOSEN = 14
    INVALID_KE_PAYLOAD = 17
    AUTHENTICATION_FAILED = 24
    SINGLE_PAIR_REQUIRED = 34
    NO_ADDITIONAL_SAS = 35
    INTERNAL_ADDRESS_FAILURE = 36
    FAILED_CP_REQUIRED = 37
    TS_UNACCEPTABLE = 38
    INVALID_SELECTORS = 39
    TEMPORARY_FAILURE = 43
    CHILD_SA_NOT_FOUND = 44
    # status
    INITIAL_CONTACT = 16384
    SET_WINDOW_SIZE = 16385
    ADDITIONAL_TS_POSSIBLE = 16386
    IPCOMP_SUPPORTED = 16387
    NAT_DETECTION_SOURCE_IP = 16388
    NAT_DETECTION_DESTINATION_IP = 16389
    COOKIE = 16390
    USE_TRANSPORT_MODE = 16391
    HTTP_CERT_LOOKUP_SUPPORTED = 16392
    REKEY_SA = 16393
    ESP_TFC_PADDING_NOT_SUPPORTED = 16394
    NON_FIRST_FRAGMENTS_ALSO = 16395
    MOBIKE_SUPPORTED = 16396
    MULTIPLE_AUTH_SUPPORTED = 16404
    EAP_ONLY_AUTHENTICATION = 16417
    IKEV2_FRAGMENTATION_SUPPORTED = 16430
    SIGNATURE_HASH_ALGORITHMS = 16431
    REDIRECT_SUPPORTED = 16406


#: an error notify type is below 16384 (RFC 7296 §3.10.1)
ERROR_NOTIFY_LIMIT = 16384


def name(enum: type[IntEnum], value: int) -> str:
    """The IANA name of ``value`` in ``enum``, else the bare number."""
    try:
        return enum(value).name
    except ValueError:
        return str(value)


#: RFC 8247 §3.1.1-§3.1.4: the requirement level of each IKE SA transform (IANA numbers not listed: none).
#: "MUST-" and "SHOULD NOT"/"MAY" entries are the ones being phased out; a DUT that accepts a proposal made
#: only of phased-out transforms (3DES, HMAC-SHA1, MODP-1024) lets an attacker who can strip the strong
#: proposals force the IKE SA down to them.
RFC8247 = {
    TT.ENCR: {Encr.AES_CBC: "MUST", Encr.CHACHA20_POLY1305: "SHOULD", Encr.AES_GCM_16: "SHOULD",
              Encr.AES_CCM_8: "SHOULD", Encr.TRIPLE_DES: "MAY", Encr.DES: "MUST NOT"},
    TT.PRF: {Prf.HMAC_SHA2_256: "MUST", Prf.HMAC_SHA2_512: "SHOULD+", Prf.HMAC_SHA1: "MUST-",
             Prf.AES128_XCBC: "SHOULD", Prf.HMAC_MD5: "MUST NOT"},
    TT.INTEG: {Integ.HMAC_SHA2_256_128: "MUST", Integ.HMAC_SHA2_512_256: "SHOULD", Integ.HMAC_SHA1_96: "MUST-",
               Integ.AES_XCBC_96: "SHOULD", Integ.HMAC_MD5_96: "MUST NOT"},
    TT.DH: {Group.MODP_2048: "MUST", Group.ECP_256: "SHOULD", Group.CURVE25519: "SHOULD",
            Group.MODP_1536: "SHOULD NOT", Group.ECP_384: "MAY", Group.ECP_521: "MAY", Group.MODP_3072: "MAY",
            Group.MODP_4096: "MAY", Group.MODP_1024: "SHOULD NOT", Group.MODP_768: "MUST NOT",
            Group.MODP_1024_160: "SHOULD NOT", Group.MODP_2048_224: "SHOULD NOT",
            Group.MODP_2048_256: "SHOULD NOT"},
}
#: the phased-out transforms the negative checks offer alone (RFC 8247: 3DES MAY and "expected to be
#: deprecated", HMAC-SHA1 MUST-, MODP-1024 SHOULD NOT; RFC 8221 §5: 3DES SHOULD NOT for ESP)
PHASED_OUT = {TT.ENCR: {Encr.TRIPLE_DES, Encr.DES}, TT.PRF: {Prf.HMAC_SHA1, Prf.HMAC_MD5},
              TT.INTEG: {Integ.HMAC_SHA1_96, Integ.HMAC_MD5_96},
              TT.DH: {Group.MODP_1024, Group.MODP_768, Group.MODP_1536}}
