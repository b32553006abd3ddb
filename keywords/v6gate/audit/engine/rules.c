/* The per-host rules (hosts.py: Audit.add and its helpers), each function named after the Python one it
 * holds, over the fields dissect.c found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"

static const char *const DHCP_MESSAGE[] = {NULL, "DHCPDISCOVER", "DHCPOFFER", "DHCPREQUEST", "DHCPDECLINE",
                                          "DHCPACK", "DHCPNAK", "DHCPRELEASE", "DHCPINFORM"};
static const char *const ND_NAME[] = {"RS", "RA", "NS", "NA", "Redirect"};  /* ICMPv6 133..137 */
static const unsigned PREF64_PLC[] = {96, 64, 56, 48, 40, 32};
static const uint8_t UNSPECIFIED[16];

/* ---- sets of addresses in their order (aset) ---- */
#ifndef ASET_LINEAR
#define ASET_LINEAR 16  /* searched linearly up to this many (the sanitizer fuzz builds with 1: indexed early) */
#endif

static uint32_t aset_slot(const aset *s, const uint8_t *a) {
    return (uint32_t)hash_bytes(a, 16, 0xcbf29ce484222325ULL) & (s->cap - 1);
}

static void aset_reindex(aset *s, uint32_t cap) {
    uint32_t *index = xrealloc(NULL, cap * sizeof *index);  /* (the old one kept until this one exists) */
    memset(index, 0, cap * sizeof *index);
    free(s->index);
    s->index = index;
    s->cap = cap;
    for (uint32_t k = 0; k < s->items.n; k++) {
        uint32_t i = aset_slot(s, s->items.p + 16 * k);
        while (s->index[i]) i = (i + 1) & (cap - 1);
        s->index[i] = k + 1;
    }
}

int aset_has(const aset *s, const uint8_t *a) {
    if (!s->index) return vec_has(&s->items, a, 16);
    for (uint32_t i = aset_slot(s, a);; i = (i + 1) & (s->cap - 1)) {
        uint32_t k = s->index[i];
        if (!k) return 0;
        if (!memcmp(s->items.p + 16 * (k - 1), a, 16)) return 1;
    }
}

/* add; 1 when it was not there */
int aset_add(aset *s, const uint8_t *a) {
    if (aset_has(s, a)) return 0;
    memcpy(vec_push(&s->items, 16), a, 16);
    if (s->items.n > ASET_LINEAR && (s->items.n * 2 > s->cap || !s->index)) {
        aset_reindex(s, s->cap ? s->cap * 2 : 4 * ASET_LINEAR);
    } else if (s->index) {
        uint32_t i = aset_slot(s, a);
        while (s->index[i]) i = (i + 1) & (s->cap - 1);
        s->index[i] = s->items.n;
    }
    return 1;
}

void aset_free(aset *s) {
    free(s->items.p);
    free(s->index);
}

void aset_clear(aset *s) {
    free(s->index);
    s->index = NULL;
    s->cap = 0;
    s->items.n = 0;
}

/* ---- hosts (Audit.hosts: by MAC, in the order they were first seen) ---- */
static uint32_t mac_slot(const ctx_t *c, const uint8_t *mac) {
    return (uint32_t)hash_bytes(mac, 6, 0xcbf29ce484222325ULL) & (c->mac_cap - 1);
}

static host_t *find_host(ctx_t *c, const uint8_t *mac) {
    for (uint32_t i = mac_slot(c, mac);; i = (i + 1) & (c->mac_cap - 1)) {
        uint32_t s = c->mac_tab[i];
        if (!s) return NULL;
        if (!memcmp(c->hosts[s - 1].mac, mac, 6)) return &c->hosts[s - 1];
    }
}

