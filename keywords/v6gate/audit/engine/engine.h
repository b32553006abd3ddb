/* The audit engine in C: every frame of a capture dissected and judged
 * without per-frame Python (core.py loads it).
 *
 * It is the Python path held in C: the dissector (dissect.py: tshark's
 * fields as ``tshark -T fields -E occurrence=a`` shows them) and the
 * per-host rules (hosts.py: Audit.add).  Both stay the reference: the
 * unit tests compare this engine's host state with the Python path's,
 * field by field, on every fixture, on synthetic captures, on generated
 * rule-edge captures and on tens of thousands of mutated captures.
 *
 * How it mirrors them:
 * - A field is kept as the rules read it: its first occurrence and how
 *   many there are (the fields of the packet inside an ICMP error follow
 *   the outer ones), all occurrences where the rules read them all (RDNSS,
 *   PREF64, DNS answers, the Parameter Request List).
 * - Where Python raises on a malformed frame (an index or unpack past the
 *   end) the dissection stops with what it had (NEED: a longjmp).
 * - Times: the rules' float is Python's float(frame.time_epoch), the
 *   correctly rounded ns / 1e9 (``t_of``: strtod of the same text; both
 *   round correctly); the state keeps integer ns and Python makes the
 *   floats when it builds the hosts.
 * - Strings are formatted as dissect.py formats them: glibc's inet_ntop
 *   (which Python's socket.inet_ntop calls), tshark's DNS name escapes.
 *
 * Files: util.c (growable buffers, text, time), dissect.c, rules.c (hosts
 * and Audit.add), walk.c (the reader's buffer and the API), export.c (the
 * result as JSON, host by host), and the report's per-host part: judge.c
 * (findings.py's findings and assets.host_record), pyfmt.c (numbers and
 * escapes as Python writes them), report.c (each host's outputs, the API).
 */
#ifndef V6GATE_AUDIT_ENGINE_H
#define V6GATE_AUDIT_ENGINE_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

enum { GO = 0, UNSUPPORTED = 5, NOMEM = 6 };
enum { MAIL_POS = 0, MAIL_FRAMES = 1, MAIL_WORDS = 2 };

/* hosts.py's bounds and capture.py's MAX_RECORD, written there once: core.py builds with them (DEFINES, -D) */
#if !defined(MAX_ADDRESSES) || !defined(MAX_RESOLVERS) || !defined(MAX_NAMES) || !defined(MAX_DAD) \
    || !defined(MAX_OFFERS) || !defined(MAX_SKIPPED) || !defined(MAX_RS) || !defined(MAX_PREF64) \
    || !defined(MAX_LIFETIMES) || !defined(MIN_V6ONLY_WAIT_S) || !defined(MAX_RECORD)
#error "build the engine with the bounds of audit/hosts.py and capture.py (core.DEFINES as -D flags)"
#endif

enum { K_ARP = 0, K_RFC8925 = 1, K_DHCPV4 = 2, K_IPV4 = 3, NKINDS = 4 };

/* ---- growable things (util.c); an allocation failure longjmps to the current call's ``oom_jump`` ---- */
typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

typedef struct {  /* a vector of fixed-size items: grows 4, 8, 16, ... */
    uint8_t *p;
    uint32_t n, cap;
} vec;

#define VEC_AT(v, T, i) (((T *)(v).p) + (i))

