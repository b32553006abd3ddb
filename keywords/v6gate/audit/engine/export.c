/* The result as JSON for core.py, which builds hosts.Host objects from it: the run, then the hosts in
 * batches (each host's memory freed once it is written), so the engine's state and the Python hosts are
 * never both whole.  Times are integer ns (Python makes the floats), quiet_until excepted: a computed
 * float, written with 17 significant digits (it reads back exactly). */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static void j_str(sbuf *b, const char *s, size_t n) {
    sb_grow(b, n + 2);
    sb_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            sb_add(b, e, 2);
        } else if (ch < 0x20 || ch >= 0x7F) {
            sb_fmt(b, "\\u%04x", ch);
        } else {
            sb_add(b, (const char *)&s[i], 1);
        }
    }
    sb_add(b, "\"", 1);
}

static void j_cstr(sbuf *b, const char *s) { j_str(b, s ? s : "", s ? strlen(s) : 0); }

static void j_a6(sbuf *b, const uint8_t *a) {
    sb_add(b, "\"", 1);
    put_ntop6(b, a);
    sb_add(b, "\"", 1);
}

static void j_a4(sbuf *b, const uint8_t *a) {
    sb_add(b, "\"", 1);
    put_ntop4(b, a);
    sb_add(b, "\"", 1);
}

static void j_seen(sbuf *b, const seen_t *s) {
    if (!s->count) {
        sb_str(b, "[0]");
        return;
    }
    sb_fmt(b, "[%lld,%lld,%lld,", (long long)s->count, (long long)s->first_ns, (long long)s->first_frame);
    j_cstr(b, s->first);
    sb_str(b, "]");
}

/* a JSON list of ``n`` addresses stored ``stride`` bytes apart: IPv4 (its first 4 bytes) when ``v4`` */
static void j_addrs(sbuf *b, const uint8_t *p, uint32_t n, int stride, int v4) {
    sb_str(b, "[");
    for (uint32_t i = 0; i < n; i++) {
        if (i) sb_str(b, ",");
        if (v4)
            j_a4(b, p + (size_t)stride * i);
        else
            j_a6(b, p + (size_t)stride * i);
    }
    sb_str(b, "]");
}

static void j_i64s(sbuf *b, const int64_t *v, int n) {
    sb_str(b, "[");
    for (int i = 0; i < n; i++) sb_fmt(b, i ? ",%lld" : "%lld", (long long)v[i]);
    sb_str(b, "]");
}

/* the start of a list's item ``i`` that begins with an IPv6 address: "[addr" (after a comma but the first) */
static void j_item6(sbuf *b, uint32_t i, const uint8_t *a) {
    sb_str(b, i ? ",[" : "[");
    j_a6(b, a);
}

