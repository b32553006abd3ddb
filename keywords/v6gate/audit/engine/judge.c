/* The findings of one host (findings.py: judge_host and its helpers, each function named after the Python
 * one it holds) and its record for the partial result (assets.host_record), judged from the engine's host
 * state.  Each finding's verdict, its ``seen`` text and its measurements (JSON) are the Python ones byte for
 * byte: the texts are written as the f-strings write them, the numbers as Python prints them (pyfmt.c), the
 * measurements as json.dumps writes them (dicts in their insertion order, which the state keeps).
 * findings.py stays the reference: tests/unit/test_audit_report_c.py compares the two host by host on every
 * fixture, the benchmark's captures and the rule-edge captures.  The findings' constant texts (ids, titles,
 * RFCs, expectations) and net.v6only's names come from Python (report_t), written there once. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine.h"

static const char *const DHCP_NAME[] = {NULL, "DHCPDISCOVER", "DHCPOFFER", "DHCPREQUEST"};

/* ---- small writers ---- */
static double t_rel(const report_t *r, double t) { return t - r->t0; }

/* findings._rel: "+1.234 s" */
static void rel(sbuf *b, const report_t *r, double t) {
    sb_str(b, "+");
    py_fixed3(b, t_rel(r, t));
    sb_str(b, " s");
}

/* findings._seen: "3 (first at +1.234 s, frame 17: what)" */
static void seen_text(sbuf *b, const report_t *r, const seen_t *s) {
    sb_pf(b, "%lld (first at ", (long long)s->count);
    rel(b, r, t_of(s->first_ns));
    sb_pf(b, ", frame %lld: ", (long long)s->first_frame);
    sb_str(b, s->first ? s->first : "");
    sb_str(b, ")");
}

/* hosts.Seen.as_dict */
static void seen_dict(sbuf *b, const report_t *r, const seen_t *s) {
    if (!s->count) {
        sb_str(b, "{\"count\":0}");
        return;
    }
    sb_pf(b, "{\"count\":%lld,\"first_seen_s\":", (long long)s->count);
    py_repr_round(b, t_rel(r, t_of(s->first_ns)), 6);
    sb_pf(b, ",\"first_frame\":%lld,\"first\":", (long long)s->first_frame);
    js_cstr(b, s->first);
    sb_str(b, "}");
}

static void addr4(sbuf *b, const uint8_t *a) { put_ntop4(b, a); }
static void addr6(sbuf *b, const uint8_t *a) { put_ntop6(b, a); }

/* a JSON list of addresses (``stride`` bytes apart; IPv4: their first 4 bytes), ``n`` of them */
static void addr_list(sbuf *b, const uint8_t *p, uint32_t n, int stride, int v4) {
    sb_str(b, "[");
    for (uint32_t i = 0; i < n; i++) {
        sb_str(b, i ? ",\"" : "\"");
        (v4 ? addr4 : addr6)(b, p + (size_t)stride * i);
        sb_str(b, "\"");
    }
    sb_str(b, "]");
}

static void bool_(sbuf *b, int v) { sb_str(b, v ? "true" : "false"); }

static void set(judged_t *j, int verdict) { j->verdict = verdict; }

static void begin(report_t *r, int col) {
    judged_t *j = &r->j[col];
    j->verdict = V_NONE;
    sb_clear(&j->seen);
    sb_clear(&j->meas);
}

/* texts of a list of items, sorted (Python's sorted() of str: by code point, here ASCII bytes): item_t */

static int by_text(const void *a, const void *b) { return strcmp(((const item_t *)a)->text, ((const item_t *)b)->text); }

static int by_family_text(const void *a, const void *b) {
    const item_t *x = a, *y = b;
    return x->family != y->family ? x->family - y->family : strcmp(x->text, y->text);
}

