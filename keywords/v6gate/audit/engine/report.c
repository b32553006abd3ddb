/* The report's per-host part in C (core.Engine.report calls it once, after the capture is read): every
 * host, in MAC order, judged (judge.c) and written to the report's streams, each the text its Python
 * writer (audit/hostout.py) writes for the same findings:
 *   S_TABLE    results.json's host table: a row per line, ["MAC",[[verdict,seen,measurements] or null, ...]]
 *   S_CASES    junit.xml: a testcase per host
 *   S_ROWS     report.html's per-host table: a row per host
 *   S_LINES    the command's line per host
 *   S_RECORDS  partial.json's hosts: "MAC":{record}, comma-separated (hosts that sent frames)
 *   S_FAILS    each FAIL: [column,"MAC",seen,measurements] per line (the triage groups, the summary)
 * and the count of each finding's verdicts.  The findings' constant texts and the capture's names come
 * from Python (STRINGS), written there once. */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

enum { S_TABLE, S_CASES, S_ROWS, S_LINES, S_RECORDS, S_FAILS, NSTREAMS };
enum { STR_CAPTURE, STR_PCAP, STR_FINDINGS, STR_KINDS = STR_FINDINGS + 4 * NCOLS, NSTRINGS = STR_KINDS + NKINDS };
#define FLUSH_AT (1u << 20)

static const char *const VERDICT[NVERDICTS] = {"PASS", "FAIL", "SKIP"};
static const char *const VERDICT_LOWER[NVERDICTS] = {"pass", "fail", "skip"};

typedef struct {
    report_t r;
    sbuf out[NSTREAMS], mac;
    int fd[NSTREAMS];
    int err;          /* errno of a failed write */
    int64_t flushed;  /* S_TABLE's bytes written so far */
} run_t;

enum { WRITE_FAILED = 3 };  /* longjmp'd to the call's jump (2: out of memory, xrealloc's) */

static void put(run_t *w, int s) {
    sbuf *b = &w->out[s];
    size_t done = 0;
    while (done < b->n) {
        ssize_t n = write(w->fd[s], b->p + done, b->n - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            w->err = n < 0 ? errno : EIO;
            longjmp(*oom_jump, WRITE_FAILED);
        }
        done += (size_t)n;
    }
    if (s == S_TABLE) w->flushed += (int64_t)b->n;
    b->n = 0;
}

static void flush(run_t *w, int s) {
    if (w->out[s].n >= FLUSH_AT) put(w, s);
}

/* hostout.table_row */
static void table_row(run_t *w) {
    sbuf *b = &w->out[S_TABLE];
    sb_str(b, "[\"");
    sb_add(b, w->mac.p, w->mac.n);
    sb_str(b, "\",[");
    for (int c = 0; c < NCOLS; c++) {
        const judged_t *j = &w->r.j[c];
        if (c) sb_str(b, ",");
        if (j->verdict == V_NONE) {
            sb_str(b, "null");
            continue;
        }
        sb_pf(b, "[\"%s\",", VERDICT[j->verdict]);
        js_str(b, j->seen.p, j->seen.n);
        sb_str(b, ",");
        sb_add(b, j->meas.p, j->meas.n);
        sb_str(b, "]");
    }
    sb_str(b, "]]\n");
}

/* hostout.junit_case */
static void junit_case(run_t *w) {
    const report_t *r = &w->r;
    sbuf *b = &w->out[S_CASES], *t = &w->r.scratch;
    sb_str(b, "<testcase classname=\"v6gate.audit.host\" name=\"");
    sb_add(b, w->mac.p, w->mac.n);
    sb_str(b, "\" time=\"0.000\">");
    int failing = 0, judged = 0;
    for (int c = 0; c < C_READY; c++) {
        judged += r->j[c].verdict != V_NONE;
        failing += r->j[c].verdict == V_FAIL;
    }
    if (failing) {
        sb_clear(t);
        sb_pf(t, "%d of %d findings FAIL: ", failing, judged);
        for (int c = 0, k = 0; c < C_READY; c++)
            if (r->j[c].verdict == V_FAIL) {
                if (k++) sb_str(t, "; ");
                sb_str(t, r->title[c]);
            }
        sb_str(b, "<failure message=\"");
        xml_attr(b, t->p, utf8_cut(t->p, t->n, 500));
        sb_str(b, "\" type=\"FAIL\">");
        sb_clear(t);
        for (int c = 0; c < C_READY; c++)
            if (r->j[c].verdict == V_FAIL) {
                sb_str(t, r->id[c]);
                sb_str(t, " (");
                sb_str(t, r->rfc[c]);
                sb_str(t, "): expected ");
                sb_str(t, r->expect[c]);
                sb_str(t, "; seen ");
                sb_add(t, r->j[c].seen.p, r->j[c].seen.n);
                sb_str(t, "\n");
            }
        sb_str(t, "(pcap: ");
        sb_str(t, r->pcap);
        sb_str(t, ")");
        xml_text(b, t->p, t->n);
        sb_str(b, "</failure>");
    }
    sb_str(b, "<system-out>pcap: ");
    xml_text(b, r->pcap, strlen(r->pcap));
    sb_str(b, "</system-out></testcase>");
}

