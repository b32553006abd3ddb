/* Text as Python writes it, for the report's per-host outputs (report.c): a float's repr (what json.dumps
 * and an f-string's {x} write), round(x, n), format(x, ".3f"); JSON strings as json.dumps escapes them
 * (ensure_ascii); html.escape (quotes too); XML attributes and text as ElementTree escapes them; a
 * string cut at n code points (Python's s[:n]).  The strings given are UTF-8 (the engine's own are
 * ASCII; the findings' constant texts come from Python, some with a non-ASCII character).
 *
 * Rounding: glibc's printf and strtod are exact (correctly rounded, ties to even on the exact binary
 * value), as Python's _Py_dg_dtoa and _Py_dg_strtod are, so "%.*f" and strtod give Python's round() and
 * format(); the shortest repr is searched digit count by digit count (py_repr).  tests/unit/
 * test_audit_report_c.py compares each with Python on millions of values, powers of two included. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* The p significant digits of |x| that read back as x, if any: the nearest p-digit number, or the next one
 * up (x a power of two: the numbers that read back as x reach twice as far above it as below; the only p-digit
 * number that can read back besides the nearest).  Their count (0: none), ``digits`` and ``exp10``. */
static int digits_of(double ax, int p, char *digits, int *exp10) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.*e", p - 1, ax);
    char *e = strchr(buf, 'e');
    int n = 0;
    for (char *s = buf; s < e; s++)
        if (*s != '.') digits[n++] = *s;
    *exp10 = atoi(e + 1);
    if (strtod(buf, NULL) == ax) return n;
    int k = n - 1;
    while (k >= 0 && digits[k] == '9') digits[k--] = '0';
    if (k < 0) {
        digits[0] = '1';
        ++*exp10;
    } else {
        digits[k]++;
    }
    char s[48];
    snprintf(s, sizeof s, "%c.%.*se%d", digits[0], n - 1, digits + 1, *exp10);
    return strtod(s, NULL) == ax ? n : 0;
}

/* repr's digits of |x| (no trailing zeros but a lone one) and its decimal point (value = 0.DIGITS x
 * 10^decpt): the fewest that read back as x, the nearest of them (Python's _Py_dg_dtoa, mode 0).  Whether
 * some p digits read back only grows with p: a binary search. */
static int shortest(double x, char *digits, int *decpt) {
    double ax = fabs(x);
    int lo = 1, hi = 17, exp10;
    char d[20];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (digits_of(ax, mid, d, &exp10))
            hi = mid;
        else
            lo = mid + 1;
    }
    int n = digits_of(ax, lo, digits, &exp10);
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = 0;
    *decpt = exp10 + 1;
    return n;
}

/* repr's layout of digits and decimal point (float_repr_style "short"): fixed notation unless the exponent
 * is below -4 or above 15, ".0" after a whole number */
static void layout(sbuf *b, int negative, const char *digits, int n, int decpt) {
    char out[400];
    int m = 0;
    if (negative) out[m++] = '-';
    if (decpt <= -4 || decpt > 16) {
        out[m++] = digits[0];
        if (n > 1) {
            out[m++] = '.';
            memcpy(out + m, digits + 1, (size_t)n - 1);
            m += n - 1;
        }
        m += snprintf(out + m, sizeof out - (size_t)m, "e%c%02d", decpt - 1 < 0 ? '-' : '+', abs(decpt - 1));
    } else if (decpt <= 0) {
        out[m++] = '0';
        out[m++] = '.';
        for (int i = 0; i < -decpt; i++) out[m++] = '0';
        memcpy(out + m, digits, (size_t)n);
        m += n;
    } else if (decpt >= n) {
        memcpy(out + m, digits, (size_t)n);
        m += n;
        for (int i = n; i < decpt; i++) out[m++] = '0';
        out[m++] = '.';
        out[m++] = '0';
    } else {
        memcpy(out + m, digits, (size_t)decpt);
        m += decpt;
        out[m++] = '.';
        memcpy(out + m, digits + decpt, (size_t)(n - decpt));
        m += n - decpt;
    }
    sb_add(b, out, (size_t)m);
}