static void text_of(char *out, size_t size, const uint8_t *a, int v4) {
    if (v4)
        snprintf(out, size, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
    else
        inet_ntop(AF_INET6, a, out, (socklen_t)size);
}

/* ---- the findings ---- */
/* findings._no_ipv4 */
static void no_ipv4(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_NO_IPV4];
    begin(r, C_NO_IPV4);
    sbuf *m = &j->meas, *s = &j->seen;
    sb_str(m, "{\"ipv4_frames\":{");
    int bad = 0;
    for (int i = 0; i < h->nkinds; i++) {
        int k = h->kind_order[i];
        if (i) sb_str(m, ",");
        js_cstr(m, r->kind[k]);
        sb_str(m, ":");
        seen_dict(m, r, &h->kinds[k]);
        if (k != K_RFC8925) {
            if (bad++) sb_str(s, "; ");
            sb_str(s, r->kind[k]);
            sb_str(s, ": ");
            seen_text(s, r, &h->kinds[k]);
        }
    }
    sb_str(m, "},\"ipv4_addresses\":");
    addr_list(m, h->v4.p, h->v4.n, 4, 1);
    sb_str(m, "}");
    if (!bad) sb_pf(s, "no ARP or IPv4 in %lld frames", (long long)h->frames);
    if (h->have_kind[K_RFC8925])
        sb_pf(s, "; allowed by RFC 8925: %lld DHCPv4 messages asking for option 108",
               (long long)h->kinds[K_RFC8925].count);
    set(j, bad ? V_FAIL : V_PASS);
}

/* findings._asks_108 */
static void asks_108(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_ASKS_108];
    begin(r, C_ASKS_108);
    sbuf *m = &j->meas, *s = &j->seen;
    sb_str(m, "{\"dhcpv4\":{");
    int msgs = 0, without = 0;
    for (uint32_t i = 0; i < h->dhcpc.n; i++) {
        const dhcpc_t *d = VEC_AT(h->dhcpc, dhcpc_t, i);
        if (d->msg != 1 && d->msg != 3) continue;
        if (msgs++) sb_str(m, ",");
        sb_pf(m, "\"%s%s 108\":", DHCP_NAME[d->msg], d->w108 ? " with" : " without");
        seen_dict(m, r, &d->seen);
        if (!d->w108) {
            if (without++) sb_str(s, "; ");
            sb_pf(s, "%s without option 108: ", DHCP_NAME[d->msg]);
            seen_text(s, r, &d->seen);
        }
    }
    sb_str(m, "}}");
    if (!msgs) {
        sb_str(s, "the host sent no DHCPDISCOVER or DHCPREQUEST on the capture");
        set(j, V_SKIP);
        return;
    }
    if (without) {
        set(j, V_FAIL);
        return;
    }
    for (uint32_t i = 0, k = 0; i < h->dhcpc.n; i++) {
        const dhcpc_t *d = VEC_AT(h->dhcpc, dhcpc_t, i);
        if (d->msg != 1 && d->msg != 3) continue;
        sb_pf(s, "%s%lld %s", k++ ? ", " : "", (long long)d->seen.count, DHCP_NAME[d->msg]);
    }
    sb_str(s, ", all asking for option 108");
    set(j, V_PASS);
}

/* "DHCPOFFER of Y from S with option 108 (V s)" (findings._stops_108's, assets.host_record's) */
static void offer_text(sbuf *b, const offer_t *o) {
    sb_str(b, "DHCPOFFER of ");
    if (o->has_yi) addr4(b, o->yi);
    sb_str(b, " from ");
    if (o->has_srv) addr4(b, o->srv);
    if (o->value >= 0)
        sb_pf(b, " with option 108 (%lld s)", (long long)o->value);
    else
        sb_str(b, " with option 108 (unknown)");
}

