/* The dissector (dissect.py), one function per Python function: the fields of one frame into c->f. */
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* ---------------------------------------------------------------------------------------------------
 * the dissector (dissect.py), one function per Python function
 * ------------------------------------------------------------------------------------------------- */
#define NEED(c, cond) do { if (!(cond)) longjmp((c)->stop, 1); } while (0)
#define U16(d, o) ((unsigned)(((d)[o] << 8) | (d)[(o) + 1]))

static int is_vlan(unsigned e) { return e == 0x8100 || e == 0x88A8 || e == 0x9100; }
static int is_dns_port(unsigned p) { return p == 53 || p == 5353 || p == 5355; }
static int is_dhcp_port(unsigned p) { return p == 67 || p == 68 || p == 4011; }

/* The big-endian 16-bit words of [p, p + n) summed (an odd last byte as the high half of a word), modulo
 * 0xFFFF: every caller compares a sum modulo 0xFFFF, as dissect.inet_sum does (int.from_bytes % 0xFFFF).
 * On a little-endian machine the words are read as 64-bit loads, each the sum of its two 32-bit halves
 * modulo 0xFFFF (2^16 = 1), i.e. of four byte-swapped words; a swapped word is 256 times the word modulo
 * 0xFFFF, so that sum times 256 (its own inverse: 256 * 256 = 1) is the big-endian one. */
uint64_t words(const uint8_t *p, int64_t n) {
    int64_t i = 0;
    uint64_t s = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t le = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        le += (v & 0xFFFFFFFFu) + (v >> 32);
    }
    for (; i + 1 < n; i += 2) {
        uint16_t v;
        memcpy(&v, p + i, 2);
        le += v;
    }
    s = le % 0xFFFF * 256 % 0xFFFF;
#else
    for (; i + 1 < n; i += 2) s += ((uint32_t)p[i] << 8) | p[i + 1];
#endif
    if (i < n) s += (uint32_t)p[i] << 8;
    return s;
}

/* the pseudo header as dissect._pseudo builds it, its words summed */
static uint64_t pseudo_words(const uint8_t *addrs, int64_t length, unsigned proto, int family) {
    if (family == 4) return words(addrs, 8) + proto + (uint64_t)(length & 0xFFFF);
    uint64_t l = length > 0 ? (uint64_t)length : 0;
    return words(addrs, 32) + (l >> 16) + (l & 0xFFFF) + proto;
}

static int checksum_ok(uint64_t pseudo, const uint8_t *seg, int64_t n) {
    return (pseudo % 0xFFFF + words(seg, n) % 0xFFFF) % 0xFFFF == 0;
}

static void ipv6(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t off, int in_error);
static void ipv4(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t off, int in_error);

static void arp(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t off) {
    fields_t *f = &c->f;
    NEED(c, off + 8 <= dlen);
    unsigned ptype = U16(d, off + 2), hlen = d[off + 4], plen = d[off + 5];
    if (f->arp_n++ == 0) f->arp_op = U16(d, off + 6);
    if (ptype == 0x0800 && plen == 4) {
        int64_t spa = off + 8 + hlen, tpa = spa + 4 + hlen;
        if (dlen >= tpa + 4 && f->spa_n++ == 0) {
            memcpy(f->spa, d + spa, 4);
            memcpy(f->tpa, d + tpa, 4);
        }
    }
}

static void l3(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t off, unsigned etype, int in_error) {
    if (etype == 0x86DD)
        ipv6(c, d, dlen, off, in_error);
    else if (etype == 0x0800)
        ipv4(c, d, dlen, off, in_error);
    else if (etype == 0x0806 && !in_error)
        arp(c, d, dlen, off);
}

/* dissect._name: a DNS name at o (pointers from base) into ``out``; returns the offset after it */
static int64_t dns_name(ctx_t *c, const uint8_t *d, int64_t o, int64_t base, int64_t end, sbuf *out) {
    int64_t after = -1;
    int jumps = 0, labels = 0;
    sb_clear(out);
    for (;;) {
        NEED(c, o < end);
        unsigned n = d[o];
        if ((n & 0xC0) == 0xC0) {
            if (after < 0) after = o + 2;
            NEED(c, o + 1 < end);
            o = base + (int64_t)(((n & 0x3F) << 8) | d[o + 1]);
            NEED(c, ++jumps <= 64);
            continue;
        }
        if (n == 0) {
            o += 1;
            break;
        }
        NEED(c, o + 1 + (int64_t)n <= end);
        if (labels++) sb_add(out, ".", 1);
        sb_grow(out, 4 * (size_t)n);
        for (unsigned i = 0; i < n; i++) {
            unsigned ch = d[o + 1 + i];
            if (ch > 0x20 && ch < 0x7F && ch != 0x5C)
                out->p[out->n++] = (char)ch;
            else
                out->n += (size_t)sprintf(out->p + out->n, "\\%03o", ch);
        }
        out->p[out->n] = 0;
        o += 1 + n;
    }
    if (!labels) sb_str(out, "<Root>");
    return after >= 0 ? after : o;
}