/* the readiness measurements' first three addresses of a family, joined (report._row) */
static void first_three(sbuf *b, const uint8_t *p, uint32_t n, int stride, int v4) {
    for (uint32_t i = 0; i < n && i < 3; i++) {
        if (i) sb_str(b, ", ");
        if (v4)
            put_ntop4(b, p + (size_t)stride * i);
        else
            put_ntop6(b, p + (size_t)stride * i);
    }
}

/* hostout.html_row (report._row's) */
static void html_row(run_t *w, const host_t *h) {
    const report_t *r = &w->r;
    sbuf *b = &w->out[S_ROWS];
    sb_str(b, "<tr><td><code>");
    sb_add(b, w->mac.p, w->mac.n);  /* (a MAC's text needs no escape, nor do addresses) */
    sb_str(b, "</code><br><small>");
    first_three(b, h->v6.p, h->v6.n, sizeof(v6use_t), 0);
    if (h->v4.n) {
        sb_str(b, "<br>");
        first_three(b, h->v4.p, h->v4.n, 4, 1);
    }
    const judged_t *ready = &r->j[C_READY];
    sb_pf(b, "</small></td><td><span class=\"v %s\">%s</span></td><td>", VERDICT_LOWER[ready->verdict],
           VERDICT[ready->verdict]);
    if (r->share.n)
        sb_pf(b, "%s%%", r->share.p);
    else
        sb_str(b, "\xe2\x80\x94");  /* an em dash */
    sb_str(b, "</td>");
    for (int c = 0; c < C_READY; c++) {
        const judged_t *j = &r->j[c];
        if (j->verdict == V_NONE) {
            sb_str(b, "<td></td>");
            continue;
        }
        sb_pf(b, "<td><span class=\"v %s\">%s</span><br><small>", VERDICT_LOWER[j->verdict], VERDICT[j->verdict]);
        html_esc(b, j->seen.p, utf8_cut(j->seen.p, j->seen.n, 160));
        sb_str(b, "</small></td>");
    }
    sb_str(b, "</tr>");
}

/* hostout.line */
static void line(run_t *w) {
    const report_t *r = &w->r;
    sbuf *b = &w->out[S_LINES];
    sb_str(b, "  ");
    sb_add(b, w->mac.p, w->mac.n);
    sb_pf(b, "  %s  IPv6 %s%%", VERDICT[r->j[C_READY].verdict], r->share.n ? r->share.p : "-");
    for (int c = 0, k = 0; c < C_READY; c++)
        if (r->j[c].verdict == V_FAIL) {
            sb_str(b, k++ ? ", " : "  failing: ");
            sb_str(b, r->title[c]);
        }
    sb_str(b, "\n");
}

/* hostout.fail_lines */
static void fails(run_t *w) {
    sbuf *b = &w->out[S_FAILS];
    for (int c = 0; c < NCOLS; c++) {
        const judged_t *j = &w->r.j[c];
        if (j->verdict != V_FAIL) continue;
        sb_pf(b, "[%d,\"", c);
        sb_add(b, w->mac.p, w->mac.n);
        sb_str(b, "\",");
        js_str(b, j->seen.p, j->seen.n);
        sb_str(b, ",");
        sb_add(b, j->meas.p, j->meas.n);
        sb_str(b, "]\n");
    }
}

typedef struct {
    uint64_t mac;
    uint32_t i;
} order_t;

static int by_mac(const void *a, const void *b) {
    uint64_t x = ((const order_t *)a)->mac, y = ((const order_t *)b)->mac;
    return (x > y) - (x < y);
}