/* findings._stops_108 */
static void stops_108(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_STOPS_108];
    begin(r, C_STOPS_108);
    sbuf *m = &j->meas, *s = &j->seen;
    if (!h->offers.n) {
        sb_str(m, "{}");
        sb_str(s, "no DHCPOFFER with option 108 for the host on the capture");
        set(j, V_SKIP);
        return;
    }
    const offer_t *o = VEC_AT(h->offers, offer_t, 0);
    offer_text(s, o);
    sb_str(s, " at ");
    rel(s, r, o->t);
    sb_pf(s, ", frame %lld", (long long)o->frame);
    sb_pf(m, "{\"offers_with_108\":%u,\"option_108_s\":", h->offers.n);
    if (o->value >= 0)
        sb_pf(m, "%lld", (long long)o->value);
    else
        sb_str(m, "null");
    sb_str(m, ",\"quiet_until_s\":");
    py_repr_round(m, h->quiet_until - r->t0, 3);
    sb_str(m, "}");
    if (h->after108.count) {
        sb_str(s, "; then within V6ONLY_WAIT: ");
        seen_text(s, r, &h->after108);
        set(j, V_FAIL);
        return;
    }
    double horizon = h->quiet_until <= r->t_last ? h->quiet_until : r->t_last;  /* min(quiet_until, t_last) */
    const char *why = h->quiet_by_restart && h->quiet_until <= r->t_last
                          ? "its interface restarted (a network attachment event)"
                      : h->quiet_until <= r->t_last ? "the end of V6ONLY_WAIT" : "the end of the capture";
    sb_str(s, "; no DHCPv4, ARP or IPv4 from the host up to ");
    rel(s, r, horizon);
    sb_pf(s, " (%s)", why);
    set(j, V_PASS);
}

/* findings._dns */
static void dns(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_DNS];
    begin(r, C_DNS);
    sbuf *m = &j->meas, *s = &j->seen;
    item_t res[MAX_RESOLVERS];
    uint32_t n = h->dns.n;
    for (uint32_t i = 0; i < n; i++) {
        const dns_t *d = VEC_AT(h->dns, dns_t, i);
        res[i].family = d->family;
        res[i].n = d->n;
        res[i].text[0] = 0;
        if (d->has) text_of(res[i].text, sizeof res[i].text, d->a, d->family == 4);
    }
    qsort(res, n, sizeof *res, by_family_text);
    sb_str(m, "{\"dns_resolvers\":[");
    for (uint32_t i = 0; i < n; i++)
        sb_pf(m, "%s{\"family\":\"IPv%d\",\"resolver\":\"%s\",\"queries\":%lld}", i ? "," : "", res[i].family,
               res[i].text, (long long)res[i].n);
    sb_str(m, "],\"dns_query_types\":{");
    int aaaa = 0;
    for (uint32_t i = 0; i < h->qtypes.n; i++) {
        const qtype_t *q = VEC_AT(h->qtypes, qtype_t, i);
        aaaa |= q->qt == 28;
        if (q->qt == 1 || q->qt == 28)
            sb_pf(m, "%s\"%s\":%lld", i ? "," : "", q->qt == 1 ? "A" : "AAAA", (long long)q->n);
        else
            sb_pf(m, "%s\"%u\":%lld", i ? "," : "", q->qt, (long long)q->n);
    }
    sb_str(m, "}}");
    if (!n) {
        sb_str(s, "the host sent no DNS query on the capture");
        set(j, V_SKIP);
        return;
    }
    sbuf *used = &r->scratch;  /* (the context's: freed with it, an allocation failure included) */
    sb_clear(used);
    for (uint32_t i = 0; i < n; i++)
        sb_pf(used, "%s%s (IPv%d, %lld queries)", i ? ", " : "", res[i].text, res[i].family, (long long)res[i].n);
    if (h->dns_v4.count) {
        sb_str(s, "DNS queries over IPv4: ");
        seen_text(s, r, &h->dns_v4);
        sb_str(s, "; resolvers used: ");
        sb_str(s, used->p);
        set(j, V_FAIL);
    } else if (!aaaa) {
        r->items.n = 0;  /* sorted(h.dns_qtypes) */
        for (uint32_t i = 0; i < h->qtypes.n; i++) vec_push(&r->items, sizeof(item_t));
        item_t *qt = (item_t *)r->items.p;
        uint32_t k = 0;
        for (uint32_t i = 0; i < h->qtypes.n; i++, k++) {
            unsigned q = VEC_AT(h->qtypes, qtype_t, i)->qt;
            if (q == 1)
                snprintf(qt[k].text, sizeof qt[k].text, "A");
            else
                snprintf(qt[k].text, sizeof qt[k].text, "%u", q);
        }
        qsort(qt, k, sizeof *qt, by_text);
        sb_str(s, "queries asked only for [");
        for (uint32_t i = 0; i < k; i++) sb_pf(s, "%s'%s'", i ? ", " : "", qt[i].text);
        sb_str(s, "], never AAAA; resolvers: ");
        sb_str(s, used->p);
        set(j, V_FAIL);
    } else {
        sb_str(s, "resolvers used: ");
        sb_str(s, used->p);
        sb_str(s, "; query types {");
        for (uint32_t i = 0; i < h->qtypes.n; i++) {
            const qtype_t *q = VEC_AT(h->qtypes, qtype_t, i);
            if (q->qt == 1 || q->qt == 28)
                sb_pf(s, "%s'%s': %lld", i ? ", " : "", q->qt == 1 ? "A" : "AAAA", (long long)q->n);
            else
                sb_pf(s, "%s'%u': %lld", i ? ", " : "", q->qt, (long long)q->n);
        }
        sb_str(s, "}");
        set(j, V_PASS);
    }
}

