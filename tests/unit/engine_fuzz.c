/* Random frames through the audit's C engine, built with AddressSanitizer and UndefinedBehaviorSanitizer
 * by test_audit_engine.py: a read past a frame, a record or a buffer, undefined arithmetic or a leak ends
 * the run with the sanitizer's report.
 *
 * The frames start from the seeds in a pcap (the rule-edge generator's and the fixtures'), each mutated
 * (bytes flipped or set to boundary values, lengths and counts rewritten, the frame cut) and then judged
 * either alone, from an allocation of exactly its size, with a random link type, or in a pcap or pcapng
 * buffer exactly as long as its records (interfaces with random resolutions and offsets: some times do
 * not fit 64-bit ns); every few hundred rounds the result is exported (which frees it) and the context
 * freed and made again.  Then the same with allocations failing at random (the engine is compiled with
 * -Drealloc=fuzz_realloc): every call that ran out of memory says NOMEM, and freeing the context after it
 * frees everything (LeakSanitizer) and nothing twice.  It prints what it reached, for the test to see every
 * path ran; and it checks the checksum words against the plain loop.  Half the exports are the report's
 * instead (v6a_report: every host judged and its texts written, to /dev/null, with strings that need
 * escaping), as core.Engine.report calls it.
 *   engine_fuzz ROUNDS SEED SEEDS.pcap
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

#undef realloc /* (this file's own allocations are the C library's) */
void *realloc(void *p, size_t n);

void *v6a_new(int64_t *mail);
void v6a_free(void *p);
void v6a_setup(void *p, const uint8_t *buf, int64_t len, int ng, int big, int nano, uint32_t lt,
               const int64_t *ifaces, int64_t nifaces);
int v6a_next(void *p, int64_t pos, int64_t frames);
int v6a_frame(void *p, const uint8_t *d, int64_t n, uint32_t lt, uint32_t orig, int64_t ns, int64_t number);
int64_t v6a_export_run(void *p);
int64_t v6a_export_hosts(void *p, int64_t bytes);
int64_t v6a_report(void *p, const char *const *strings, int64_t nstrings, double startup_window, const int32_t *fds,
                   int64_t *counts);

static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static unsigned below(unsigned n) { return n ? (unsigned)(rnd() % n) : 0; }

static unsigned fail_one_in;  /* 0: allocations do not fail */
void *fuzz_realloc(void *p, size_t n);
void *fuzz_realloc(void *p, size_t n) {
    if (fail_one_in && !below(fail_one_in)) return NULL;
    return realloc(p, n);
}

typedef struct {
    uint8_t *p;
    uint32_t n;
} seed_t;

static seed_t *seeds;
static uint32_t nseeds;

static void load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    uint8_t head[24], rec[16];
    if (fread(head, 1, 24, f) != 24) exit(2);
    while (fread(rec, 1, 16, f) == 16) {
        uint32_t incl = rec[8] | rec[9] << 8 | rec[10] << 16 | (uint32_t)rec[11] << 24;
        seeds = realloc(seeds, (nseeds + 1) * sizeof *seeds);
        seeds[nseeds].p = malloc(incl ? incl : 1);
        seeds[nseeds].n = incl;
        if (fread(seeds[nseeds].p, 1, incl, f) != incl) exit(2);
        nseeds++;
    }
    fclose(f);
}

static const uint8_t BOUNDARY[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x2c, 0x3a, 0x40, 0x7f, 0x80, 0xc0, 0xff};