static void grow_macs(ctx_t *c) {
    uint32_t cap = c->mac_cap * 2;
    uint32_t *tab = xrealloc(NULL, cap * sizeof *tab);  /* (the old one kept until this one exists) */
    memset(tab, 0, cap * sizeof *tab);
    free(c->mac_tab);
    c->mac_tab = tab;
    c->mac_cap = cap;
    for (uint32_t s = 0; s < c->nhosts; s++) {
        uint32_t i = mac_slot(c, c->hosts[s].mac);
        while (c->mac_tab[i]) i = (i + 1) & (cap - 1);
        c->mac_tab[i] = s + 1;
    }
}

static const char *describe(ctx_t *c);

/* Audit._host: the host, made (first and last seen now, its first frame described by ``desc``, NULL:
 * the frame's description) when new */
static host_t *get_host(ctx_t *c, const uint8_t *mac, const char *desc) {
    host_t *h = find_host(c, mac);
    if (h) return h;
    if (c->nhosts == c->caphosts) {
        uint32_t cap = c->caphosts ? c->caphosts * 2 : 256;
        c->hosts = xrealloc(c->hosts, cap * sizeof *c->hosts);
        c->caphosts = cap;
    }
    if ((c->nhosts + 1) * 2 > c->mac_cap) grow_macs(c);
    if (!desc) desc = describe(c);
    char *first = xstrdup(desc, strlen(desc));
    h = &c->hosts[c->nhosts];
    memset(h, 0, sizeof *h);
    memcpy(h->mac, mac, 6);
    h->first_ns = h->last_ns = c->f.ns;
    h->first_desc = first;
    uint32_t i = mac_slot(c, mac);
    while (c->mac_tab[i]) i = (i + 1) & (c->mac_cap - 1);
    c->mac_tab[i] = ++c->nhosts;
    return h;
}

static void seen_free(seen_t *s) { free(s->first); }

void host_free(host_t *h) {
    free(h->first_desc);
    for (int k = 0; k < NKINDS; k++) seen_free(&h->kinds[k]);
    free(h->v4.p);
    free(h->v6.p);
    free(h->dad.p);
    aset_free(&h->probed);
    free(h->used.p);
    free(h->skipped.p);
    for (uint32_t k = 0; k < h->dhcpc.n; k++) seen_free(&VEC_AT(h->dhcpc, dhcpc_t, k)->seen);
    free(h->dhcpc.p);
    free(h->offers.p);
    seen_free(&h->after108);
    seen_free(&h->dns_v4);
    seen_free(&h->nd_hlim);
    seen_free(&h->cksum_bad);
    seen_free(&h->ra);
    seen_free(&h->ipv6);
    seen_free(&h->clat);
    free(h->dns.p);
    free(h->qtypes.p);
    free(h->rdnss.p);
    free(h->pref64.p);
    for (uint32_t k = 0; k < h->answers.n; k++) {
        answer_t *a = VEC_AT(h->answers, answer_t, k);
        free(a->name);
        aset_free(&a->a4);
        aset_free(&a->a6);
    }
    free(h->answers.p);
    for (uint32_t k = 0; k < h->choices.n; k++) free(VEC_AT(h->choices, choice_t, k)->name);
    free(h->choices.p);
    memset(h, 0, sizeof *h);
}

/* ---- what the rules read of the fields (hosts._first, _ints, ...) ---- */
static int etype_of(const fields_t *f) {
    int et = f->etype_n ? (int)f->etype : -1;
    if (et == 0x8100) et = f->vlan_n ? (int)f->vlan : -1;
    return et;
}

/* the first DNS name as hosts._first cuts it: at its first comma */
static size_t qname_first_len(const ctx_t *c) {
    const char *comma = memchr(c->qname.p, ',', c->f.qname_len);
    return comma ? (size_t)(comma - c->qname.p) : c->f.qname_len;
}

static int prl_has_108(const ctx_t *c) { return c->prl.n && memchr(c->prl.p, 108, c->prl.n) != NULL; }