static void choice_dst(sbuf *b, const choice_t *c) { (c->dst4 ? addr4 : addr6)(b, c->dst); }

/* findings._selection */
static void selection(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_SELECTION];
    begin(r, C_SELECTION);
    sbuf *m = &j->meas, *s = &j->seen;
    sb_str(m, "{\"dual_stack_names\":{");
    uint32_t v4 = 0;
    for (uint32_t i = 0; i < h->choices.n; i++) {
        const choice_t *c = VEC_AT(h->choices, choice_t, i);
        if (i) sb_str(m, ",");
        js_cstr(m, c->name);
        sb_pf(m, ":{\"family\":\"IPv%d\",\"first_syn_to\":\"", c->family);
        choice_dst(m, c);
        sb_pf(m, "\",\"frame\":%lld}", (long long)c->frame);
        v4 += c->family == 4;
    }
    sb_str(m, "}}");
    if (!h->choices.n) {
        sb_str(s, "the host connected to no name that resolved to both AAAA and A records");
        set(j, V_SKIP);
        return;
    }
    if (v4) {
        for (uint32_t i = 0, k = 0; i < h->choices.n && k < 4; i++) {
            const choice_t *c = VEC_AT(h->choices, choice_t, i);
            if (c->family != 4) continue;
            if (k++) sb_str(s, "; ");
            sb_str(s, c->name);
            sb_str(s, ": first SYN to ");
            choice_dst(s, c);
            sb_pf(s, " (IPv4, frame %lld)", (long long)c->frame);
        }
        sb_pf(s, " (%u of %u dual-stack names)", v4, h->choices.n);
        set(j, V_FAIL);
        return;
    }
    sb_pf(s, "%u dual-stack names, each tried first over IPv6 (", h->choices.n);
    for (uint32_t i = 0; i < h->choices.n && i < 3; i++) {
        const choice_t *c = VEC_AT(h->choices, choice_t, i);
        if (i) sb_str(s, ", ");
        sb_str(s, c->name);
        sb_str(s, " -> ");
        choice_dst(s, c);
    }
    sb_str(s, ")");
    set(j, V_PASS);
}

/* hosts.Audit.startup_observed */
static int startup_observed(const report_t *r, const host_t *h) {
    if (!h->startup) return 0;
    double first = t_of(h->first_ns);
    for (int i = 0; i < h->nrs; i++)
        if (t_of(h->rs[i]) - first <= r->startup_window) return 1;
    return 0;
}

