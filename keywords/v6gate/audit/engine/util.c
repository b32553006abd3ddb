/* Growable buffers, text as dissect.py writes it, and the frame time as Python computes it. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine.h"

jmp_buf *oom_jump;  /* where an allocation failure goes (the current API call's) */

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) longjmp(*oom_jump, 2);
    return q;
}

char *xstrdup(const char *s, size_t n) {
    char *p = xrealloc(NULL, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void sb_grow(sbuf *b, size_t more) {
    if (b->p && b->n + more + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

void sb_add(sbuf *b, const char *s, size_t n) {
    sb_grow(b, n);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

void sb_clear(sbuf *b) {
    b->n = 0;
    sb_grow(b, 0);
    b->p[0] = 0;
}

void sb_fmt(sbuf *b, const char *fmt, ...) {
    va_list ap;
    char tmp[256];
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sb_add(b, tmp, (size_t)n);
        return;
    }
    sb_grow(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void *vec_push(vec *v, size_t item) {
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 4;
        v->p = xrealloc(v->p, (size_t)cap * item);
        v->cap = cap;
    }
    return v->p + item * v->n++;
}

int vec_has(const vec *v, const void *item, size_t size) {
    for (uint32_t i = 0; i < v->n; i++)
        if (!memcmp(v->p + size * i, item, size)) return 1;
    return 0;
}

void put_ntop6(sbuf *b, const uint8_t *a) {
    char s[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, a, s, sizeof s);
    sb_str(b, s);
}

void put_ntop4(sbuf *b, const uint8_t *a) {
    char s[16];
    int n = 0;
    for (int i = 0; i < 4; i++) {
        unsigned v = a[i];
        if (i) s[n++] = '.';
        if (v >= 100) s[n++] = (char)('0' + v / 100);
        if (v >= 10) s[n++] = (char)('0' + v / 10 % 10);
        s[n++] = (char)('0' + v % 10);
    }
    sb_add(b, s, (size_t)n);
}

void put_mac(sbuf *b, const uint8_t *m) {
    static const char hex[] = "0123456789abcdef";
    char s[17];
    for (int i = 0; i < 6; i++) {
        s[3 * i] = hex[m[i] >> 4];
        s[3 * i + 1] = hex[m[i] & 15];
        if (i < 5) s[3 * i + 2] = ':';
    }
    sb_add(b, s, 17);
}

/* Python's float(dissect.time_text(ns)), the frame time the rules compare: strtod and Python's float()
 * both round the decimal text correctly */
double t_of(int64_t ns) {
    static int64_t last_ns;
    static double last_t;
    static int have;
    if (have && ns == last_ns) return last_t;
    int64_t sec = ns / 1000000000, frac = ns % 1000000000;
    if (frac < 0) {  /* Python's floor division and its non-negative remainder */
        frac += 1000000000;
        sec -= 1;
    }
    char s[48];
    snprintf(s, sizeof s, "%lld.%09lld", (long long)sec, (long long)frac);
    last_t = strtod(s, NULL);
    last_ns = ns;
    have = 1;
    return last_t;
}

uint64_t hash_bytes(const uint8_t *p, int n, uint64_t h) {
    for (int i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h ^ (h >> 29);
}
