/* The audit fast path's counting loop (fast.py), in C.
 *
 * Most frames of a production capture are TCP or UDP payload from a host
 * and an address the audit already knows; for such a frame Audit.add only
 * counts.  This kernel walks the packet records of a capture buffer that
 * the Python reader (pcapread.py) holds, decides per frame from its
 * headers whether that is all Audit.add would do, and if so counts it in a
 * per-host tally that fast.py adds to the host before Python looks at the
 * host again.  It stops, without consuming the record, at the first frame
 * that needs the deep path (the dissector and Audit.add), at anything the
 * Python reader must judge (a block that is not an Enhanced Packet Block,
 * a record not wholly in the buffer, an impossible length, a chunk
 * boundary), and when it needs Python's word on a host (SYNC: the host's
 * IPv4 and V6ONLY_WAIT facts changed; PROMOTE: a parallel worker's address
 * from an earlier chunk is used).
 *
 * The rules are fast.py's, which documents why each one is exact; the
 * kernel only holds them in C.  Built by fast.py with the system's C
 * compiler into build/audit/ (ctypes: no Python headers needed).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RECORD 0x4000000u
#define EPB 6u

enum { GO = 0, DEEP = 1, SYNC = 2, PROMOTE = 3, STOP = 4 };
enum { ADDR6 = 1, ADDR4 = 2, CARRIED6 = 3 };

typedef struct {
    uint8_t mac[6];
    uint8_t active, valid, v4_ok, after_nz, dirty, listed, rs_full;
    uint32_t gen;
    int64_t q_lo, q_hi;              /* inside V6ONLY_WAIT: q_lo <= ns <= q_hi */
    int64_t frames, bytes, v6f, v6b, v4f, quiet_n, last_ns, v4_lo, v4_hi;
} slot_t;

typedef struct {                     /* an address known for a host (or carried from an earlier chunk) */
    uint32_t slot, gen;              /* gen 0: an empty cell */
    uint8_t kind, addr[16];
} addr_t;

typedef struct {
    slot_t *slots;
    uint32_t nslots, capslots;
    uint32_t *mac_tab;               /* open addressing: slot + 1, 0 empty */
    uint32_t mac_cap;
    addr_t *addr_tab;
    uint32_t addr_cap, addr_used;
    uint32_t *dirty;
    uint32_t ndirty, capdirty;
    uint32_t next_gen;
    int force_deep;                  /* the next frame goes deep (a promote said no) */
    int64_t *mail;                   /* what a call says besides its return code (MAIL_*) */
    /* the walk v6s_next continues (v6s_setup): the reader's buffer and how to read it */
    const uint8_t *buf;
    int64_t len, limit, nifaces;
    const int64_t *ifaces;
    int big, nano, ng, count;
    uint32_t lt;
} ctx_t;

/* the mailbox: int64 words the caller reads after a call */
enum { MAIL_SLOT = 0, MAIL_DIRTY = 1, MAIL_NS = 2, MAIL_ADDR = 3 /* and 4: 16 bytes */, MAIL_COUNTED = 5,
       MAIL_LAST_NS = 6, MAIL_FRAMES = 7, MAIL_POS = 8, MAIL_WORDS = 9 };