/* findings._nd (and hosts.Audit.dad_skipped) */
static void nd(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_ND];
    begin(r, C_ND);
    sbuf *m = &j->meas, *s = &j->seen;
    int startup = startup_observed(r, h), problems = 0;
    if (h->nd_hlim.count) {
        sb_str(s, "ND with hop limit other than 255: ");
        seen_text(s, r, &h->nd_hlim);
        problems++;
    }
    uint32_t skipped = h->skipped.n + (!h->dad.n && startup ? h->v6.n : 0), shown = 0;
    if (skipped) {
        if (problems++) sb_str(s, "; ");
        sb_str(s, "DAD skipped: ");
        for (uint32_t i = 0; i < h->skipped.n && shown < 4; i++, shown++) {
            const skipped_t *k = VEC_AT(h->skipped, skipped_t, i);
            if (shown) sb_str(s, "; ");
            addr6(s, k->a);
            sb_pf(s, " used at frame %lld (+", (long long)k->frame);
            py_fixed3(s, t_of(k->ns) - r->t0);
            sb_str(s, " s) without a DAD probe since the interface started");
        }
        if (!h->dad.n && startup)
            for (uint32_t i = 0; i < h->v6.n && shown < 4; i++, shown++) {
                const v6use_t *u = VEC_AT(h->v6, v6use_t, i);
                if (shown) sb_str(s, "; ");
                addr6(s, u->a);
                sb_pf(s, " used from frame %lld and never probed (the host's start-up is on the capture)",
                       (long long)u->frame);
            }
    }
    sb_pf(m, "{\"dad_probes\":%u,\"startup_on_capture\":", h->dad.n);
    bool_(m, startup);
    sb_pf(m, ",\"nd_bad_hop_limit\":%lld}", (long long)h->nd_hlim.count);
    if (problems) {
        set(j, V_FAIL);
    } else if (!h->v6_frames) {
        sb_str(s, "the host sent no IPv6 on the capture");
        set(j, V_SKIP);
    } else {
        sb_str(s, "every ND message with hop limit 255; ");
        if (startup)
            sb_str(s, "its start-up is on the capture and every address was probed first");
        else
            sb_pf(s, "%u DAD probes seen; no address used before its probe", h->dad.n);
        set(j, V_PASS);
    }
}

/* findings._checksums */
static void checksums(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_CHECKSUMS];
    begin(r, C_CHECKSUMS);
    sb_pf(&j->meas, "{\"checksum_errors\":%lld}", (long long)h->cksum_bad.count);
    if (h->cksum_bad.count) {
        sb_str(&j->seen, "frames with a bad checksum: ");
        seen_text(&j->seen, r, &h->cksum_bad);
        sb_str(&j->seen, " (a capture taken on the sending host shows offloaded checksums as bad)");
        set(j, V_FAIL);
    } else {
        sb_pf(&j->seen, "no checksum error in %lld frames", (long long)h->frames);
        set(j, V_PASS);
    }
}

static void pref64_text(sbuf *b, const pfx_t *x) {
    addr6(b, x->a);
    sb_pf(b, "/%u", x->plen);
}

static int by_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* findings._ra (a host that sent RAs) */
static void ra(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_RA];
    begin(r, C_RA);
    if (!h->ra.count) return;  /* (no finding) */
    sbuf *m = &j->meas, *s = &j->seen;
    int64_t lts[MAX_LIFETIMES];
    memcpy(lts, h->lts, sizeof lts);
    qsort(lts, h->nlts, sizeof *lts, by_i64);
    sb_pf(m, "{\"ra_count\":%lld,\"rdnss\":", (long long)h->ra.count);
    addr_list(m, h->rdnss.p, h->rdnss.n, 16, 0);
    sb_str(m, ",\"pref64\":[");
    for (uint32_t i = 0; i < h->pref64.n; i++) {
        sb_str(m, i ? ",\"" : "\"");
        pref64_text(m, VEC_AT(h->pref64, pfx_t, i));
        sb_str(m, "\"");
    }
    sb_str(m, "],\"other_config\":");
    bool_(m, h->other_config);
    sb_str(m, ",\"router_lifetimes\":[");
    for (int i = 0; i < h->nlts; i++) sb_pf(m, i ? ",%lld" : "%lld", (long long)lts[i]);
    sb_str(m, "]}");
    sb_pf(s, "%lld RAs; RDNSS ", (long long)h->ra.count);
    for (uint32_t i = 0; i < h->rdnss.n; i++) {
        if (i) sb_str(s, ", ");
        addr6(s, h->rdnss.p + 16 * i);
    }
    if (!h->rdnss.n) sb_str(s, "none");
    sb_str(s, "; PREF64 ");
    for (uint32_t i = 0; i < h->pref64.n; i++) {
        if (i) sb_str(s, ", ");
        pref64_text(s, VEC_AT(h->pref64, pfx_t, i));
    }
    if (!h->pref64.n) sb_str(s, "none");
    sb_str(s, h->other_config ? "; O flag set" : "; O flag clear");
    int no_resolver = !h->rdnss.n && !h->other_config;
    if (no_resolver || !h->pref64.n) {
        sb_str(s, " \xe2\x80\x94 ");  /* an em dash */
        if (no_resolver) sb_str(s, "no resolver for hosts (no RDNSS and O=0)");
        if (!h->pref64.n) {
            if (no_resolver) sb_str(s, "; ");
            sb_str(s, "no PREF64 (hosts must fall back to ipv4only.arpa, RFC 7050)");
        }
    }
    set(j, no_resolver ? V_FAIL : V_PASS);
}

