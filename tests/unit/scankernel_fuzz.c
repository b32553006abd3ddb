/* Random captures through the counting kernel, built with AddressSanitizer
 * and UndefinedBehaviorSanitizer by test_audit_kernel.py: any read past a
 * record, a frame or the buffer, any undefined arithmetic, ends the run.
 *
 * Each round makes hosts (MACs from a small pool, addresses known, carried,
 * facts random), then buffers of pcap records or pcapng blocks whose frames
 * are built from plausible headers (802.1Q, IPv6 with hop-by-hop and
 * destination options, IPv4, TCP, UDP, ICMPv6 from :: or a known address)
 * and then mutated; a single-record buffer is exactly as long as its record,
 * so a read past the frame is a read past the allocation.  The kernel is
 * driven as fast.py drives it: SYNC answered with facts, PROMOTE with the
 * address promoted (or refused: forced deep), a DEEP or stopped record
 * stepped over.  Prints what it saw so the test can tell every path ran.
 *   scankernel_fuzz ROUNDS SEED
 */
#include "../../keywords/v6gate/audit/scankernel.c"

#include <stdio.h>

static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static unsigned below(unsigned n) { return n ? (unsigned)(rnd() % n) : 0; }

#define HOSTS 6
static const uint8_t pool6[4][16] = {
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1},
    {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 2},
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3},
    {0},
};
static const uint8_t pool4[2][4] = {{10, 1, 0, 1}, {192, 0, 2, 7}};

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* a frame into f (room: 1600), its length */
static int frame(uint8_t *f) {
    int n = 0;
    f[0] = below(4) ? 0x02 : 0x33;  /* unicast or group destination */
    memset(f + 1, 0, 5);
    f[6] = below(10) ? 0x02 : 0x01; /* source: a pool host, sometimes a group address */
    memset(f + 7, 0, 4);
    f[11] = (uint8_t)below(HOSTS + 1);
    n = 12;
    if (!below(4)) {
        put16(f + n, 0x8100);
        put16(f + n + 2, below(4096));
        n += 4;
    }
    int v6 = below(3) != 0;
    put16(f + n, v6 ? 0x86DD : (below(5) ? 0x0800 : 0x0806));
    n += 2;
    int l3 = n, proto;
    if (v6) {
        f[n] = 0x60;
        memset(f + n + 1, 0, 3);
        memcpy(f + n + 8, pool6[below(4)], 16);
        memcpy(f + n + 24, pool6[below(3)], 16);
        f[n + 7] = below(3) ? 255 : (uint8_t)below(256);
        n += 40;
        proto = below(5) ? (int)(below(3) == 0 ? 58 : (below(2) ? 6 : 17)) : 0;
        int last = 0, nh_at = l3 + 6;
        while ((proto == 0 || proto == 60) && n < 1400 && !last) {  /* hop-by-hop / destination options */
            f[nh_at] = (uint8_t)proto;
            int len8 = below(3);
            nh_at = n;
            f[n + 1] = (uint8_t)len8;
            memset(f + n + 2, 1, 6 + len8 * 8);
            n += 8 + len8 * 8;
            proto = below(3) ? (below(2) ? 58 : 6) : 60;
            last = below(2);
        }
        f[nh_at] = (uint8_t)proto;
    } else {
        f[n] = 0x45;
        memset(f + n + 1, 0, 19);
        f[n + 9] = (uint8_t)(proto = below(2) ? 6 : 17);
        memcpy(f + n + 12, pool4[below(2)], 4);
        memcpy(f + n + 16, pool4[below(2)], 4);
        n += 20;
    }
    int l4 = n, body = (int)below(120);
    if (proto == 58) {
        static const uint8_t types[] = {128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 143, 1};
        f[n] = types[below(sizeof types)];
        memset(f + n + 1, 0, 3);
        n += 4 + body;
    } else {
        static const unsigned ports[] = {443, 53, 5353, 67, 68, 546, 547, 40000, 4011, 5355};
        put16(f + n, ports[below(10)]);
        put16(f + n + 2, ports[below(10)]);
        if (proto == 6) {
            memset(f + n + 4, 0, 16);
            f[n + 12] = 0x50;
            f[n + 13] = below(3) ? 0x18 : 0x02;
            n += 20 + body;
        } else {
            put16(f + n + 4, (unsigned)(8 + body));
            put16(f + n + 6, below(4) ? (unsigned)below(65536) : 0);
            n += 8 + body;
        }
    }
    for (int i = l4 + 4; i < n; i++) f[i] = (uint8_t)rnd();
    if (v6) put16(f + l3 + 4, (unsigned)(n - l3 - 40)); else put16(f + l3 + 2, (unsigned)(n - l3));
    /* the checksum right (counted), or not */
    if (below(2)) {
        uint64_t s = v6 ? words(f + l3 + 8, 32) : words(f + l3 + 12, 8);
        int ck = proto == 58 ? 2 : proto == 6 ? 16 : 6;
        if (l4 + ck + 2 <= n && proto) {
            f[l4 + ck] = f[l4 + ck + 1] = 0;
            uint64_t len = proto == 17 ? (uint64_t)((f[l4 + 4] << 8) | f[l4 + 5]) : (uint64_t)(n - l4);
            uint64_t v = s + words(f + l4, n - l4) + len + (unsigned)proto;
            while (v >> 16) v = (v & 0xFFFF) + (v >> 16);
            put16(f + l4 + ck, (unsigned)(~v & 0xFFFF));
        }
        if (!v6) {
            f[l3 + 10] = f[l3 + 11] = 0;
            uint64_t v = words(f + l3, 20);
            while (v >> 16) v = (v & 0xFFFF) + (v >> 16);
            put16(f + l3 + 10, (unsigned)(~v & 0xFFFF));
        }
    }
    int muts = below(3) ? 0 : (int)below(6);  /* then damage it */
    for (int i = 0; i < muts; i++) f[below((unsigned)n)] = (uint8_t)rnd();
    if (!below(4)) n = (int)below((unsigned)n + 1);  /* cut */
    return n;
}