static void run_free(run_t *w) {
    for (int s = 0; s < NSTREAMS; s++) free(w->out[s].p);
    free(w->mac.p);
    report_t *r = &w->r;
    for (int c = 0; c < NCOLS; c++) {
        free(r->j[c].seen.p);
        free(r->j[c].meas.p);
    }
    free(r->t0_repr.p);
    free(r->capture_json.p);
    free(r->share.p);
    free(r->scratch.p);
    free(r->items.p);
    free(w);
}

/* Every host of the capture judged and written to the streams ``fds`` (S_*); ``strings``: NSTRINGS texts
 * (the capture's name, the pcap as reports show it, each finding's id, title, RFC and expectation in column
 * order, the kinds' names); ``counts``: NCOLS x NVERDICTS counts, then as many offsets in S_TABLE of the
 * first row with that finding and verdict (-1: none), then the errno of a failed write.  Returns
 * the hosts reported; -1 out of memory; -2 a write failed; -3 the wrong number of strings. */
int64_t v6a_report(void *p, const char *const *strings, int64_t nstrings, double startup_window, const int32_t *fds,
                   int64_t *counts) {
    ctx_t *c = p;
    if (nstrings != NSTRINGS) return -3;
    run_t *volatile w = calloc(1, sizeof *w);
    order_t *volatile order = NULL;
    if (!w) return -1;
    jmp_buf jump;
    switch (setjmp(jump)) {
        case 0:
            break;
        case WRITE_FAILED:
            counts[2 * NCOLS * NVERDICTS] = w->err;
            free(order);
            run_free(w);
            return -2;
        default:
            free(order);
            run_free(w);
            return -1;
    }
    oom_jump = &jump;
    report_t *r = &w->r;
    r->capture = strings[STR_CAPTURE];
    r->pcap = strings[STR_PCAP];
    for (int k = 0; k < NCOLS; k++) {
        r->id[k] = strings[STR_FINDINGS + 4 * k];
        r->title[k] = strings[STR_FINDINGS + 4 * k + 1];
        r->rfc[k] = strings[STR_FINDINGS + 4 * k + 2];
        r->expect[k] = strings[STR_FINDINGS + 4 * k + 3];
    }
    for (int k = 0; k < NKINDS; k++) r->kind[k] = strings[STR_KINDS + k];
    r->t0 = t_of(c->t0_ns);
    r->t_last = t_of(c->t_last_ns);
    r->startup_window = startup_window;
    for (int s = 0; s < NSTREAMS; s++) w->fd[s] = fds[s];
    int64_t *first = counts + NCOLS * NVERDICTS;
    for (int k = 0; k < NCOLS * NVERDICTS; k++) {
        counts[k] = 0;
        first[k] = -1;
    }
    counts[2 * NCOLS * NVERDICTS] = 0;
    sb_clear(&r->t0_repr);
    py_repr_ns(&r->t0_repr, c->t0_ns);
    sb_clear(&r->capture_json);
    js_cstr(&r->capture_json, r->capture);
    for (int s = 0; s < NSTREAMS; s++) sb_clear(&w->out[s]);
    order = xrealloc(NULL, ((size_t)c->nhosts + 1) * sizeof *order);
    for (uint32_t i = 0; i < c->nhosts; i++) {
        const uint8_t *m = c->hosts[i].mac;
        order[i].mac = ((uint64_t)m[0] << 40) | ((uint64_t)m[1] << 32) | ((uint64_t)m[2] << 24) |
                       ((uint64_t)m[3] << 16) | ((uint64_t)m[4] << 8) | m[5];
        order[i].i = i;
    }
    qsort(order, c->nhosts, sizeof *order, by_mac);
    int records = 0;
    for (uint32_t k = 0; k < c->nhosts; k++) {
        const host_t *h = &c->hosts[order[k].i];
        judge_host(r, h);
        sb_clear(&w->mac);
        put_mac(&w->mac, h->mac);
        int64_t at = w->flushed + (int64_t)w->out[S_TABLE].n;
        for (int col = 0; col < NCOLS; col++)
            if (r->j[col].verdict != V_NONE && !counts[col * NVERDICTS + r->j[col].verdict]++)
                first[col * NVERDICTS + r->j[col].verdict] = at;
        table_row(w);
        junit_case(w);
        html_row(w, h);
        line(w);
        fails(w);
        if (h->frames) {
            if (records++) sb_str(&w->out[S_RECORDS], ",");
            host_record(&w->out[S_RECORDS], r, h);
        }
        for (int s = 0; s < NSTREAMS; s++) flush(w, s);
    }
    for (int s = 0; s < NSTREAMS; s++) put(w, s);
    free(order);
    run_free(w);
    return c->nhosts;
}