/* findings._readiness (after the others) */
static void readiness(report_t *r, const host_t *h) {
    judged_t *j = &r->j[C_READY];
    begin(r, C_READY);
    sbuf *m = &j->meas, *s = &j->seen;
    int64_t ip = h->v6_frames + h->v4_frames;
    sbuf *share = &r->share;  /* ipv6_share's repr, or empty: None */
    sb_clear(share);
    if (ip) py_repr_round(share, 100.0 * (double)h->v6_frames / (double)ip, 2);
    sb_pf(m, "{\"frames\":%lld,\"bytes\":%lld,\"ipv6_share_percent\":%s,\"ipv6_frames\":%lld,\"ipv4_frames\":%lld,"
              "\"first_seen_s\":", (long long)h->frames, (long long)h->bytes, ip ? share->p : "null",
           (long long)h->v6_frames, (long long)h->v4_frames);
    py_repr_round(m, t_of(h->first_ns) - r->t0, 6);
    sb_str(m, ",\"last_seen_s\":");
    py_repr_round(m, t_of(h->last_ns) - r->t0, 6);
    sb_str(m, ",\"ipv6_addresses\":");
    addr_list(m, h->v6.p, h->v6.n < 16 ? h->v6.n : 16, sizeof(v6use_t), 0);
    sb_str(m, ",\"ipv4_addresses\":");
    addr_list(m, h->v4.p, h->v4.n, 4, 1);
    sb_str(m, "}");
    int failing = 0;
    for (int c = 0; c < C_RA; c++) failing += r->j[c].verdict == V_FAIL;
    if (failing) {
        sb_str(s, "not ready: ");
        for (int c = 0, k = 0; c < C_RA; c++)
            if (r->j[c].verdict == V_FAIL) {
                if (k++) sb_str(s, "; ");
                sb_str(s, r->title[c]);
            }
        sb_str(s, " (");
    } else {
        sb_str(s, "ready on what the capture shows (");
    }
    if (ip)
        sb_pf(s, "IPv6 is %s%% of its %lld IP/ARP frames", share->p, (long long)ip);
    else
        sb_str(s, "no IP traffic");
    if (failing) {
        sb_str(s, ")");
        set(j, V_FAIL);
        return;
    }
    sb_str(s, "; passed: ");
    for (int c = 0, k = 0; c < C_RA; c++)
        if (r->j[c].verdict == V_PASS) {
            if (k++) sb_str(s, ", ");
            sb_str(s, r->title[c]);
        }
    sb_str(s, ")");
    set(j, V_PASS);
}

/* findings.judge_host: every finding of ``h`` into r->j (C_RA's verdict V_NONE: not a router) */
void judge_host(report_t *r, const host_t *h) {
    no_ipv4(r, h);
    asks_108(r, h);
    stops_108(r, h);
    dns(r, h);
    selection(r, h);
    nd(r, h);
    checksums(r, h);
    ra(r, h);
    readiness(r, h);
}