static void dns(ctx_t *c, const uint8_t *d, int64_t o, int64_t end) {
    fields_t *f = &c->f;
    if (o + 4 > end) return;
    /* d = d[:end]: nothing past end is read */
    if (f->resp_n++ == 0) f->resp = d[o + 2] & 0x80 ? 1 : 0;
    NEED(c, o + 12 <= end);
    unsigned qd = U16(d, o + 4), an = U16(d, o + 6), ns = U16(d, o + 8), ar = U16(d, o + 10);
    int64_t p = o + 12;
    for (unsigned i = 0; i < qd; i++) {
        sbuf *into = f->qname_n ? &c->scratch : &c->qname;
        p = dns_name(c, d, p, o, end, into);
        NEED(c, p + 2 <= end);
        unsigned qtype = U16(d, p);
        if (f->qname_n++ == 0) f->qname_len = c->qname.n;
        if (f->qtype_n++ == 0) f->qtype = qtype;
        p += 4;
    }
    unsigned rr = an + ns + ar;
    for (unsigned i = 0; i < rr; i++) {
        p = dns_name(c, d, p, o, end, &c->scratch);
        NEED(c, p + 10 <= end);
        unsigned rtype = U16(d, p), rdlen = U16(d, p + 8);
        p += 10;
        if (p + (int64_t)rdlen > end) return;
        if (rtype == 1 && rdlen == 4)
            ((ref_t *)vec_push(&c->dns_a, sizeof(ref_t)))->at = d + p;
        else if (rtype == 28 && rdlen == 16)
            ((ref_t *)vec_push(&c->dns_aaaa, sizeof(ref_t)))->at = d + p;
        p += rdlen;
    }
}

static void dhcp(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t o, int64_t end) {
    fields_t *f = &c->f;
    if (o + 20 > end) return;
    unsigned htype = d[o + 1], hlen = d[o + 2];
    if (f->yi_n++ == 0) memcpy(f->yiaddr, d + o + 16, 4);
    if (htype == 1 && hlen == 6 && o + 34 <= end && f->ch_n++ == 0) memcpy(f->chaddr, d + o + 28, 6);
    static const uint8_t magic[4] = {0x63, 0x82, 0x53, 0x63};
    if (o + 240 > end || memcmp(d + o + 236, magic, 4)) return;
    int64_t p = o + 240;
    while (p < end) {
        unsigned code = d[p];
        if (code == 0) {
            p += 1;
            continue;
        }
        if (code == 108) f->opts_108 = 1;
        if (code == 255) return;
        if (p + 2 > end) return;
        unsigned olen = d[p + 1];
        if (p + 2 + (int64_t)olen > dlen) return;  /* the option's value is cut by the frame, not by end */
        const uint8_t *val = d + p + 2;
        if (code == 53 && olen >= 1) {
            if (f->dtype_n++ == 0) f->dtype = val[0];
        } else if (code == 55) {
            for (unsigned i = 0; i < olen; i++) *(uint8_t *)vec_push(&c->prl, 1) = val[i];
        }
        p += 2 + olen;
    }
}

static void udp(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t o, int64_t end, const uint8_t *addrs,
                int fragment, int family) {
    fields_t *f = &c->f;
    if (o + 8 > dlen) return;
    unsigned sport = U16(d, o), dport = U16(d, o + 2), ulen = U16(d, o + 4), ck = U16(d, o + 6);
    int status;
    if (ck == 0)
        status = family == 4 ? 3 : 4;
    else if (fragment || ulen < 8 || o + (int64_t)ulen > dlen)
        status = 2;
    else
        status = checksum_ok(pseudo_words(addrs, ulen, 17, family), d + o, ulen);
    if (f->udp_n++ == 0) {
        f->sport = sport;
        f->dport = dport;
        f->udp_ck = status;
    }
    int64_t pend = ulen >= 8 ? (end < o + (int64_t)ulen ? end : o + (int64_t)ulen) : end;
    int64_t body = o + 8;
    if (family == 4 && (is_dhcp_port(sport) || is_dhcp_port(dport))) {
        dhcp(c, d, dlen, body, pend);
        return;
    }
    if (is_dns_port(sport) || is_dns_port(dport)) dns(c, d, body, pend);
}