static uint64_t hash_bytes(const uint8_t *p, int n, uint64_t h) {
    for (int i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h ^ (h >> 29);
}

void *v6s_new(int64_t *mail) {
    ctx_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->mail = mail;
    memset(mail, 0, MAIL_WORDS * sizeof *mail);
    c->mac_cap = 1024;
    c->mac_tab = calloc(c->mac_cap, sizeof *c->mac_tab);
    c->addr_cap = 4096;
    c->addr_tab = calloc(c->addr_cap, sizeof *c->addr_tab);
    c->next_gen = 1;
    if (!c->mac_tab || !c->addr_tab) {
        free(c->mac_tab);
        free(c->addr_tab);
        free(c);
        return NULL;
    }
    return c;
}

void v6s_free(void *p) {
    ctx_t *c = p;
    if (!c) return;
    free(c->slots);
    free(c->mac_tab);
    free(c->addr_tab);
    free(c->dirty);
    free(c);
}

static int64_t find_slot(ctx_t *c, const uint8_t *mac) {
    uint32_t m = c->mac_cap - 1, i = (uint32_t)hash_bytes(mac, 6, 0xcbf29ce484222325ULL) & m;
    for (;;) {
        uint32_t s = c->mac_tab[i];
        if (!s) return -1;
        if (!memcmp(c->slots[s - 1].mac, mac, 6)) return s - 1;
        i = (i + 1) & m;
    }
}

static int grow_macs(ctx_t *c) {
    uint32_t cap = c->mac_cap * 2, m = cap - 1;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (uint32_t s = 0; s < c->nslots; s++) {
        uint32_t i = (uint32_t)hash_bytes(c->slots[s].mac, 6, 0xcbf29ce484222325ULL) & m;
        while (t[i]) i = (i + 1) & m;
        t[i] = s + 1;
    }
    free(c->mac_tab);
    c->mac_tab = t;
    c->mac_cap = cap;
    return 0;
}

/* The slot of a host (made when new); -1: out of memory. */
int64_t v6s_slot(void *p, const uint8_t *mac) {
    ctx_t *c = p;
    int64_t s = find_slot(c, mac);
    if (s >= 0) return s;
    if (c->nslots == c->capslots) {
        uint32_t cap = c->capslots ? c->capslots * 2 : 256;
        slot_t *n = realloc(c->slots, cap * sizeof *n);
        if (!n) return -1;
        c->slots = n;
        c->capslots = cap;
    }
    if ((c->nslots + 1) * 2 > c->mac_cap && grow_macs(c)) return -1;
    s = c->nslots++;
    slot_t *sl = &c->slots[s];
    memset(sl, 0, sizeof *sl);
    memcpy(sl->mac, mac, 6);
    uint32_t m = c->mac_cap - 1, i = (uint32_t)hash_bytes(mac, 6, 0xcbf29ce484222325ULL) & m;
    while (c->mac_tab[i]) i = (i + 1) & m;
    c->mac_tab[i] = (uint32_t)s + 1;
    return s;
}

/* A host becomes known (its addresses from none) or is forgotten. */
void v6s_activate(void *p, uint32_t s, int on) {
    ctx_t *c = p;
    c->slots[s].active = (uint8_t)on;
    c->slots[s].valid = 0;
    c->slots[s].gen = c->next_gen++;  /* its addresses (and carried ones) void */
}

/* Python's facts about the host: its IPv4 seen, counted after an OFFER
 * with option 108, four Router Solicitations recorded, V6ONLY_WAIT. */
void v6s_sync(void *p, uint32_t s, int v4_ok, int after_nz, int rs_full, int64_t q_lo, int64_t q_hi) {
    slot_t *sl = &((ctx_t *)p)->slots[s];
    sl->v4_ok = (uint8_t)v4_ok;
    sl->after_nz = (uint8_t)after_nz;
    sl->rs_full = (uint8_t)rs_full;
    sl->q_lo = q_lo;
    sl->q_hi = q_hi;
    sl->valid = 1;
}

void v6s_invalidate(void *p, int64_t s) {
    ctx_t *c = p;
    if (s >= 0) {
        c->slots[s].valid = 0;
        return;
    }
    for (uint32_t i = 0; i < c->nslots; i++) c->slots[i].valid = 0;
}

static uint64_t addr_hash(uint32_t slot, uint32_t gen, int kind, const uint8_t *a) {
    uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)slot << 20) ^ ((uint64_t)gen << 3) ^ (uint64_t)kind;
    return hash_bytes(a, 16, h * 0x9E3779B97F4A7C15ULL);
}

static int addr_live(ctx_t *c, const addr_t *e) {
    return e->gen && e->slot < c->nslots && c->slots[e->slot].gen == e->gen;
}

static addr_t *addr_find(ctx_t *c, uint32_t s, int kind, const uint8_t *a) {
    uint32_t gen = c->slots[s].gen, m = c->addr_cap - 1, i = (uint32_t)addr_hash(s, gen, kind, a) & m;
    for (;;) {
        addr_t *e = &c->addr_tab[i];
        if (!e->gen) return NULL;
        if (e->slot == s && e->gen == gen && e->kind == kind && !memcmp(e->addr, a, 16)) return e;
        i = (i + 1) & m;
    }
}

static int addr_rehash(ctx_t *c, uint32_t cap) {
    addr_t *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    uint32_t m = cap - 1, used = 0;
    for (uint32_t k = 0; k < c->addr_cap; k++) {
        addr_t *e = &c->addr_tab[k];
        if (!addr_live(c, e) || !e->kind) continue;
        uint32_t i = (uint32_t)addr_hash(e->slot, e->gen, e->kind, e->addr) & m;
        while (t[i].gen) i = (i + 1) & m;
        t[i] = *e;
        used++;
    }
    free(c->addr_tab);
    c->addr_tab = t;
    c->addr_cap = cap;
    c->addr_used = used;
    return 0;
}