/* ---- the record (assets.host_record, with the findings just judged) ---- */
/* assets._signal: [count, the capture's start, capture, frame, time, what] */
static void signal(sbuf *b, report_t *r, const char *name, int *n, const seen_t *s) {
    if (!s->count) return;
    sb_pf(b, "%s\"%s\":[%lld,", (*n)++ ? "," : "", name, (long long)s->count);
    sb_str(b, r->t0_repr.p);
    sb_str(b, ",");
    sb_str(b, r->capture_json.p);
    sb_pf(b, ",%lld,", (long long)s->first_frame);
    py_repr_ns(b, s->first_ns);
    sb_str(b, ",");
    js_cstr(b, s->first);
    sb_str(b, "]");
}

/* sorted(texts)[:MAX_ADDRESSES] as a JSON list */
static void sorted_addrs(sbuf *b, const uint8_t *p, uint32_t n, int stride, int v4) {
    item_t t[MAX_ADDRESSES];
    if (n > MAX_ADDRESSES) n = MAX_ADDRESSES;  /* (the state holds at most that many) */
    for (uint32_t i = 0; i < n; i++) text_of(t[i].text, sizeof t[i].text, p + (size_t)stride * i, v4);
    qsort(t, n, sizeof *t, by_text);
    sb_str(b, "[");
    for (uint32_t i = 0; i < n; i++) sb_pf(b, "%s\"%s\"", i ? "," : "", t[i].text);
    sb_str(b, "]");
}

/* "MAC":{record} (json.dumps's compact text), the findings judged in r->j */
void host_record(sbuf *b, report_t *r, const host_t *h) {
    sb_str(b, "\"");
    put_mac(b, h->mac);
    sb_pf(b, "\":{\"frames\":%lld,\"bytes\":%lld,\"first_t\":", (long long)h->frames, (long long)h->bytes);
    py_repr_ns(b, h->first_ns);
    sb_str(b, ",\"last_t\":");
    py_repr_ns(b, h->last_ns);
    sb_str(b, ",\"signals\":{");
    int n = 0;
    signal(b, r, "ipv6", &n, &h->ipv6);
    static const char *const names[NKINDS] = {"arp", "dhcpv4_108", "dhcpv4", "ipv4"};  /* K_* */
    static const int order[] = {K_ARP, K_IPV4, K_DHCPV4, K_RFC8925};
    for (int i = 0; i < 4; i++)
        if (h->have_kind[order[i]]) signal(b, r, names[order[i]], &n, &h->kinds[order[i]]);
    signal(b, r, "clat", &n, &h->clat);
    if (h->offers.n) {
        const offer_t *o = VEC_AT(h->offers, offer_t, 0);
        sb_pf(b, "%s\"offer_108\":[%u,", n ? "," : "", h->offers.n < MAX_OFFERS ? h->offers.n : MAX_OFFERS);
        sb_str(b, r->t0_repr.p);
        sb_str(b, ",");
        sb_str(b, r->capture_json.p);
        sb_pf(b, ",%lld,", (long long)o->frame);
        py_repr_ns(b, o->ns);
        sb_str(b, ",\"");
        offer_text(b, o);
        sb_str(b, "\"]");
    }
    sb_str(b, "},\"v4\":");
    sorted_addrs(b, h->v4.p, h->v4.n, 4, 1);
    sb_str(b, ",\"v6\":");
    sorted_addrs(b, h->v6.p, h->v6.n, sizeof(v6use_t), 0);
    sb_str(b, ",\"captures\":1,\"ready\":[");
    const judged_t *ready = &r->j[C_READY];
    sb_str(b, ready->verdict == V_FAIL ? "\"FAIL\"," : "\"PASS\",");
    sb_str(b, r->capture_json.p);
    sb_str(b, ",");
    js_str(b, ready->seen.p, ready->seen.n);
    sb_str(b, "],\"failing\":{");
    for (int c = 0, k = 0; c < C_READY; c++)
        if (r->j[c].verdict == V_FAIL) {
            sb_pf(b, "%s\"%s\":[", k++ ? "," : "", r->id[c]);
            sb_str(b, r->capture_json.p);
            sb_str(b, ",");
            js_str(b, r->j[c].seen.p, r->j[c].seen.n);
            sb_str(b, "]");
        }
    sb_str(b, "}}");
}