static void tcp(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t o, int64_t end, uint64_t pseudo,
                int no_verify) {
    fields_t *f = &c->f;
    if (o + 4 > dlen) return;
    unsigned sport = U16(d, o), dport = U16(d, o + 2);  /* (tcp.dstport: no rule reads it) */
    if (o + 14 > dlen) return;
    unsigned flags = d[o + 13];
    if (f->tflags_n++ == 0) {
        f->syn = flags & 0x02 ? 1 : 0;
        f->ack = flags & 0x10 ? 1 : 0;
    }
    if (o + 20 > dlen) return;
    int status = (no_verify || o > end) ? 2 : checksum_ok(pseudo, d + o, end - o);
    if (f->tck_n++ == 0) f->tcp_ck = status;
    int64_t hl = (int64_t)(d[o + 12] >> 4) * 4;
    if (hl >= 20 && (sport == 53 || dport == 53) && end - (o + hl) >= 2) {
        int64_t body = o + hl;
        unsigned mlen = U16(d, body);
        int64_t e = body + 2 + (int64_t)mlen;
        dns(c, d, body + 2, end < e ? end : e);
    }
}

static void icmp4(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t o, int64_t end, int in_error) {
    if (o + 4 > dlen) return;
    unsigned t = d[o];
    c->f.icmp_n++;
    if ((t == 3 || t == 4 || t == 5 || t == 11 || t == 12) && !in_error && o + 8 < end) ipv4(c, d, end, o + 8, 1);
}

static void nd_options(ctx_t *c, const uint8_t *d, int64_t o, int64_t end) {
    while (o + 2 <= end) {
        unsigned otype = d[o];
        int64_t olen = (int64_t)d[o + 1] * 8;
        if (olen == 0 || o + olen > end) return;
        if (otype == 25 && olen >= 24) {
            for (int64_t a = o + 8; a < o + olen - 15; a += 16) ((ref_t *)vec_push(&c->rdnss, sizeof(ref_t)))->at = d + a;
        } else if (otype == 38 && olen >= 16) {
            ref_t *r = vec_push(&c->pref64, sizeof(ref_t));
            r->at = d + o + 4;
            r->plc = U16(d, o + 2) & 0x7;
        }
        o += olen;
    }
}

static void icmp6(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t o, int64_t end, uint64_t pseudo, int no_verify,
                  int in_error) {
    fields_t *f = &c->f;
    if (o + 4 > dlen) return;
    unsigned t = d[o];
    int status = no_verify ? 2 : checksum_ok(pseudo, d + o, end - o);
    if (f->i6_n++ == 0) {
        f->i6type = t;
        f->i6_ck = status;
    }
    if (t < 128) {
        if (!in_error && o + 8 < end) ipv6(c, d, end, o + 8, 1);
        return;
    }
    if (t == 135 && o + 24 <= end) {
        if (f->nst_n++ == 0) memcpy(f->nst, d + o + 8, 16);
        nd_options(c, d, o + 24, end);
    } else if (t == 134 && o + 16 <= end) {
        if (f->rao_n++ == 0) f->rao = d[o + 5] & 0x40 ? 1 : 0;
        if (f->ralt_n++ == 0) f->ralt = U16(d, o + 6);
        nd_options(c, d, o + 16, end);
    } else if (t == 133) {
        nd_options(c, d, o + 8, end);
    } else if (t == 136) {
        nd_options(c, d, o + 24, end);
    } else if (t == 137) {
        nd_options(c, d, o + 40, end);
    }
}

static void l4(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t o, int64_t end, unsigned proto,
               const uint8_t *addrs, int64_t length, int truncated, int fragment, int family, int in_error) {
    int no_verify = truncated || fragment;
    if (proto == 17)
        udp(c, d, dlen, o, end, addrs, fragment, family);
    else if (proto == 6)
        tcp(c, d, dlen, o, end, pseudo_words(addrs, length, 6, family), no_verify);
    else if (proto == 58 && family == 6)
        icmp6(c, d, dlen, o, end, pseudo_words(addrs, length, 58, 6), no_verify, in_error);
    else if (proto == 1 && family == 4)
        icmp4(c, d, dlen, o, end, in_error);
}

static void ipv4(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t off, int in_error) {
    fields_t *f = &c->f;
    if (dlen < off + 20 || d[off] >> 4 != 4) return;
    int64_t ihl = (int64_t)(d[off] & 0x0F) * 4;
    if (ihl < 20 || dlen < off + ihl) return;
    int64_t total = U16(d, off + 2);
    if (f->ip_n++ == 0) {
        memcpy(f->ip_src, d + off + 12, 4);
        memcpy(f->ip_dst, d + off + 16, 4);
        f->ip_ck = words(d + off, ihl) % 0xFFFF == 0;
    }
    if (total < ihl) return;
    unsigned flags_frag = U16(d, off + 6);
    if (flags_frag & 0x1FFF) return;
    int fragment = (flags_frag & 0x2000) != 0;
    unsigned proto = d[off + 9];
    int64_t end = dlen < off + total ? dlen : off + total;
    int truncated = dlen < off + total;
    l4(c, d, dlen, off + ihl, end, proto, d + off + 12, total - ihl, truncated, fragment, 4, in_error);
}