/* Add (kind 1 IPv6, 2 IPv4, 3 carried IPv6) or remove (kind negative) an
 * address of a host; 16 bytes (an IPv4 address in its first 4, zeros after). */
int v6s_addr(void *p, uint32_t s, int kind, const uint8_t *a) {
    ctx_t *c = p;
    if (kind < 0) {
        addr_t *e = addr_find(c, s, -kind, a);
        if (e) e->kind = 0;  /* a tombstone: the probe chain stays whole */
        return 0;
    }
    if (addr_find(c, s, kind, a)) return 0;
    if ((c->addr_used + 1) * 2 > c->addr_cap) {
        uint32_t live = 0;
        for (uint32_t k = 0; k < c->addr_cap; k++) live += addr_live(c, &c->addr_tab[k]) && c->addr_tab[k].kind;
        uint32_t cap = c->addr_cap;
        while ((live + 1) * 4 > cap) cap *= 2;
        if (addr_rehash(c, cap)) return -1;
    }
    uint32_t gen = c->slots[s].gen, m = c->addr_cap - 1, i = (uint32_t)addr_hash(s, gen, kind, a) & m;
    while (c->addr_tab[i].gen) i = (i + 1) & m;
    addr_t *e = &c->addr_tab[i];
    e->slot = s;
    e->gen = gen;
    e->kind = (uint8_t)kind;
    memcpy(e->addr, a, 16);
    c->addr_used++;
    return 0;
}

/* After a deep frame of the host: an IPv6 and an IPv4 source address
 * (NULL: none) to count its frames from, and its facts (v6s_sync). */
int v6s_learn(void *p, uint32_t s, const uint8_t *v6, const uint8_t *v4, int v4_ok, int after_nz, int rs_full,
              int64_t q_lo, int64_t q_hi) {
    if (v6 && v6s_addr(p, s, ADDR6, v6)) return -1;
    if (v4 && v6s_addr(p, s, ADDR4, v4)) return -1;
    v6s_sync(p, s, v4_ok, after_nz, rs_full, q_lo, q_hi);
    return 0;
}

/* A parallel worker's new chunk: every host's IPv6 addresses become carried ones. */
int v6s_carry_all(void *p) {
    ctx_t *c = p;
    uint32_t n = c->addr_cap;
    addr_t *old = malloc(n * sizeof *old);
    if (!old) return -1;
    memcpy(old, c->addr_tab, n * sizeof *old);
    for (uint32_t k = 0; k < n; k++) {
        addr_t *e = &old[k];
        if (addr_live(c, e) && e->kind == ADDR6) {
            addr_t *x = addr_find(c, e->slot, ADDR6, e->addr);
            if (x) x->kind = 0;
            if (v6s_addr(c, e->slot, CARRIED6, e->addr)) {
                free(old);
                return -1;
            }
        }
    }
    free(old);
    return 0;
}

/* The tallies of the hosts counted since the last drain: 10 int64 per host
 * (slot, frames, bytes, last ns, IPv6 frames, IPv6 bytes, IPv4 frames,
 * counted inside V6ONLY_WAIT, first and last IPv4 ns); ``one`` >= 0: only
 * that host.  Returns the hosts written (at most ``room``). */
int64_t v6s_drain(void *p, int64_t one, int64_t *out, int64_t room) {
    ctx_t *c = p;
    int64_t n = 0;
    if (one >= 0) {
        slot_t *sl = &c->slots[one];
        if (!sl->dirty || room < 1) return 0;  /* (it stays listed; drain-all passes over it) */
        int64_t *o = out;
        o[0] = one; o[1] = sl->frames; o[2] = sl->bytes; o[3] = sl->last_ns; o[4] = sl->v6f; o[5] = sl->v6b;
        o[6] = sl->v4f; o[7] = sl->quiet_n; o[8] = sl->v4_lo; o[9] = sl->v4_hi;
        sl->frames = sl->bytes = sl->v6f = sl->v6b = sl->v4f = sl->quiet_n = 0;
        sl->dirty = 0;
        return 1;
    }
    uint32_t k = 0;
    for (; k < c->ndirty && n < room; k++) {
        uint32_t s = c->dirty[k];
        slot_t *sl = &c->slots[s];
        sl->listed = 0;
        if (!sl->dirty) continue;
        int64_t *o = out + 10 * n++;
        o[0] = s; o[1] = sl->frames; o[2] = sl->bytes; o[3] = sl->last_ns; o[4] = sl->v6f; o[5] = sl->v6b;
        o[6] = sl->v4f; o[7] = sl->quiet_n; o[8] = sl->v4_lo; o[9] = sl->v4_hi;
        sl->frames = sl->bytes = sl->v6f = sl->v6b = sl->v4f = sl->quiet_n = 0;
        sl->dirty = 0;
    }
    if (k) memmove(c->dirty, c->dirty + k, (c->ndirty - k) * sizeof *c->dirty);
    c->ndirty -= k;
    return n;
}