extern jmp_buf *oom_jump;
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s, size_t n);
void sb_grow(sbuf *b, size_t more);
void sb_add(sbuf *b, const char *s, size_t n);
void sb_str(sbuf *b, const char *s);
void sb_clear(sbuf *b);
void sb_fmt(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *vec_push(vec *v, size_t item);
int vec_has(const vec *v, const void *item, size_t size);
void put_ntop6(sbuf *b, const uint8_t *a);
void put_ntop4(sbuf *b, const uint8_t *a);
void put_mac(sbuf *b, const uint8_t *m);
double t_of(int64_t ns);
uint64_t hash_bytes(const uint8_t *p, int n, uint64_t h);

/* ---- the fields of one frame (tshark.FIELDS) as the rules read them (dissect.c) ---- */
typedef struct {
    const uint8_t *at;  /* in the frame */
    unsigned plc;       /* PREF64: its Prefix Length Code */
} ref_t;

typedef struct {
    int64_t ns;
    uint32_t orig;
    int eth;                        /* eth.src and eth.dst */
    uint8_t esrc[6], edst[6];
    int etype_n, vlan_n;
    unsigned etype, vlan;
    int ip_n;                       /* ip.src, ip.dst, ip.checksum.status: the first */
    uint8_t ip_src[4], ip_dst[4];
    int ip_ck;
    int icmp_n;
    int hlim_n, v6src_n, v6dst_n;
    unsigned hlim;
    uint8_t v6_src[16], v6_dst[16];
    int arp_n, spa_n;
    unsigned arp_op;
    uint8_t spa[4], tpa[4];
    int udp_n;                      /* the UDP ports and checksum status */
    unsigned sport, dport;
    int udp_ck;
    int tflags_n, tck_n;
    unsigned syn, ack;
    int tcp_ck;
    int yi_n, ch_n, dtype_n, opts_108;
    uint8_t yiaddr[4], chaddr[6];
    unsigned dtype;
    int resp_n, qname_n, qtype_n;
    unsigned resp, qtype;
    size_t qname_len;               /* the first name's text, in ctx.qname */
    int i6_n;
    unsigned i6type;
    int i6_ck;
    int nst_n;
    uint8_t nst[16];
    int ralt_n, rao_n;
    unsigned ralt, rao;
} fields_t;

/* ---- per-host state (hosts.Host) ---- */
typedef struct {
    int64_t count, first_ns, first_frame;
    char *first;
} seen_t;

typedef struct { uint8_t a[16]; int64_t ns, frame; uint8_t probed; } v6use_t;
typedef struct { uint8_t a[16]; int64_t ns; } dad_t;
typedef struct { uint8_t a[16]; int64_t ns, frame; } skipped_t;
typedef struct { unsigned msg; int w108; seen_t seen; } dhcpc_t;
typedef struct { double t; int64_t ns, frame, value; int has_yi, has_srv; uint8_t yi[4], srv[4]; } offer_t;
typedef struct { int family, has; uint8_t a[16]; int64_t n; } dns_t;
typedef struct { unsigned qt; int64_t n; } qtype_t;
typedef struct { uint8_t a[16]; unsigned plen; } pfx_t;
/* a set of 16-byte addresses that keeps its order (Python's unbounded sets): a vector, indexed by an
 * open-addressing table once it outgrows a linear search */
typedef struct {
    vec items;         /* 16 bytes each */
    uint32_t *index;   /* item + 1, 0 empty */
    uint32_t cap;
} aset;

typedef struct { char *name; aset a4, a6; } answer_t;  /* A (its 4 bytes, zeros after), AAAA */
typedef struct { char *name; int family, dst4; int64_t ns, frame; uint8_t dst[16]; } choice_t;


typedef struct {
    uint8_t mac[6];
    uint8_t startup, has_episode, quiet_by_restart, other_config;
    uint8_t nkinds, kind_order[NKINDS], have_kind[NKINDS], nrs, nlts;
    int64_t frames, bytes, first_ns, last_ns, v6_frames, v4_frames, other_frames, v6_bytes;
    char *first_desc;
    seen_t kinds[NKINDS];
    vec v4;                         /* 4 bytes each, at most MAX_ADDRESSES */
    vec v6;                         /* v6use_t, at most MAX_ADDRESSES */
    vec dad;                        /* dad_t, at most MAX_DAD */
    int64_t episode_ns;
    aset probed;                    /* episode_probed */
    vec used;                       /* episode_used: 16 bytes each, at most MAX_ADDRESSES */
    vec skipped;                    /* skipped_t, at most MAX_SKIPPED */
    int64_t rs[MAX_RS];
    vec dhcpc;                      /* dhcpc_t */
    vec offers;                     /* offer_t, at most MAX_OFFERS */
    double quiet_until;
    seen_t after108, dns_v4, nd_hlim, cksum_bad, ra;
    vec dns;                        /* dns_t, at most MAX_RESOLVERS */
    vec qtypes;                     /* qtype_t */
    vec rdnss;                      /* 16 bytes each, at most MAX_RESOLVERS */
    vec pref64;                     /* pfx_t, at most MAX_PREF64 */
    int64_t lts[MAX_LIFETIMES];
    vec answers;                    /* answer_t, at most MAX_NAMES, in insertion order */
    vec choices;                    /* choice_t, at most MAX_NAMES */
    seen_t ipv6;                    /* every IPv6 frame (the asset class's evidence) */
    seen_t clat;                    /* DNS queries for ipv4only.arpa (RFC 7050: a CLAT's prefix discovery) */
} host_t;

typedef struct {
    /* the reader's buffer (v6a_setup) and where the walk is */
    const uint8_t *buf;
    int64_t len, nifaces, pos;
    const int64_t *ifaces;
    int big, nano, ng;
    uint32_t lt;
    int64_t *mail;
    /* the run */
    int64_t frames, t0_ns, t_last_ns, audit_frames, decoded;
    int64_t stopped;                /* frames whose dissection stopped early (malformed, cut) */
    int have_t0;
    host_t *hosts;
    uint32_t nhosts, caphosts, exported;
    uint32_t *mac_tab, mac_cap;
    aset rdnss_seen;                /* the run's RDNSS */
    aset pref64_seen;               /* the run's PREF64: the 96-bit prefix, its length in the last byte */
    /* the frame being judged */
    fields_t f;
    jmp_buf stop;
    const uint8_t *frame;
    int64_t flen;
    sbuf qname, scratch, desc, out;
    int desc_done;
    vec rdnss, pref64, dns_a, dns_aaaa, prl;  /* ref_t, ref_t, ref_t, ref_t, uint8_t */
} ctx_t;

/* ---- the report (judge.c, report.c): one host's findings, in findings.judge_host's order ---- */
enum { V_NONE = -1, V_PASS = 0, V_FAIL = 1, V_SKIP = 2, NVERDICTS = 3 };
enum { C_NO_IPV4, C_ASKS_108, C_STOPS_108, C_DNS, C_SELECTION, C_ND, C_CHECKSUMS, C_RA, C_READY, NCOLS };

typedef struct {
    int verdict;      /* V_NONE: no such finding for the host (C_RA of a host that sent no RA) */
    sbuf seen, meas;  /* the finding's text (UTF-8) and its measurements (JSON) */
} judged_t;

typedef struct {
    int family;
    char text[64];
    int64_t n;
} item_t;

typedef struct {
    /* from Python (report.c: STRINGS) */
    const char *capture, *pcap;
    const char *id[NCOLS], *title[NCOLS], *rfc[NCOLS], *expect[NCOLS];
    const char *kind[NKINDS];      /* net.v6only's names of the K_* kinds */
    double t0, t_last, startup_window;
    sbuf t0_repr, capture_json;    /* repr(t0); the capture's name as JSON */
    judged_t j[NCOLS];
    sbuf share, scratch;
    vec items;                     /* item_t */
} report_t;

/* pyfmt.c */
void py_repr(sbuf *b, double x);
void py_repr_round(sbuf *b, double x, int n);
void py_repr_ns(sbuf *b, int64_t ns);
void put_i64(sbuf *b, int64_t v);
void sb_pf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double py_round(double x, int n);
void py_fixed3(sbuf *b, double x);
void js_str(sbuf *b, const char *s, size_t n);
void js_cstr(sbuf *b, const char *s);
size_t utf8_cut(const char *s, size_t n, size_t chars);
void html_esc(sbuf *b, const char *s, size_t n);
void xml_attr(sbuf *b, const char *s, size_t n);
void xml_text(sbuf *b, const char *s, size_t n);

/* judge.c */
void judge_host(report_t *r, const host_t *h);
void host_record(sbuf *b, report_t *r, const host_t *h);

/* dissect.c */
void dissect(ctx_t *c, uint32_t lt);
int64_t option_108(const uint8_t *fr, int64_t n);
uint64_t words(const uint8_t *p, int64_t n);

/* rules.c */
int aset_add(aset *s, const uint8_t *a);
int aset_has(const aset *s, const uint8_t *a);
void aset_clear(aset *s);
void aset_free(aset *s);  /* what it holds */
void judge(ctx_t *c, const uint8_t *d, int64_t n, uint32_t lt, uint32_t orig, int64_t ns, int64_t number);
void host_free(host_t *h);

#endif