/* repr(x) of a finite float */
void py_repr(sbuf *b, double x) {
    if (x == 0) {
        sb_str(b, signbit(x) ? "-0.0" : "0.0");
        return;
    }
    char digits[20];
    int decpt, n = shortest(x, digits, &decpt);
    layout(b, signbit(x) != 0, digits, n, decpt);
}

/* repr(round(x, n)), 0 <= n <= 9.  The text "%.nf" prints reads back as round(x, n); stripped of its
 * zeros it is also repr's when a double is finer than 10^-n there (below 4.5e15 x 10^-n: no two such
 * texts read back as one double, and repr's fewer digits would be one of them): times, percentages. */
void py_repr_round(sbuf *b, double x, int n) {
    static const double LIMIT[10] = {4.5e15, 4.5e14, 4.5e13, 4.5e12, 4.5e11, 4.5e10, 4.5e9, 4.5e8, 4.5e7, 4.5e6};
    if (!(fabs(x) < LIMIT[n])) {
        py_repr(b, py_round(x, n));
        return;
    }
    char buf[64], digits[40];
    snprintf(buf, sizeof buf, "%.*f", n, x);
    int negative = buf[0] == '-', k = 0, decpt = 0, seen_point = 0, lead = 1;
    for (const char *s = buf + negative; *s; s++) {
        if (*s == '.') {
            seen_point = 1;
            continue;
        }
        if (lead && *s == '0') {  /* leading zeros move the point */
            if (seen_point) decpt--;
            continue;
        }
        lead = 0;
        digits[k++] = *s;
        if (!seen_point) decpt++;
    }
    if (!k) {  /* round(x, n) is zero: repr keeps its sign */
        sb_str(b, negative ? "-0.0" : "0.0");
        return;
    }
    while (k > 1 && digits[k - 1] == '0') k--;
    layout(b, negative, digits, k, decpt);
}

/* repr(t_of(ns)): a frame's time.  Its text "SECONDS.NNNNNNNNN" reads back as the time; stripped of its zeros
 * (k decimals) it is also repr's when the doubles there are closer than 10^-k (no other text of k or
 * fewer decimals reads back as the same double): a time in whole microseconds of this century */
void py_repr_ns(sbuf *b, int64_t ns) {
    double t = t_of(ns);
    int64_t sec = ns / 1000000000, frac = ns % 1000000000;
    int k = 9;
    while (k > 0 && frac % 10 == 0) {
        frac /= 10;
        k--;
    }
    static const double TEN[] = {1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9};
    if (sec <= 0 || frac < 0 || !(nextafter(t, INFINITY) - t < TEN[k]) || !(t - nextafter(t, 0) < TEN[k])) {
        py_repr(b, t);
        return;
    }
    char digits[40];
    int decpt = snprintf(digits, sizeof digits, "%lld", (long long)sec), n = decpt;
    if (k) n += snprintf(digits + n, sizeof digits - (size_t)n, "%0*lld", k, (long long)frac);
    while (n > 1 && digits[n - 1] == '0') n--;
    layout(b, 0, digits, n, decpt);
}

/* round(x, n) */
double py_round(double x, int n) {
    char buf[400];
    snprintf(buf, sizeof buf, "%.*f", n, x);
    return strtod(buf, NULL);
}

/* str(v) of an integer */
void put_i64(sbuf *b, int64_t v) {
    char out[24], *e = out + sizeof out, *p = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    sb_add(b, p, (size_t)(e - p));
}

/* sb_fmt for the report's texts, without printf's machinery (most of the report's time): %s, %d, %u,
 * %lld and %% only */
void sb_pf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *run = fmt;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') continue;
        sb_add(b, run, (size_t)(f - run));
        f++;
        if (*f == 's') {
            sb_str(b, va_arg(ap, const char *));
        } else if (*f == 'd') {
            put_i64(b, va_arg(ap, int));
        } else if (*f == 'u') {
            put_i64(b, va_arg(ap, unsigned));
        } else if (f[0] == 'l' && f[1] == 'l' && f[2] == 'd') {
            put_i64(b, va_arg(ap, long long));
            f += 2;
        } else {  /* %% */
            sb_add(b, "%", 1);
        }
        run = f + 1;
    }
    sb_add(b, run, strlen(run));
    va_end(ap);
}