/* Audit._describe: what a host's first frame of a kind was */
static const char *describe(ctx_t *c) {
    if (c->desc_done) return c->desc.p;
    const fields_t *f = &c->f;
    sbuf *b = &c->desc;
    sb_clear(b);
    int et = etype_of(f);
    if (et == 0x0806) {
        if (f->arp_n && (f->arp_op == 1 || f->arp_op == 2))
            sb_str(b, f->arp_op == 1 ? "ARP who-has " : "ARP is-at ");
        else if (f->arp_n)
            sb_fmt(b, "ARP op %u ", f->arp_op);
        else
            sb_str(b, "ARP op  ");
        if (f->spa_n) put_ntop4(b, f->tpa);
        sb_str(b, " from ");
        if (f->spa_n) put_ntop4(b, f->spa);
    } else if (f->dtype_n) {
        const char *msg = f->dtype >= 1 && f->dtype <= 8 ? DHCP_MESSAGE[f->dtype] : "DHCP";
        if (f->udp_n && f->sport == 67) {
            sb_fmt(b, "%s of ", msg);
            if (f->yi_n) put_ntop4(b, f->yiaddr);
            sb_str(b, " to ");
            if (f->ch_n) put_mac(b, f->chaddr);
            sb_str(b, " from ");
            if (f->ip_n) put_ntop4(b, f->ip_src);
        } else {
            sb_fmt(b, "%s parameter request list [", msg);
            for (uint32_t i = 0; i < c->prl.n; i++) sb_fmt(b, i ? ",%u" : "%u", c->prl.p[i]);
            sb_str(b, "]");
        }
    } else if (et == 0x0800) {
        sb_str(b, "IPv4 ");
        if (f->ip_n) put_ntop4(b, f->ip_src);
        sb_str(b, " -> ");
        if (f->ip_n) put_ntop4(b, f->ip_dst);
    } else if (et == 0x86DD) {
        if (f->qname_n) {
            sb_str(b, f->resp_n == 1 && f->resp == 1 ? "DNS response " : "DNS query ");
            sb_add(b, c->qname.p, qname_first_len(c));
        } else if (f->i6_n && f->i6type >= 133 && f->i6type <= 137) {
            sb_str(b, ND_NAME[f->i6type - 133]);
        } else if (f->i6_n) {
            sb_fmt(b, "ICMPv6 type %u", f->i6type);
        } else {
            sb_str(b, "IPv6");
        }
        sb_str(b, " ");
        if (f->v6src_n) put_ntop6(b, f->v6_src);
        sb_str(b, " -> ");
        if (f->v6dst_n) put_ntop6(b, f->v6_dst);
    } else if (et >= 0) {
        sb_fmt(b, "ethertype 0x%x", (unsigned)et);
    } else {
        sb_str(b, "ethertype ?");
    }
    c->desc_done = 1;
    return b->p;
}

/* Seen.add; ``what`` NULL: the frame's description (made only for a first) */
static void seen_add(ctx_t *c, seen_t *s, int64_t frame, const char *what) {
    if (s->count == 0) {
        if (!what) what = describe(c);
        s->first = xstrdup(what, strlen(what));
        s->first_ns = c->f.ns;
        s->first_frame = frame;
    }
    s->count++;
}

/* ---- the rules ---- */
/* Audit._dns */
static void count_dns(host_t *h, int family, int has, const uint8_t *resolver, const fields_t *f) {
    int n = family == 4 ? 4 : 16;
    dns_t *d = NULL;
    for (uint32_t i = 0; i < h->dns.n && !d; i++) {
        dns_t *x = VEC_AT(h->dns, dns_t, i);
        if (x->family == family && x->has == has && (!has || !memcmp(x->a, resolver, n))) d = x;
    }
    if (!d && h->dns.n < MAX_RESOLVERS) {
        d = vec_push(&h->dns, sizeof *d);
        memset(d, 0, sizeof *d);
        d->family = family;
        d->has = has;
        if (has) memcpy(d->a, resolver, n);
    }
    if (d) d->n++;
    if (!f->qtype_n) return;
    for (uint32_t i = 0; i < h->qtypes.n; i++) {
        qtype_t *q = VEC_AT(h->qtypes, qtype_t, i);
        if (q->qt == f->qtype) {
            q->n++;
            return;
        }
    }
    qtype_t *q = vec_push(&h->qtypes, sizeof *q);
    q->qt = f->qtype;
    q->n = 1;
}