void v6s_force_deep(void *p) { ((ctx_t *)p)->force_deep = 1; }

/* the 16-bit big-endian words of [p, p + n) summed (an odd byte as the high half of a last word) */
static uint64_t words(const uint8_t *p, int64_t n) {
    uint64_t s = 0;
    int64_t i = 0;
    for (; i + 1 < n; i += 2) s += ((uint32_t)p[i] << 8) | p[i + 1];
    if (i < n) s += (uint32_t)p[i] << 8;
    return s;
}

static int is_control_port(unsigned p) {
    return p == 53 || p == 5353 || p == 5355 || p == 67 || p == 68 || p == 4011 || p == 546 || p == 547;
}

static int icmp6_counted_type(unsigned t) {
    return t == 128 || t == 129 || t == 130 || t == 131 || t == 132 || t == 143 || t == 135 || t == 136 ||
           t == 137;
}

static int mark_dirty(ctx_t *c, uint32_t s) {
    slot_t *sl = &c->slots[s];
    if (sl->dirty) return 0;
    sl->dirty = 1;
    sl->v4_lo = INT64_MAX;
    sl->v4_hi = INT64_MIN;
    if (sl->listed) return 0;  /* drained on its own since: still listed */
    if (c->ndirty == c->capdirty) {
        uint32_t cap = c->capdirty ? c->capdirty * 2 : 256;
        uint32_t *n = realloc(c->dirty, cap * sizeof *n);
        if (!n) return -1;
        c->dirty = n;
        c->capdirty = cap;
    }
    c->dirty[c->ndirty++] = s;
    sl->listed = 1;
    return 0;
}

/* A TCP or UDP segment at ``o`` (the IP payload ends at ``end``) that only
 * counts: not to or from a port whose payload an audit field reads, not a
 * connection attempt, its checksum present and right (``addr``: the pseudo
 * header's address words summed).  A UDP datagram without a checksum
 * counts ("not present", not "bad"). */
static int segment_counted(const uint8_t *fr, int64_t flen, int64_t o, int64_t end, unsigned proto, uint64_t addr) {
    unsigned sport = (fr[o] << 8) | fr[o + 1], dport = (fr[o + 2] << 8) | fr[o + 3];
    int64_t seg_end = 0, length = 0;
    if (is_control_port(sport) || is_control_port(dport)) return 0;
    if (proto == 17) {
        length = (fr[o + 4] << 8) | fr[o + 5];  /* tshark's pseudo header: the UDP length */
        if (length < 8 || o + length > flen) return 0;
        if (!fr[o + 6] && !fr[o + 7]) return 1;
        seg_end = o + length;
    } else {
        if (end < o + 20 || (fr[o + 13] & 0x12) == 0x02) return 0;
        seg_end = end;
        length = end - o;
    }
    return (addr + words(fr + o, seg_end - o) + (uint64_t)length + proto) % 0xFFFF == 0;
}