static int64_t mail[MAIL_WORDS];
static long seen[5], frames_total, counted_total;

static void drive(void *c, int ng, const uint8_t *buf, int64_t len, int big, int nano, const int64_t *ifs,
                  int64_t nifs) {
    int64_t pos = 0;
    for (int guard = 0; guard < 10000 && pos < len; guard++) {
        int64_t limit = below(8) ? len : (int64_t)below((unsigned)len + 1);
        int count = below(10) != 0;
        int rc;
        if (below(2)) {  /* as fast.py calls it, or directly */
            v6s_setup(c, buf, len, limit, ng, big, nano, 1, ifs, nifs, count);
            rc = v6s_next(c, pos);
        } else {
            rc = ng ? v6s_pcapng(c, buf, len, pos, limit, big, ifs, nifs, count)
                    : v6s_pcap(c, buf, len, pos, limit, big, nano, 1, count);
        }
        frames_total += mail[MAIL_FRAMES];
        pos = mail[MAIL_POS];
        seen[rc]++;
        if (rc == SYNC) {
            v6s_sync(c, (uint32_t)mail[MAIL_SLOT], below(2), below(2), below(2), (int64_t)below(3) - 1,
                     below(2) ? INT64_MAX : 0);
            continue;
        }
        if (rc == PROMOTE) {
            if (below(4)) {
                v6s_addr(c, (uint32_t)mail[MAIL_SLOT], -CARRIED6, (const uint8_t *)&mail[MAIL_ADDR]);
                v6s_addr(c, (uint32_t)mail[MAIL_SLOT], ADDR6, (const uint8_t *)&mail[MAIL_ADDR]);
            } else {
                v6s_force_deep(c);
            }
            continue;
        }
        /* DEEP or stopped: step over the record here (the reader's job), or stop at a damaged one */
        if (pos >= len) break;
        uint32_t rl;
        if (ng) {
            if (pos + 8 > len) break;
            rl = rd32(buf + pos + 4, big);
        } else {
            if (pos + 16 > len) break;
            rl = 16 + rd32(buf + pos + 8, big);
        }
        if (rl < 8 || rl > len - pos) break;
        pos += rl;
        if (below(8) == 0) {
            int64_t out[10 * 4];
            while (v6s_drain(c, -1, out, 4) == 4) {}
        }
    }
}