/* Audit._dns's CLAT evidence: the query names ipv4only.arpa (RFC 7050 §3, the CLAT's NAT64 prefix discovery) */
static void clat_query(ctx_t *c, host_t *h, int64_t frame) {
    if (c->f.qname_n && qname_first_len(c) == 13 && !strncasecmp(c->qname.p, "ipv4only.arpa", 13))
        seen_add(c, &h->clat, frame, NULL);
}

/* Audit._server_message: an OFFER with option 108 to its client starts (or extends) V6ONLY_WAIT */
static void server_message(ctx_t *c, int64_t frame) {
    const fields_t *f = &c->f;
    if (f->dtype != 2 || !f->ch_n || !f->opts_108) return;
    host_t *h = get_host(c, f->chaddr, "(seen first as a DHCP client)");
    int64_t value = option_108(c->frame, c->flen);  /* -1: None */
    c->decoded++;
    double wait = value > 0 ? (double)value : 0.0;
    if (wait < MIN_V6ONLY_WAIT_S) wait = MIN_V6ONLY_WAIT_S;
    double t = t_of(f->ns), until = t + wait;
    if (until > h->quiet_until) h->quiet_until = until;
    h->quiet_by_restart = 0;
    if (h->offers.n < MAX_OFFERS) {
        offer_t *o = vec_push(&h->offers, sizeof *o);
        o->t = t;
        o->ns = f->ns;
        o->frame = frame;
        o->value = value;
        o->has_yi = f->yi_n > 0;
        memcpy(o->yi, f->yiaddr, 4);
        o->has_srv = f->ip_n > 0;
        memcpy(o->srv, f->ip_src, 4);
    }
}

/* Audit._answer: the A and AAAA answers a host was given, per name (the oldest name goes past 64) */
static void answer(ctx_t *c) {
    const fields_t *f = &c->f;
    if (!f->eth || (f->edst[0] & 1)) return;
    host_t *h = get_host(c, f->edst, "(seen first as the receiver of a DNS answer)");
    sbuf *name = &c->scratch;  /* the name, lower-cased (hosts: _first(...).lower()) */
    sb_clear(name);
    if (f->qname_n) sb_add(name, c->qname.p, qname_first_len(c));
    for (size_t i = 0; i < name->n; i++)
        if (name->p[i] >= 'A' && name->p[i] <= 'Z') name->p[i] = (char)(name->p[i] + 32);
    answer_t *a = NULL;
    for (uint32_t i = 0; i < h->answers.n && !a; i++)
        if (!strcmp(VEC_AT(h->answers, answer_t, i)->name, name->p)) a = VEC_AT(h->answers, answer_t, i);
    if (!a) {
        if (h->answers.n >= MAX_NAMES) {
            answer_t *old = VEC_AT(h->answers, answer_t, 0);
            free(old->name);
            aset_free(&old->a4);
            aset_free(&old->a6);
            memmove(old, old + 1, (h->answers.n - 1) * sizeof *old);
            h->answers.n--;
        }
        a = vec_push(&h->answers, sizeof *a);
        memset(a, 0, sizeof *a);
        a->name = xstrdup(name->p, name->n);
    }
    for (uint32_t i = 0; i < c->dns_a.n; i++) {
        uint8_t key[16] = {0};
        memcpy(key, VEC_AT(c->dns_a, ref_t, i)->at, 4);
        aset_add(&a->a4, key);
    }
    for (uint32_t i = 0; i < c->dns_aaaa.n; i++) aset_add(&a->a6, VEC_AT(c->dns_aaaa, ref_t, i)->at);
}

