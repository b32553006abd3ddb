/* The walk over the reader's buffer, and the API core.py calls (ctypes). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#ifndef MAC_SLOTS
#define MAC_SLOTS 1024  /* the host table's first size, a power of two (the sanitizer fuzz builds with 4) */
#endif
#define EPB 6u

static uint32_t rd32(const uint8_t *p, int big) {
    return big ? ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]
               : ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[1] << 8) | p[0];
}

/* Classic pcap records from c->pos: every one wholly in the buffer is judged; it
 * stops at the first the reader must read itself (the buffer's end, a damaged length). */
static int walk_pcap(ctx_t *c) {
    while (c->pos + 16 <= c->len) {
        const uint8_t *h = c->buf + c->pos;
        uint32_t sec = rd32(h, c->big), frac = rd32(h + 4, c->big), incl = rd32(h + 8, c->big),
                 orig = rd32(h + 12, c->big);
        if (incl > MAX_RECORD || c->pos + 16 + (int64_t)incl > c->len) break;
        int64_t ns = (int64_t)sec * 1000000000 + (c->nano ? (int64_t)frac : (int64_t)frac * 1000);
        judge(c, h + 16, incl, c->lt, orig, ns, ++c->frames);
        c->pos += 16 + incl;
    }
    return GO;
}

/* pcapng Enhanced Packet Blocks from c->pos (anything else stops it); c->ifaces: per interface (link
 * type, units per second (0: beyond 64 bits, the reader's), offset in seconds). */
static int walk_pcapng(ctx_t *c) {
    while (c->pos + 8 <= c->len) {
        const uint8_t *b = c->buf + c->pos;
        uint32_t btype = rd32(b, c->big), blen = rd32(b + 4, c->big);
        if (btype != EPB || blen < 32 || blen % 4 || blen > MAX_RECORD || c->pos + (int64_t)blen > c->len) break;
        uint32_t iface = rd32(b + 8, c->big), hi = rd32(b + 12, c->big), lo = rd32(b + 16, c->big);
        uint32_t caplen = rd32(b + 20, c->big), orig = rd32(b + 24, c->big);
        if (iface >= c->nifaces || caplen > blen - 32) break;
        const int64_t *f = c->ifaces + 3 * iface;
        if (f[1] <= 0) break;
        unsigned __int128 units = ((unsigned __int128)hi << 32) | lo;
        __int128 ns = f[1] != 1000000 ? (__int128)(units * 1000000000u / (unsigned __int128)f[1])
                                       : (__int128)(units * 1000u);
        ns += (__int128)f[2] * 1000000000;
        if (ns > INT64_MAX || ns < INT64_MIN) return UNSUPPORTED;
        judge(c, b + 28, caplen, (uint32_t)f[0], orig, (int64_t)ns, ++c->frames);
        c->pos += blen;
    }
    return GO;
}

void *v6a_new(int64_t *mail) {
    /* the reader's buffers (4 MiB and more) are mapped and unmapped, not kept in the heap once freed: glibc's
     * dynamic threshold would otherwise rise past them and the process would hold a few it no longer uses */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    ctx_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->mail = mail;
    memset(mail, 0, MAIL_WORDS * sizeof *mail);
    c->mac_cap = MAC_SLOTS;
    c->mac_tab = calloc(c->mac_cap, sizeof *c->mac_tab);
    if (!c->mac_tab) {
        free(c);
        return NULL;
    }
    return c;
}

void v6a_free(void *p) {
    ctx_t *c = p;
    if (!c) return;
    for (uint32_t i = 0; i < c->nhosts; i++) host_free(&c->hosts[i]);
    free(c->hosts);
    free(c->mac_tab);
    aset_free(&c->rdnss_seen);
    aset_free(&c->pref64_seen);
    free(c->qname.p);
    free(c->scratch.p);
    free(c->desc.p);
    free(c->out.p);
    free(c->rdnss.p);
    free(c->pref64.p);
    free(c->dns_a.p);
    free(c->dns_aaaa.p);
    free(c->prl.p);
    free(c);
}

/* What v6a_next walks until told otherwise: the reader's buffer and its format (ng: pcapng with its
 * interfaces; else pcap with its link type and resolution). */
void v6a_setup(void *p, const uint8_t *buf, int64_t len, int ng, int big, int nano, uint32_t lt,
               const int64_t *ifaces, int64_t nifaces) {
    ctx_t *c = p;
    c->buf = buf;
    c->len = len;
    c->ng = ng;
    c->big = big;
    c->nano = nano;
    c->lt = lt;
    c->ifaces = ifaces;
    c->nifaces = nifaces;
}

/* Judge the records from ``pos`` on (``frames``: the frames before them); the mailbox gets where it
 * stopped and how many it judged.  GO, UNSUPPORTED (a time beyond 64-bit ns) or NOMEM. */
int v6a_next(void *p, int64_t pos, int64_t frames) {
    ctx_t *c = p;
    jmp_buf oom;
    int rc = NOMEM;
    c->pos = pos;
    c->frames = frames;
    if (!setjmp(oom)) {
        oom_jump = &oom;
        rc = c->ng ? walk_pcapng(c) : walk_pcap(c);
    }
    c->mail[MAIL_POS] = c->pos;
    c->mail[MAIL_FRAMES] = c->frames - frames;
    return rc;
}

/* One frame the reader read itself (``number``: its place in the capture). */
int v6a_frame(void *p, const uint8_t *d, int64_t n, uint32_t lt, uint32_t orig, int64_t ns, int64_t number) {
    ctx_t *c = p;
    jmp_buf oom;
    if (setjmp(oom)) return NOMEM;
    oom_jump = &oom;
    c->frames = number;
    judge(c, d, n, lt, orig, ns, number);
    return GO;
}