static int ext_header(unsigned nh) {
    return nh == 0 || nh == 43 || nh == 60 || nh == 135 || nh == 139 || nh == 140 || nh == 44 || nh == 51;
}

static void ipv6(ctx_t *c, const uint8_t *d, int64_t dlen, int64_t off, int in_error) {
    fields_t *f = &c->f;
    if (dlen < off + 8 || d[off] >> 4 != 6) return;
    int64_t plen = U16(d, off + 4);
    unsigned nh = d[off + 6];
    if (f->hlim_n++ == 0) f->hlim = d[off + 7];
    if (dlen < off + 24) return;
    if (f->v6src_n++ == 0) memcpy(f->v6_src, d + off + 8, 16);
    if (dlen < off + 40) return;
    if (f->v6dst_n++ == 0) memcpy(f->v6_dst, d + off + 24, 16);
    int64_t end = dlen < off + 40 + plen ? dlen : off + 40 + plen;
    int truncated = dlen < off + 40 + plen;
    int64_t o = off + 40;
    int fragment = 0;
    while (ext_header(nh)) {
        if (o + 8 > end) return;
        if (nh == 44) {
            unsigned offm = U16(d, o + 2);
            if (offm & 0xFFF8) return;
            fragment = offm & 1;
            nh = d[o];
            o += 8;
            continue;
        }
        int64_t hl = nh == 51 ? ((int64_t)d[o + 1] + 2) * 4 : ((int64_t)d[o + 1] + 1) * 8;
        nh = d[o];
        o += hl;
    }
    if (o > end) return;
    l4(c, d, dlen, o, end, nh, d + off + 8, (off + 40 + plen) - o, truncated, fragment, 6, in_error);
}

/* dissect.fields_of: the fields of the frame in c->frame */
void dissect(ctx_t *c, uint32_t lt) {
    const uint8_t *d = c->frame;
    int64_t dlen = c->flen;
    fields_t *f = &c->f;
    if (lt == 1) {
        if (dlen < 14) return;
        f->eth = 1;
        memcpy(f->edst, d, 6);
        memcpy(f->esrc, d + 6, 6);
        unsigned etype = U16(d, 12);
        if (etype <= 1500) return;
        f->etype_n = 1;
        f->etype = etype;
        int64_t off = 14;
        while (is_vlan(etype)) {
            if (dlen < off + 4) return;
            unsigned tag = etype;
            etype = U16(d, off + 2);
            if (tag != 0x88A8 && f->vlan_n++ == 0) f->vlan = etype;
            off += 4;
        }
        l3(c, d, dlen, off, etype, 0);
    } else if (lt == 113) {
        NEED(c, dlen >= 16);
        l3(c, d, dlen, 16, U16(d, 14), 0);
    } else if (lt == 276) {
        NEED(c, dlen >= 2);
        l3(c, d, dlen, 20, U16(d, 0), 0);
    } else if ((lt == 101 || lt == 12 || lt == 228 || lt == 229) && dlen) {
        unsigned v = d[0] >> 4;
        l3(c, d, dlen, 0, v == 6 ? 0x86DD : v == 4 ? 0x0800 : 0, 0);
    }
}

/* dissect.option_108: the IPv6-Only Preferred value of the DHCPv4 message in the frame, or -1 */
int64_t option_108(const uint8_t *fr, int64_t n) {
    if (n < 14) return -1;
    int64_t off = 14;
    unsigned etype = U16(fr, 12);
    while (is_vlan(etype)) {
        if (off + 4 > n) return -1;
        etype = U16(fr, off + 2);
        off += 4;
    }
    if (etype != 0x0800 || off >= n) return -1;
    int64_t ihl = (int64_t)(fr[off] & 0x0F) * 4, o = off + ihl + 8;
    if (off + 9 >= n || fr[off + 9] != 17) return -1;
    static const uint8_t magic[4] = {0x63, 0x82, 0x53, 0x63};
    if (o + 240 > n || memcmp(fr + o + 236, magic, 4)) return -1;
    int64_t p = o + 240;
    while (p < n) {
        unsigned code = fr[p];
        if (code == 0) {
            p++;
            continue;
        }
        if (code == 255) return -1;
        if (p + 1 >= n) return -1;
        unsigned olen = fr[p + 1];
        if (code == 108) {
            if (olen == 4 && p + 6 <= n)
                return ((int64_t)fr[p + 2] << 24) | ((int64_t)fr[p + 3] << 16) | ((int64_t)fr[p + 4] << 8) | fr[p + 5];
            return -1;
        }
        p += 2 + olen;
    }
    return -1;
}