/* Audit._first_choice: the family of the first SYN to a name answered with both AAAA and A */
static void first_choice(host_t *h, const fields_t *f, int et, int64_t frame) {
    int dst4 = et == 0x0800;
    const uint8_t *dst = dst4 ? f->ip_dst : f->v6_dst;
    if (dst4 ? !f->ip_n : !f->v6dst_n) return;  /* "": in no answer */
    for (uint32_t i = 0; i < h->answers.n; i++) {
        answer_t *a = VEC_AT(h->answers, answer_t, i);
        int chosen = 0;
        for (uint32_t k = 0; k < h->choices.n && !chosen; k++)
            chosen = !strcmp(VEC_AT(h->choices, choice_t, k)->name, a->name);
        if (chosen || !a->a4.items.n || !a->a6.items.n) continue;
        uint8_t key[16] = {0};
        memcpy(key, dst, dst4 ? 4 : 16);
        if (!aset_has(dst4 ? &a->a4 : &a->a6, key)) continue;
        if (h->choices.n < MAX_NAMES) {
            choice_t *ch = vec_push(&h->choices, sizeof *ch);
            memset(ch, 0, sizeof *ch);
            ch->name = xstrdup(a->name, strlen(a->name));
            ch->family = et == 0x86DD ? 6 : 4;
            ch->ns = f->ns;
            ch->frame = frame;
            ch->dst4 = dst4;
            memcpy(ch->dst, dst, dst4 ? 4 : 16);
        }
        return;
    }
}

/* net.v6only.classify_ipv4 */
static int kind_of(int et, const fields_t *f, int icmp_error, int w108) {
    if (et == 0x0806) return K_ARP;
    if (et != 0x0800) return -1;
    if (!icmp_error && f->udp_n && f->sport == 68 && f->dport == 67) return w108 ? K_RFC8925 : K_DHCPV4;
    return K_IPV4;
}

/* Audit._ipv4: IPv4 the host depends on, DHCPv4 and RFC 8925 */
static void rules_ipv4(ctx_t *c, host_t *h, int et, int64_t frame) {
    const fields_t *f = &c->f;
    int icmp_error = f->icmp_n > 0, w108 = prl_has_108(c);
    int kind = kind_of(et, f, icmp_error, w108);
    if (kind < 0) return;
    if (!h->have_kind[kind]) {
        h->have_kind[kind] = 1;
        h->kind_order[h->nkinds++] = (uint8_t)kind;
    }
    seen_add(c, &h->kinds[kind], frame, NULL);
    const uint8_t *addr = f->ip_n ? f->ip_src : f->spa_n ? f->spa : NULL;
    if (addr && (addr[0] | addr[1] | addr[2] | addr[3]) && h->v4.n < MAX_ADDRESSES && !vec_has(&h->v4, addr, 4))
        memcpy(vec_push(&h->v4, 4), addr, 4);
    if ((kind == K_DHCPV4 || kind == K_RFC8925) && f->dtype_n) {
        dhcpc_t *d = NULL;
        for (uint32_t i = 0; i < h->dhcpc.n && !d; i++) {
            dhcpc_t *x = VEC_AT(h->dhcpc, dhcpc_t, i);
            if (x->msg == f->dtype && x->w108 == w108) d = x;
        }
        if (!d) {
            d = vec_push(&h->dhcpc, sizeof *d);
            memset(d, 0, sizeof *d);
            d->msg = f->dtype;
            d->w108 = w108;
        }
        seen_add(c, &d->seen, frame, NULL);
    }
    if (h->offers.n) {
        double t = t_of(f->ns);
        if (VEC_AT(h->offers, offer_t, 0)->t < t && t <= h->quiet_until) seen_add(c, &h->after108, frame, NULL);
    }
    if (kind != K_ARP && !icmp_error && f->qname_n && f->resp_n == 1 && f->resp == 0) {
        seen_add(c, &h->dns_v4, frame, NULL);
        count_dns(h, 4, f->ip_n > 0, f->ip_dst, f);
        clat_query(c, h, frame);
    }
}