static void hosts(void *c) {
    for (int h = 0; h <= HOSTS; h++) {
        uint8_t mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)h};
        int64_t s = v6s_slot(c, mac);
        if (s < 0) abort();
        if (below(5) == 0) {
            v6s_activate(c, (uint32_t)s, 0);
            continue;
        }
        v6s_activate(c, (uint32_t)s, 1);
        uint8_t a4[16] = {0};
        memcpy(a4, pool4[below(2)], 4);
        v6s_learn(c, (uint32_t)s, below(3) ? pool6[below(3)] : NULL, below(2) ? a4 : NULL, below(2), below(2),
                  below(2), below(2) ? INT64_MAX : 0, below(2) ? INT64_MIN : INT64_MAX);
        if (below(3) == 0) v6s_addr(c, (uint32_t)s, CARRIED6, pool6[below(3)]);
        if (below(3) == 0) v6s_invalidate(c, s);
    }
    if (below(6) == 0 && v6s_carry_all(c)) abort();
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 1000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) | 1 : 88172645463325252ULL;
    static uint8_t f[1700];
    for (long r = 0; r < rounds; r++) {
        void *c = v6s_new(mail);
        if (!c) abort();
        for (int step = 0; step < 8; step++) {
            hosts(c);
            int ng = below(2), big = below(2), nano = below(2), many = below(3) == 0;
            int nrec = many ? 1 + (int)below(12) : 1;
            int64_t ifs[6] = {1, below(3) ? 1000000000 : (below(2) ? 1000000 : 0), (int64_t)below(3) - 1,
                              below(2) ? 1 : 101, 1000, 0};
            int64_t nifs = 1 + below(2), cap = nrec * (1700 + 32), len = 0;
            uint8_t *tmp = malloc((size_t)cap);
            if (!tmp) abort();
            for (int k = 0; k < nrec; k++) {
                int n = frame(f);
                uint32_t incl = (uint32_t)n, orig = (uint32_t)n + below(3) * 100;
                uint8_t *p = tmp + len;
                uint32_t words32[7];
                int hdr;
                if (ng) {
                    uint32_t blen = 32 + ((incl + 3) & ~3u);
                    if (below(20) == 0) blen = (uint32_t)below(64);  /* damaged */
                    uint32_t iface = below(8) ? (uint32_t)below((unsigned)nifs) : 7;
                    uint32_t caplen = below(12) ? incl : incl + 40;
                    words32[0] = below(16) ? 6 : 3;
                    words32[1] = blen; words32[2] = iface; words32[3] = (uint32_t)(rnd() & 0x7);
                    words32[4] = (uint32_t)rnd(); words32[5] = caplen; words32[6] = orig;
                    hdr = 28;
                    int64_t total = 32 + ((incl + 3) & ~3u);
                    for (int w = 0; w < 7; w++) {
                        uint32_t v = words32[w];
                        uint8_t *q = p + 4 * w;
                        if (big) { q[0] = (uint8_t)(v >> 24); q[1] = (uint8_t)(v >> 16); q[2] = (uint8_t)(v >> 8); q[3] = (uint8_t)v; }
                        else { q[3] = (uint8_t)(v >> 24); q[2] = (uint8_t)(v >> 16); q[1] = (uint8_t)(v >> 8); q[0] = (uint8_t)v; }
                    }
                    memcpy(p + hdr, f, incl);
                    memset(p + hdr + incl, 0, (size_t)(total - hdr - incl));
                    len += total;
                } else {
                    words32[0] = 1700000000u + (uint32_t)below(100); words32[1] = (uint32_t)below(1000000000);
                    words32[2] = below(30) ? incl : (uint32_t)rnd(); words32[3] = orig;
                    for (int w = 0; w < 4; w++) {
                        uint32_t v = words32[w];
                        uint8_t *q = p + 4 * w;
                        if (big) { q[0] = (uint8_t)(v >> 24); q[1] = (uint8_t)(v >> 16); q[2] = (uint8_t)(v >> 8); q[3] = (uint8_t)v; }
                        else { q[3] = (uint8_t)(v >> 24); q[2] = (uint8_t)(v >> 16); q[1] = (uint8_t)(v >> 8); q[0] = (uint8_t)v; }
                    }
                    memcpy(p + 16, f, incl);
                    len += 16 + incl;
                }
            }
            uint8_t *buf = malloc((size_t)len ? (size_t)len : 1);  /* exactly as long as its records */
            if (!buf) abort();
            memcpy(buf, tmp, (size_t)len);
            free(tmp);
            drive(c, ng, buf, len, big, nano, ifs, nifs);
            free(buf);
        }
        int64_t out[10 * 8];
        while (v6s_drain(c, -1, out, 8) == 8) {}
        counted_total += mail[MAIL_COUNTED];
        v6s_free(c);
    }
    printf("rounds %ld frames %ld counted %ld stops %ld deep %ld sync %ld promote %ld\n", rounds, frames_total,
           counted_total, seen[GO], seen[DEEP], seen[SYNC], seen[PROMOTE]);
    return 0;
}