/* One Ethernet frame: counted here (GO), or DEEP / SYNC / PROMOTE. */
static int classify(ctx_t *c, const uint8_t *fr, int64_t flen, uint32_t lt, uint32_t orig, int64_t ns) {
    if (c->force_deep) {
        c->force_deep = 0;
        return DEEP;
    }
    c->mail[MAIL_SLOT] = -1;  /* the host of a frame it stops at, whose tally Python drains first */
    if (lt != 1 || flen < 14 || (fr[6] & 1)) return DEEP;
    int64_t s = find_slot(c, fr + 6);
    if (s < 0 || !c->slots[s].active) return DEEP;
    slot_t *sl = &c->slots[s];
    c->mail[MAIL_SLOT] = s;
    c->mail[MAIL_DIRTY] = sl->dirty;
    if (flen < 54) return DEEP;
    if (!sl->valid) return SYNC;
    unsigned et = (fr[12] << 8) | fr[13];
    int64_t l3 = 14;
    if (et == 0x8100) {
        et = (fr[16] << 8) | fr[17];
        l3 = 18;
    }
    int counted = 0; /* 6: an IPv6 frame, 4: an IPv4 one */
    int quiet = 0;
    if (et == 0x86DD && (fr[l3] >> 4) == 6) {
        unsigned nh = fr[l3 + 6];
        int64_t o = l3 + 40, end = o + ((fr[l3 + 4] << 8) | fr[l3 + 5]);
        while ((nh == 0 || nh == 60) && o + 8 <= end) {
            if (o + 2 > flen) return DEEP;  /* (the Python loop would have failed on it: the deep path reads it) */
            nh = fr[o];
            o += ((int64_t)fr[o + 1] + 1) * 8;
        }
        if (!(o + 8 <= end && end <= flen)) return DEEP;
        const uint8_t *src = fr + l3 + 8;
        unsigned hlim = fr[l3 + 7];
        int icmp = 0; /* an ICMPv6 message that only counts if its checksum verifies */
        static const uint8_t unspecified[16];
        if (!memcmp(src, unspecified, 16)) {
            /* from ::, Audit.add records no address and no use: an MLD message, or a Router Solicitation
             * once the host's first four are recorded (with hop limit 255), only counts */
            if (nh != 58) return DEEP;
            unsigned t = fr[o];
            icmp = t == 130 || t == 131 || t == 132 || t == 143 || (t == 133 && sl->rs_full && hlim == 255);
        } else if (!addr_find(c, (uint32_t)s, ADDR6, src)) {
            if (addr_find(c, (uint32_t)s, CARRIED6, src)) {
                c->mail[MAIL_NS] = ns;
                memcpy(&c->mail[MAIL_ADDR], src, 16);
                return PROMOTE;
            }
            return DEEP;
        } else if (nh == 6 || nh == 17) {
            if (segment_counted(fr, flen, o, end, nh, words(src, 32))) counted = 6;
        } else if (nh == 58) {
            unsigned t = fr[o];  /* ND messages only with hop limit 255 (else a finding) */
            icmp = (icmp6_counted_type(t) || (t == 133 && sl->rs_full)) && !(t >= 133 && t <= 137 && hlim != 255);
        }
        if (icmp && (words(src, 32) + (uint64_t)(end - o) + 58 + words(fr + o, end - o)) % 0xFFFF == 0)
            counted = 6;
    } else if (et == 0x0800 && fr[l3] == 0x45) {
        unsigned proto = fr[l3 + 9];
        int64_t o = l3 + 20, end = l3 + ((fr[l3 + 2] << 8) | fr[l3 + 3]);
        uint8_t a4[16] = {0};
        memcpy(a4, fr + l3 + 12, 4);
        if ((proto == 6 || proto == 17) && o + 8 <= end && end <= flen && !(fr[l3 + 6] & 0x3F) && !fr[l3 + 7] &&
            addr_find(c, (uint32_t)s, ADDR4, a4)) {
            quiet = sl->q_lo <= ns && ns <= sl->q_hi;
            if ((!quiet || sl->after_nz) && sl->v4_ok && words(fr + l3, 20) % 0xFFFF == 0 &&
                segment_counted(fr, flen, o, end, proto, words(fr + l3 + 12, 8)))
                counted = 4;
        }
    }
    if (!counted) return DEEP;
    if (mark_dirty(c, (uint32_t)s)) return DEEP;
    c->mail[MAIL_COUNTED]++;
    c->mail[MAIL_LAST_NS] = ns;
    sl->frames++;
    sl->bytes += orig;
    sl->last_ns = ns;
    if (counted == 6) {
        sl->v6f++;
        sl->v6b += orig;
    } else {
        sl->v4f++;
        if (ns < sl->v4_lo) sl->v4_lo = ns;
        if (ns > sl->v4_hi) sl->v4_hi = ns;
        if (quiet) {
            sl->quiet_n++;
            sl->after_nz = 1;
        }
    }
    return GO;
}

static uint32_t rd32(const uint8_t *p, int big) {
    return big ? ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]
               : ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[1] << 8) | p[0];
}