/* Audit.episode_use: the host sends from ``a`` in its interface's episode (unprobed: skipped DAD) */
static void episode_use(host_t *h, const uint8_t *a, int64_t ns, int64_t frame) {
    if (!h->has_episode || h->used.n >= MAX_ADDRESSES || vec_has(&h->used, a, 16)) return;
    memcpy(vec_push(&h->used, 16), a, 16);
    if (!aset_has(&h->probed, a) && h->skipped.n < MAX_SKIPPED) {
        skipped_t *s = vec_push(&h->skipped, sizeof *s);
        memcpy(s->a, a, 16);
        s->ns = ns;
        s->frame = frame;
    }
}

/* Audit._dad_probe: a DAD probe of a link-local address restarts the host's episode (and ends
 * V6ONLY_WAIT: a network attachment) */
static void dad_probe(host_t *h, const uint8_t *target, int64_t ns) {
    int known = 0;
    for (uint32_t i = 0; i < h->dad.n && !known; i++) known = !memcmp(VEC_AT(h->dad, dad_t, i)->a, target, 16);
    if (!known && h->dad.n < MAX_DAD) {
        dad_t *d = vec_push(&h->dad, sizeof *d);
        memcpy(d->a, target, 16);
        d->ns = ns;
    }
    if (target[0] == 0xfe && target[1] == 0x80) {  /* its text starts "fe80:" */
        h->has_episode = 1;
        h->episode_ns = ns;
        aset_clear(&h->probed);
        aset_add(&h->probed, target);
        h->used.n = 0;
        double t = t_of(ns);
        if (h->quiet_until > t) {
            h->quiet_until = t;
            h->quiet_by_restart = 1;
        }
    } else if (h->has_episode) {
        aset_add(&h->probed, target);
    }
}

/* Audit._ra */
static void router_advertisement(ctx_t *c, host_t *h, int64_t frame) {
    const fields_t *f = &c->f;
    seen_add(c, &h->ra, frame, "Router Advertisement");
    for (uint32_t i = 0; i < c->rdnss.n; i++) {
        const uint8_t *a = VEC_AT(c->rdnss, ref_t, i)->at;
        if (h->rdnss.n < MAX_RESOLVERS && !vec_has(&h->rdnss, a, 16)) memcpy(vec_push(&h->rdnss, 16), a, 16);
        aset_add(&c->rdnss_seen, a);
    }
    for (uint32_t i = 0; i < c->pref64.n; i++) {
        const ref_t *r = VEC_AT(c->pref64, ref_t, i);
        pfx_t p;
        memset(&p, 0, sizeof p);
        memcpy(p.a, r->at, 12);
        p.plen = r->plc <= 5 ? PREF64_PLC[r->plc] : 96;
        if (h->pref64.n < MAX_PREF64 && !vec_has(&h->pref64, &p, sizeof p)) *(pfx_t *)vec_push(&h->pref64, sizeof p) = p;
        uint8_t key[16];  /* the 96-bit prefix, its length in the last byte */
        memcpy(key, p.a, 16);
        key[15] = (uint8_t)p.plen;
        aset_add(&c->pref64_seen, key);
    }
    if (f->rao_n == 1 && f->rao == 1) h->other_config = 1;
    if (f->ralt_n) {
        int known = 0;
        for (int k = 0; k < h->nlts; k++) known |= h->lts[k] == (int64_t)f->ralt;
        if (!known && h->nlts < MAX_LIFETIMES) h->lts[h->nlts++] = f->ralt;
    }
}