/* a mutated copy of a seed frame into buf (room 2048); its length */
static uint32_t mutant(uint8_t *buf) {
    const seed_t *s = &seeds[below(nseeds)];
    uint32_t n = s->n < 2048 ? s->n : 2048;
    memcpy(buf, s->p, n);
    unsigned edits = below(4);
    for (unsigned k = 0; k < edits && n; k++) {
        uint32_t at = below(n < 160 ? n : 160 + below(n - 159));
        switch (below(4)) {
        case 0: buf[at] ^= (uint8_t)(1u << below(8)); break;
        case 1: buf[at] = BOUNDARY[below(sizeof BOUNDARY)]; break;
        case 2: if (at + 1 < n) buf[at] = buf[at + 1] = 0xff; break;  /* a 16-bit length or count at its largest */
        default: buf[at] = (uint8_t)rnd(); break;
        }
    }
    if (!below(5)) n = below(n + 1);  /* cut */
    return n;
}

static void put32(uint8_t *p, uint32_t v, int big) {
    for (int i = 0; i < 4; i++) p[big ? 3 - i : i] = (uint8_t)(v >> (8 * i));
}

static const uint32_t LINKTYPES[] = {1, 1, 1, 1, 113, 276, 101, 12, 228, 229, 147};

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    long rounds = atol(argv[1]);
    rng_state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)atol(argv[2]);
    load(argv[3]);
    if (!nseeds) return 2;
    long frames = 0, stopped = 0, hosts = 0, offers = 0, restarts = 0, answers = 0, unsupported = 0, exported = 0;
    long nomem = 0, reported = 0;
    enum { NSTR = 2 + 4 * NCOLS + NKINDS };
    const char *strings[NSTR];
    static const char *const texts[] = {"cap<&>\"'1", "x.pcap", "audit.f", "A title", "RFC 8925 \xc3\xa9", "a \"thing\"\n\t"};
    for (int i = 0; i < NSTR; i++) strings[i] = texts[i % 6];
    int32_t fds[6];
    for (int i = 0; i < 6; i++) fds[i] = open("/dev/null", O_WRONLY);
    int64_t counts[2 * NCOLS * NVERDICTS + 1];
    int64_t mail[MAIL_WORDS];
    ctx_t *c = v6a_new(mail);
    int64_t number = 0;
    uint8_t fr[2048];
    for (long r = 0; r < 2 * rounds; r++) {
        if (r == rounds) {  /* the second half: allocations fail at random */
            v6a_free(c);
            c = v6a_new(mail);
            number = 0;
        }
        if (r >= rounds && number == 0) {  /* a fresh context: how often its allocations fail */
            static const unsigned rates[] = {4, 16, 64, 256, 1024};
            fail_one_in = rates[below(5)];
        }
        int oom = 0;
        if (below(3)) {  /* one frame, from an allocation of its exact size */
            uint32_t n = mutant(fr);
            uint8_t *p = malloc(n ? n : 1);
            memcpy(p, fr, n);
            uint32_t lt = LINKTYPES[below(sizeof LINKTYPES / sizeof *LINKTYPES)];
            int64_t ns = (int64_t)1700000000 * 1000000000 + (int64_t)(rnd() % 4000000000000ULL) - (below(50) ? 0 : (int64_t)1 << 62);
            int rc = v6a_frame(c, p, n, lt, n + below(3), ns, ++number);
            if (rc == NOMEM) oom = 1;
            else if (rc) return 3;
            free(p);
            frames++;
        } else {  /* records in a buffer exactly as long as they are */
            int ng = below(2), big = below(2), k = 1 + below(5);
            size_t len = ng ? 0 : 24, cap = 24 + (size_t)k * (2048 + 40);
            uint8_t *b = malloc(cap);
            int64_t ifaces[6] = {LINKTYPES[below(4)], 1000000, 0, LINKTYPES[below(11)], 1000000000, 0};
            if (!below(8)) ifaces[5] = below(2) ? 400000000000LL : -400000000000LL;  /* far from the epoch */
            if (!below(8)) ifaces[4] = 1;                                              /* one unit a second */
            for (int i = 0; i < k; i++) {
                uint32_t n = mutant(fr), pad = ng ? (4 - n % 4) % 4 : 0;
                uint8_t *h = b + len;
                if (ng) {
                    uint32_t blen = 32 + n + pad;
                    uint64_t units = rnd() >> below(40);
                    put32(h, 6, big);
                    put32(h + 4, blen, big);
                    put32(h + 8, below(2), big);
                    put32(h + 12, (uint32_t)(units >> 32), big);
                    put32(h + 16, (uint32_t)units, big);
                    put32(h + 20, n, big);
                    put32(h + 24, n + below(2), big);
                    memcpy(h + 28, fr, n);
                    memset(h + 28 + n, 0, pad);
                    put32(h + 28 + n + pad, blen, big);
                    len += blen;
                } else {
                    put32(h, 1700000000 + below(1000), big);
                    put32(h + 4, below(1000000000), big);
                    put32(h + 8, n, big);
                    put32(h + 12, n + below(2), big);
                    memcpy(h + 16, fr, n);
                    len += 16 + n;
                }
                if (!below(10)) put32(h + 4 + 4 * below(3), (uint32_t)rnd(), big);  /* a damaged length */
            }
            uint8_t *exact = malloc(len);
            memcpy(exact, b, len);
            free(b);
            v6a_setup(c, exact, (int64_t)len, ng, big, below(2), LINKTYPES[below(11)], ifaces, 2);
            int64_t pos = ng ? 0 : 24;
            int rc = v6a_next(c, pos, number);
            if (rc == NOMEM) oom = 1;
            if (rc == UNSUPPORTED) unsupported++;
            number += mail[MAIL_FRAMES];
            frames += mail[MAIL_FRAMES];
            if (mail[MAIL_POS] < pos || mail[MAIL_POS] > (int64_t)len) return 4;
            free(exact);
        }
        if (oom) {  /* what core.py does: the audit ends, the context is freed */
            if (!fail_one_in) return 3;
            nomem++;
            v6a_free(c);
            c = v6a_new(mail);
            number = 0;
            continue;
        }
        if (r % 500 == 499 || r == 2 * rounds - 1) {
            hosts += c->nhosts;
            stopped += c->stopped;
            for (uint32_t i = 0; i < c->nhosts; i++) {
                offers += c->hosts[i].offers.n;
                restarts += c->hosts[i].has_episode;
                answers += c->hosts[i].answers.n;
            }
            int64_t n;
            if (below(2)) {
                n = v6a_report(c, strings, NSTR, 10.0, fds, counts);
                if (n > 0) reported += n;
            } else {
                n = v6a_export_run(c);
                while (n >= 0 && (n = v6a_export_hosts(c, below(2) ? 1 : 1 << 16)) > 2) exported++;
            }
            if (n < 0 && !fail_one_in) return 3;
            nomem += n < 0;
            v6a_free(c);
            c = v6a_new(mail);
            number = 0;
        }
    }
    v6a_free(c);
    /* the checksum words against the plain loop */
    uint8_t *buf = malloc(4096);
    for (int i = 0; i < 4096; i++) buf[i] = (uint8_t)rnd();
    for (int k = 0; k < 100000; k++) {
        uint32_t off = below(2000), n = below(2000);
        uint64_t plain = 0;
        uint32_t i = 0;
        for (; i + 1 < n; i += 2) plain += ((uint32_t)buf[off + i] << 8) | buf[off + i + 1];
        if (i < n) plain += (uint32_t)buf[off + i] << 8;
        if (words(buf + off, n) % 0xFFFF != plain % 0xFFFF) {
            printf("words differ at %u+%u\n", off, n);
            return 5;
        }
    }
    free(buf);
    for (uint32_t i = 0; i < nseeds; i++) free(seeds[i].p);
    free(seeds);
    printf("frames %ld stopped %ld hosts %ld offers %ld restarts %ld answers %ld unsupported %ld exported %ld "
           "nomem %ld reported %ld\n", frames, stopped, hosts, offers, restarts, answers, unsupported, exported, nomem,
           reported);
    return 0;
}