/* Classic pcap records from buf[*pos] on.  count = 0: only walk them (a
 * parallel worker's chunk it does not read).  limit: the first offset (in
 * buf) of the next chunk.  The mailbox gets the records consumed and
 * where it stopped.  Returns GO when it stopped for the reader (buffer end,
 * a damaged record, the limit), else what classify said of the record it
 * stopped at (not consumed). */
int v6s_pcap(void *p, const uint8_t *buf, int64_t len, int64_t pos, int64_t limit, int big, int nano,
             uint32_t lt, int count) {
    ctx_t *c = p;
    int64_t at = pos, n = 0;
    int rc = GO;
    while (at + 16 <= len && at < limit) {
        const uint8_t *h = buf + at;
        uint32_t sec = rd32(h, big), frac = rd32(h + 4, big), incl = rd32(h + 8, big), orig = rd32(h + 12, big);
        if (incl > MAX_RECORD || at + 16 + (int64_t)incl > len) break;
        if (count) {
            int64_t ns = (int64_t)sec * 1000000000 + (nano ? (int64_t)frac : (int64_t)frac * 1000);
            rc = classify(c, h + 16, incl, lt, orig, ns);
            if (rc != GO) break;
        }
        at += 16 + incl;
        n++;
    }
    c->mail[MAIL_POS] = at;
    c->mail[MAIL_FRAMES] = n;
    return rc;
}

/* pcapng Enhanced Packet Blocks from buf[*pos] on (anything else stops it);
 * ifaces: per interface (link type, units per second, offset seconds). */
int v6s_pcapng(void *p, const uint8_t *buf, int64_t len, int64_t pos, int64_t limit, int big,
               const int64_t *ifaces, int64_t nifaces, int count) {
    ctx_t *c = p;
    int64_t at = pos, n = 0;
    int rc = GO;
    while (at + 8 <= len && at < limit) {
        const uint8_t *b = buf + at;
        uint32_t btype = rd32(b, big), blen = rd32(b + 4, big);
        if (btype != EPB || blen < 32 || blen % 4 || blen > MAX_RECORD || at + (int64_t)blen > len) break;
        uint32_t iface = rd32(b + 8, big), hi = rd32(b + 12, big), lo = rd32(b + 16, big);
        uint32_t caplen = rd32(b + 20, big), orig = rd32(b + 24, big);
        if (iface >= nifaces || caplen > blen - 32) break;
        const int64_t *f = ifaces + 3 * iface;
        if (f[1] <= 0) break;  /* a resolution beyond 64 bits: the reader's own */
        if (count) {
            unsigned __int128 units = ((unsigned __int128)hi << 32) | lo;
            __int128 ns = f[1] != 1000000 ? (__int128)(units * 1000000000u / (unsigned __int128)f[1])
                                           : (__int128)(units * 1000u);
            ns += (__int128)f[2] * 1000000000;
            if (ns > INT64_MAX || ns < INT64_MIN) {
                rc = DEEP;
                break;
            }
            rc = classify(c, b + 28, caplen, (uint32_t)f[0], orig, (int64_t)ns);
            if (rc != GO) break;
        }
        at += blen;
        n++;
    }
    c->mail[MAIL_POS] = at;
    c->mail[MAIL_FRAMES] = n;
    return rc;
}

/* What v6s_next walks until told otherwise: the reader's buffer, the first
 * offset of the next chunk, the format (ng: pcapng, with its interfaces;
 * else pcap with its link type and resolution), and whether frames are
 * counted (1) or only walked (0).  One call per buffer or chunk, not per
 * stop: a stop for the deep path is then a call of two arguments. */
void v6s_setup(void *p, const uint8_t *buf, int64_t len, int64_t limit, int ng, int big, int nano, uint32_t lt,
               const int64_t *ifaces, int64_t nifaces, int count) {
    ctx_t *c = p;
    c->buf = buf;
    c->len = len;
    c->limit = limit;
    c->ng = ng;
    c->big = big;
    c->nano = nano;
    c->lt = lt;
    c->ifaces = ifaces;
    c->nifaces = nifaces;
    c->count = count;
}

int v6s_next(void *p, int64_t pos) {
    ctx_t *c = p;
    return c->ng ? v6s_pcapng(c, c->buf, c->len, pos, c->limit, c->big, c->ifaces, c->nifaces, c->count)
                 : v6s_pcap(c, c->buf, c->len, pos, c->limit, c->big, c->nano, c->lt, c->count);
}