/* format(x, ".3f") */
void py_fixed3(sbuf *b, double x) { sb_fmt(b, "%.3f", x); }

/* a JSON string as json.dumps writes it (ensure_ascii): \" \\ \n \r \t \b \f, other control characters
 * and everything past '~' as \uXXXX (UTF-16 surrogate pairs past U+FFFF) */
void js_str(sbuf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    sb_grow(b, n + 2);
    sb_add(b, "\"", 1);
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && u[run] >= ' ' && u[run] <= '~' && u[run] != '"' && u[run] != '\\') run++;
        sb_add(b, s + i, run - i);
        i = run;
        if (i == n) break;
        unsigned cp = u[i];
        size_t len = 1;
        if (cp >= 0xF0 && i + 3 < n) {
            cp = ((cp & 7u) << 18) | ((u[i + 1] & 63u) << 12) | ((u[i + 2] & 63u) << 6) | (u[i + 3] & 63u);
            len = 4;
        } else if (cp >= 0xE0 && cp < 0xF0 && i + 2 < n) {
            cp = ((cp & 15u) << 12) | ((u[i + 1] & 63u) << 6) | (u[i + 2] & 63u);
            len = 3;
        } else if (cp >= 0xC0 && cp < 0xE0 && i + 1 < n) {
            cp = ((cp & 31u) << 6) | (u[i + 1] & 63u);
            len = 2;
        }
        i += len;
        const char *esc = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '\n' ? "\\n" : cp == '\r' ? "\\r"
                          : cp == '\t' ? "\\t" : cp == '\b' ? "\\b" : cp == '\f' ? "\\f" : NULL;
        if (esc) {
            sb_add(b, esc, 2);
            continue;
        }
        unsigned units[2] = {cp, 0};
        int k = 1;
        if (cp > 0xFFFF) {
            units[0] = 0xD800 | ((cp - 0x10000) >> 10);
            units[1] = 0xDC00 | ((cp - 0x10000) & 0x3FF);
            k = 2;
        }
        for (int w = 0; w < k; w++) {
            char e[6] = {'\\', 'u', hex[units[w] >> 12 & 15], hex[units[w] >> 8 & 15], hex[units[w] >> 4 & 15],
                         hex[units[w] & 15]};
            sb_add(b, e, 6);
        }
    }
    sb_add(b, "\"", 1);
}

void js_cstr(sbuf *b, const char *s) { js_str(b, s ? s : "", s ? strlen(s) : 0); }

/* the bytes of s's first ``chars`` code points (Python's s[:chars]) */
size_t utf8_cut(const char *s, size_t n, size_t chars) {
    size_t i = 0;
    for (size_t k = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (k == chars) break;
            k++;
        }
    }
    return i;
}

/* s with each byte that ``with`` maps replaced by its text */
static void escape(sbuf *b, const char *s, size_t n, const char *const with[256]) {
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && !with[(unsigned char)s[run]]) run++;
        sb_add(b, s + i, run - i);
        if (run == n) break;
        sb_str(b, with[(unsigned char)s[run]]);
        i = run + 1;
    }
}

/* html.escape(s, quote=True) (report.py's _e) */
void html_esc(sbuf *b, const char *s, size_t n) {
    static const char *const with[256] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;",
                                          ['\''] = "&#x27;"};
    escape(b, s, n, with);
}

/* an XML attribute value as ElementTree writes it */
void xml_attr(sbuf *b, const char *s, size_t n) {
    static const char *const with[256] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;",
                                          ['\r'] = "&#13;", ['\n'] = "&#10;", ['\t'] = "&#09;"};
    escape(b, s, n, with);
}

/* XML text as ElementTree writes it */
void xml_text(sbuf *b, const char *s, size_t n) {
    static const char *const with[256] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;"};
    escape(b, s, n, with);
}