/* one host, as core._host reads it: a list of its fields in Host's order */
static void j_host(sbuf *b, host_t *h) {
    sb_str(b, "[\"");
    put_mac(b, h->mac);
    sb_fmt(b, "\",%lld,%lld,%lld,%lld,", (long long)h->frames, (long long)h->bytes, (long long)h->first_ns,
           (long long)h->last_ns);
    j_cstr(b, h->first_desc);
    sb_fmt(b, ",%d,%lld,%lld,%lld,%lld,[", h->startup, (long long)h->v6_frames, (long long)h->v4_frames,
           (long long)h->other_frames, (long long)h->v6_bytes);
    for (int i = 0; i < h->nkinds; i++) {
        sb_fmt(b, "%s[%d,", i ? "," : "", h->kind_order[i]);
        j_seen(b, &h->kinds[h->kind_order[i]]);
        sb_str(b, "]");
    }
    sb_str(b, "],");
    j_addrs(b, h->v4.p, h->v4.n, 4, 1);
    sb_str(b, ",[");
    for (uint32_t i = 0; i < h->v6.n; i++) {
        v6use_t *u = VEC_AT(h->v6, v6use_t, i);
        j_item6(b, i, u->a);
        sb_fmt(b, ",%lld,%lld,%d]", (long long)u->ns, (long long)u->frame, u->probed);
    }
    sb_str(b, "],[");
    for (uint32_t i = 0; i < h->dad.n; i++) {
        dad_t *d = VEC_AT(h->dad, dad_t, i);
        j_item6(b, i, d->a);
        sb_fmt(b, ",%lld]", (long long)d->ns);
    }
    if (h->has_episode)
        sb_fmt(b, "],%lld,", (long long)h->episode_ns);
    else
        sb_str(b, "],null,");
    j_addrs(b, h->probed.items.p, h->probed.items.n, 16, 0);
    sb_str(b, ",");
    j_addrs(b, h->used.p, h->used.n, 16, 0);
    sb_str(b, ",[");
    for (uint32_t i = 0; i < h->skipped.n; i++) {
        skipped_t *s = VEC_AT(h->skipped, skipped_t, i);
        j_item6(b, i, s->a);
        sb_fmt(b, ",%lld,%lld]", (long long)s->ns, (long long)s->frame);
    }
    sb_str(b, "],");
    j_i64s(b, h->rs, h->nrs);
    sb_str(b, ",[");
    for (uint32_t i = 0; i < h->dhcpc.n; i++) {
        dhcpc_t *d = VEC_AT(h->dhcpc, dhcpc_t, i);
        sb_fmt(b, "%s[%u,%d,", i ? "," : "", d->msg, d->w108);
        j_seen(b, &d->seen);
        sb_str(b, "]");
    }
    sb_str(b, "],[");
    for (uint32_t i = 0; i < h->offers.n; i++) {
        offer_t *o = VEC_AT(h->offers, offer_t, i);
        sb_fmt(b, "%s[%lld,%lld,", i ? "," : "", (long long)o->ns, (long long)o->frame);
        if (o->has_yi) j_a4(b, o->yi); else sb_str(b, "\"\"");
        sb_str(b, ",");
        if (o->has_srv) j_a4(b, o->srv); else sb_str(b, "\"\"");
        if (o->value >= 0) sb_fmt(b, ",%lld]", (long long)o->value); else sb_str(b, ",null]");
    }
    sb_fmt(b, "],%.17g,%d,", h->quiet_until, h->quiet_by_restart);
    j_seen(b, &h->after108);
    sb_str(b, ",[");
    for (uint32_t i = 0; i < h->dns.n; i++) {
        dns_t *d = VEC_AT(h->dns, dns_t, i);
        sb_fmt(b, "%s[%d,", i ? "," : "", d->family);
        if (!d->has) sb_str(b, "\"\"");
        else if (d->family == 4) j_a4(b, d->a);
        else j_a6(b, d->a);
        sb_fmt(b, ",%lld]", (long long)d->n);
    }
    sb_str(b, "],[");
    for (uint32_t i = 0; i < h->qtypes.n; i++) {
        qtype_t *q = VEC_AT(h->qtypes, qtype_t, i);
        sb_fmt(b, "%s[%u,%lld]", i ? "," : "", q->qt, (long long)q->n);
    }
    sb_str(b, "],");
    const seen_t *seen[] = {&h->dns_v4, &h->nd_hlim, &h->cksum_bad, &h->ra};
    for (int i = 0; i < 4; i++) {
        j_seen(b, seen[i]);
        sb_str(b, ",");
    }
    j_addrs(b, h->rdnss.p, h->rdnss.n, 16, 0);
    sb_str(b, ",[");
    for (uint32_t i = 0; i < h->pref64.n; i++) {
        pfx_t *x = VEC_AT(h->pref64, pfx_t, i);
        sb_str(b, i ? ",\"" : "\"");
        put_ntop6(b, x->a);
        sb_fmt(b, "/%u\"", x->plen);
    }
    sb_fmt(b, "],%d,", h->other_config);
    j_i64s(b, h->lts, h->nlts);
    sb_str(b, ",[");
    for (uint32_t i = 0; i < h->answers.n; i++) {
        answer_t *a = VEC_AT(h->answers, answer_t, i);
        sb_str(b, i ? ",[" : "[");
        j_cstr(b, a->name);
        sb_str(b, ",");
        j_addrs(b, a->a4.items.p, a->a4.items.n, 16, 1);
        sb_str(b, ",");
        j_addrs(b, a->a6.items.p, a->a6.items.n, 16, 0);
        sb_str(b, "]");
    }
    sb_str(b, "],[");
    for (uint32_t i = 0; i < h->choices.n; i++) {
        choice_t *ch = VEC_AT(h->choices, choice_t, i);
        sb_str(b, i ? ",[" : "[");
        j_cstr(b, ch->name);
        sb_fmt(b, ",%d,%lld,%lld,", ch->family, (long long)ch->ns, (long long)ch->frame);
        if (ch->dst4) j_a4(b, ch->dst); else j_a6(b, ch->dst);
        sb_str(b, "]");
    }
    sb_str(b, "],");
    j_seen(b, &h->ipv6);
    sb_str(b, ",");
    j_seen(b, &h->clat);
    sb_str(b, "]");
}

/* The run's totals and sets into the output buffer; its length (v6a_output: where), -1: out of memory. */
int64_t v6a_export_run(void *p) {
    ctx_t *c = p;
    jmp_buf oom;
    if (setjmp(oom)) return -1;
    oom_jump = &oom;
    sbuf *b = &c->out;
    sb_clear(b);
    sb_fmt(b, "{\"frames\":%lld,\"decoded\":%lld,\"hosts\":%u,", (long long)c->audit_frames,
           (long long)c->decoded, c->nhosts);
    if (c->have_t0)
        sb_fmt(b, "\"t0\":%lld,\"t_last\":%lld,", (long long)c->t0_ns, (long long)c->t_last_ns);
    else
        sb_str(b, "\"t0\":null,\"t_last\":null,");
    sb_str(b, "\"rdnss_seen\":");
    j_addrs(b, c->rdnss_seen.items.p, c->rdnss_seen.items.n, 16, 0);
    sb_str(b, ",\"pref64_seen\":[");
    for (uint32_t i = 0; i < c->pref64_seen.items.n; i++) {
        uint8_t a[16];
        memcpy(a, c->pref64_seen.items.p + 16 * i, 16);
        unsigned plen = a[15];
        a[15] = 0;
        sb_str(b, i ? ",\"" : "\"");
        put_ntop6(b, a);
        sb_fmt(b, "/%u\"", plen);
    }
    sb_str(b, "]}");
    return (int64_t)b->n;
}

/* The next hosts, as a JSON list of at least one host and about ``bytes`` (an empty list: none left);
 * each host written is freed.  Its length, -1: out of memory. */
int64_t v6a_export_hosts(void *p, int64_t bytes) {
    ctx_t *c = p;
    jmp_buf oom;
    if (setjmp(oom)) return -1;
    oom_jump = &oom;
    sbuf *b = &c->out;
    sb_clear(b);
    sb_str(b, "[");
    for (int first = 1; c->exported < c->nhosts && (first || (int64_t)b->n < bytes); first = 0) {
        if (!first) sb_str(b, ",");
        j_host(b, &c->hosts[c->exported]);
        host_free(&c->hosts[c->exported++]);
    }
    sb_str(b, "]");
    return (int64_t)b->n;
}

const char *v6a_output(void *p) { return ((ctx_t *)p)->out.p; }