/* Audit._ipv6: DNS, ND, RAs, the addresses the host uses */
static void rules_ipv6(ctx_t *c, host_t *h, int64_t frame) {
    const fields_t *f = &c->f;
    int t = f->i6_n ? (int)f->i6type : -1;
    if (!(t >= 0 && t < 128) && f->qname_n && f->resp_n == 1 && f->resp == 0) {
        count_dns(h, 6, f->v6dst_n > 0, f->v6_dst, f);
        clat_query(c, h, frame);
    }
    int unspecified = f->v6src_n && !memcmp(f->v6_src, UNSPECIFIED, 16);
    if (t >= 133 && t <= 137) {
        if (f->hlim_n && f->hlim != 255) {
            char what[48];
            snprintf(what, sizeof what, "%s with hop limit %u", ND_NAME[t - 133], f->hlim);
            seen_add(c, &h->nd_hlim, frame, what);
        }
        if (t == 135 && unspecified && f->nst_n) dad_probe(h, f->nst, f->ns);
        if (t == 133 && h->nrs < MAX_RS) h->rs[h->nrs++] = f->ns;
        if (t == 134) router_advertisement(c, h, frame);
    }
    if (!f->v6src_n || unspecified) return;
    const uint8_t *a = f->v6_src;
    int known = 0;
    for (uint32_t i = 0; i < h->v6.n && !known; i++) known = !memcmp(VEC_AT(h->v6, v6use_t, i)->a, a, 16);
    if (!known && h->v6.n < MAX_ADDRESSES) {
        v6use_t *u = vec_push(&h->v6, sizeof *u);
        memcpy(u->a, a, 16);
        u->ns = f->ns;
        u->frame = frame;
        u->probed = 0;
        for (uint32_t i = 0; i < h->dad.n && !u->probed; i++) u->probed = !memcmp(VEC_AT(h->dad, dad_t, i)->a, a, 16);
    }
    episode_use(h, a, f->ns, frame);
}

/* Audit.add: the frame whose fields are in c->f */
static void add(ctx_t *c, int64_t frame) {
    const fields_t *f = &c->f;
    c->audit_frames++;
    if (!c->have_t0) {
        c->have_t0 = 1;
        c->t0_ns = f->ns;
    }
    c->t_last_ns = f->ns;
    int et = etype_of(f), i6 = f->i6_n ? (int)f->i6type : -1;
    if (f->dtype_n && f->udp_n && f->dport == 68) server_message(c, frame);
    if ((c->dns_a.n || c->dns_aaaa.n) && f->resp_n == 1 && f->resp == 1) answer(c);
    if (!f->eth || (f->esrc[0] & 1)) return;
    host_t *h = get_host(c, f->esrc, NULL);
    if (!h->frames)
        h->startup = i6 == 133 || i6 == 135 || i6 == 143 || i6 == 131 ||
                     (f->v6src_n && !memcmp(f->v6_src, UNSPECIFIED, 16));
    h->frames++;
    h->bytes += f->orig;
    h->last_ns = f->ns;
    if (et == 0x86DD) {
        h->v6_frames++;
        h->v6_bytes += f->orig;
        seen_add(c, &h->ipv6, frame, NULL);
    } else if (et == 0x0800 || et == 0x0806) {
        h->v4_frames++;
    } else {
        h->other_frames++;
    }
    rules_ipv4(c, h, et, frame);
    if (et == 0x86DD) rules_ipv6(c, h, frame);
    if (f->tflags_n == 1 && f->syn == 1 && f->ack == 0 && h->answers.n) first_choice(h, f, et, frame);
    if ((f->ip_n && !f->ip_ck) || (f->udp_n && !f->udp_ck) || (f->tck_n && !f->tcp_ck) || (f->i6_n && !f->i6_ck))
        seen_add(c, &h->cksum_bad, frame, NULL);
}

/* one frame: dissected (malformed: what was decoded is kept, as tshark does), then judged */
void judge(ctx_t *c, const uint8_t *d, int64_t n, uint32_t lt, uint32_t orig, int64_t ns, int64_t number) {
    memset(&c->f, 0, sizeof c->f);
    c->f.ns = ns;
    c->f.orig = orig;
    c->frame = d;
    c->flen = n;
    c->desc_done = 0;
    c->rdnss.n = c->pref64.n = c->dns_a.n = c->dns_aaaa.n = c->prl.n = 0;
    if (!setjmp(c->stop))
        dissect(c, lt);
    else
        c->stopped++;
    add(c, number);
}
