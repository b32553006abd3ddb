/* v6gate-loadgen: request/response, connect/request/response and streaming
 * transactions over TCP with N concurrent client/server pairs, for the
 * performance gates (the z/VM study's RR, CRR and STR workloads).  No common
 * packaged tool measures these with a family-neutral code path (netperf is not
 * in Debian main; sockperf has no IPv6).
 *
 *   v6gate-loadgen server PORT [DSTOPTS]
 *       listens on [::]:PORT (IPv4 and IPv6), one thread per connection (and, with
 *       DSTOPTS, on [::]:PORT+1 for IPv6 with a Destination Options header and on
 *       [::]:PORT+2 for IPv6 with a Hop-by-Hop Options header of the same size); and
 *       echoes UDP datagrams on [::]:PORT (IPv4 and IPv6: each datagram sent back as
 *       it came, for alternate's urr mode).  Each
 *       connection starts with a 20-byte hello: "V6G2", request size, response
 *       size, Destination Options header length, bytes per send() of a response
 *       (0: 256 KiB) (all 32-bit, network order); then: read REQ bytes, write
 *       RESP bytes, until the client closes.  (The 16-byte hello of older
 *       versions began "V6GL": an old server closes a new client's connection
 *       and the gate ends ERROR, rather than misreading the stream.)
 *   v6gate-loadgen client HOST PORT MODE REQ RESP PAIRS SECONDS [WARMUP [DSTOPTS [SOCKBUF]]]
 *       MODE rr (one connection per pair, back-to-back transactions), crr (a
 *       new connection per transaction), str (as rr: a small request, a large
 *       response).  Prints one JSON object: transactions and bytes counted
 *       after WARMUP seconds, the measured seconds, and this process's CPU time
 *       (getrusage) for the measured window.
 *   v6gate-loadgen alternate HOST_A PORT_A HOST_B PORT_B rr|str|urr REQ RESP SECONDS SLICE [WARMUP [SOCKBUF [CHUNK]]]
 *       one thread, one connection to each of A and B (e.g. the DUT's IPv4 and IPv6 address, or its
 *       plain and Destination Options ports), kept open for the whole trial; back-to-back
 *       transactions on A for SLICE seconds, then on B, in ABBA order (slice k runs A then B when k is
 *       even, B then A when odd), so both arms see the same seconds of the machine.  Prints one JSON
 *       object: per arm transactions, bytes, seconds spent on it, mean latency and this thread's CPU
 *       time (RUSAGE_THREAD) while on it, plus the number of slices.  CHUNK: bytes per send() of a
 *       request and of a response (a stream of CHUNK-byte messages: str for a download, rr with a
 *       large REQ and a 1-byte RESP for an upload).  urr: UDP request/response on a socket
 *       per arm to the server's UDP echo, one datagram of REQ bytes each way (RESP must equal
 *       REQ; above the path MTU both ends fragment and reassemble every datagram); a datagram
 *       lost, or late by more than 20 ms, is counted in "lost" and the request sent again.
 *   DSTOPTS (8..256, a multiple of 8): the client talks to PORT+1, where the
 *   server sends its responses with an IPv6 Destination Options header of that
 *   many bytes (one PadN option), set with IPV6_DSTOPTS on the listening socket
 *   (needs CAP_NET_RAW); PORT+2 sends them with a Hop-by-Hop Options header of
 *   that many bytes (IPV6_HOPOPTS; a client reaches it by naming the port).
 *
 * Built on first use by v6gate (net/loadgen.py) with the system C compiler.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Returns 0 when n bytes arrived, -1 on error or EOF, 1 when *deadline passed first (a slow
 * response is cut at the end of the trial; its bytes so far are counted). */
static int read_full(int fd, char *buf, size_t n, size_t bufsz, unsigned long long *counter, const double *start,
                     const double *deadline) {
    size_t got = 0;
    while (got < n) {
        if (deadline && now() >= *deadline) return 1;
        size_t want = n - got < bufsz ? n - got : bufsz;
        ssize_t r = recv(fd, buf, want, 0);
        if (r == 0) return -1;
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += r;
        if (counter && now() >= *start) __atomic_add_fetch(counter, (unsigned long long)r, __ATOMIC_RELAXED);
    }
    return 0;
}

static int write_full(int fd, const char *buf, size_t n, size_t bufsz) {
    size_t sent = 0;
    while (sent < n) {
        size_t want = n - sent < bufsz ? n - sent : bufsz;
        ssize_t w = send(fd, buf, want, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        sent += w;
    }
    return 0;
}

#define BUFSZ (256 * 1024)

/* ---------------------------------------------------------------- server */
static void *serve(void *arg) {
    int fd = (int)(intptr_t)arg;
    uint32_t hello[5];
    char *buf = malloc(BUFSZ);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!buf || read_full(fd, (char *)hello, sizeof hello, sizeof hello, NULL, NULL, NULL) < 0 ||
        memcmp(hello, "V6G2", 4) != 0)
        goto done;
    size_t req = ntohl(hello[1]), resp = ntohl(hello[2]), dst = ntohl(hello[3]), wsize = ntohl(hello[4]);
    (void)dst; /* the Destination Options header comes from the listener (see server()) */
    if (wsize == 0 || wsize > BUFSZ) wsize = BUFSZ;
    memset(buf, 'r', BUFSZ);
    for (;;) {
        if (read_full(fd, buf, req, BUFSZ, NULL, NULL, NULL) != 0) break;
        if (write_full(fd, buf, resp, wsize) < 0) break;
    }
done:
    free(buf);
    close(fd);
    return NULL;
}

/* optname: 0 (no extension header), IPV6_DSTOPTS or IPV6_HOPOPTS, with a header of `dstopts` bytes */
static int listener(int port, size_t dstopts, int optname) {
    int s = socket(AF_INET6, SOCK_STREAM, 0), zero = 0, one = 1;
    if (s < 0) { perror("socket"); return -1; }
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, dstopts ? &one : &zero, sizeof zero);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (dstopts) {
        /* Set on the listener, the header is inherited by every accepted connection and counted in its
         * MSS from the start (set on an established socket, Linux kept the old MSS: full-size segments
         * plus the header exceeded the MTU and the stream stalled). */
        unsigned char opt[256];
        memset(opt, 0, sizeof opt);
        opt[1] = (unsigned char)(dstopts / 8 - 1); /* Hdr Ext Len, in 8-octet units beyond the first */
        opt[2] = 1;                                 /* PadN ... */
        opt[3] = (unsigned char)(dstopts - 4);      /* ... filling the rest of the header */
        if (setsockopt(s, IPPROTO_IPV6, optname, opt, dstopts) < 0) {
            perror(optname == IPV6_HOPOPTS ? "IPV6_HOPOPTS" : "IPV6_DSTOPTS");
            return -1;
        }
    }
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = in6addr_any};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 1024) < 0) { perror("bind/listen"); return -1; }
    return s;
}

static void *accept_loop(void *arg) {
    int s = (int)(intptr_t)arg;
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE) continue;
            perror("accept");
            exit(1);
        }
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 256 * 1024);
        if (pthread_create(&t, &at, serve, (void *)(intptr_t)c) != 0) close(c);
        pthread_attr_destroy(&at);
    }
    return NULL;
}

/* UDP echo on [::]:PORT (IPv4 and IPv6): every datagram goes back to its sender as it came. */
static void *udp_echo(void *arg) {
    int s = (int)(intptr_t)arg;
    char *buf = malloc(65536);
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t r = recvfrom(s, buf, 65536, 0, (struct sockaddr *)&from, &fl);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        sendto(s, buf, (size_t)r, 0, (struct sockaddr *)&from, fl);
    }
    free(buf);
    return NULL;
}

static int udp_listener(int port) {
    int s = socket(AF_INET6, SOCK_DGRAM, 0), zero = 0, one = 1, big = 4 * 1024 * 1024;
    if (s < 0) { perror("socket (udp)"); return -1; }
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = in6addr_any};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("bind (udp)"); return -1; }
    return s;
}

/* PORT: IPv4 and IPv6, no extension header (TCP), and the UDP echo.  DSTOPTS > 0: also PORT+1, IPv6
 * only, every segment the server sends carrying a Destination Options header of DSTOPTS bytes (8..256,
 * a multiple of 8), and PORT+2 the same with a Hop-by-Hop Options header. */
static int server(int port, size_t dstopts) {
    signal(SIGPIPE, SIG_IGN);
    int plain = listener(port, 0, 0), udp = udp_listener(port);
    if (plain < 0 || udp < 0) return 1;
    pthread_t ut;
    pthread_create(&ut, NULL, udp_echo, (void *)(intptr_t)udp);
    if (dstopts) {
        if (dstopts < 8 || dstopts > 256 || dstopts % 8) { fprintf(stderr, "DSTOPTS must be 8..256, a multiple of 8\n"); return 2; }
        int with = listener(port + 1, dstopts, IPV6_DSTOPTS), hop = listener(port + 2, dstopts, IPV6_HOPOPTS);
        if (with < 0 || hop < 0) return 1;
        pthread_t t, h;
        pthread_create(&t, NULL, accept_loop, (void *)(intptr_t)with);
        pthread_create(&h, NULL, accept_loop, (void *)(intptr_t)hop);
        fprintf(stderr, "v6gate-loadgen: listening on [::]:%d (TCP and UDP echo) and, with a %zu-byte Destination "
                "Options header, [::]:%d, with a Hop-by-Hop Options header of that size, [::]:%d\n",
                port, dstopts, port + 1, port + 2);
    } else {
        fprintf(stderr, "v6gate-loadgen: listening on [::]:%d\n", port);
    }
    accept_loop((void *)(intptr_t)plain);
    return 0;
}

/* ---------------------------------------------------------------- client */
static struct {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int crr;
    size_t req, resp, dstopts, sockbuf, wsize;
    double start, end;
    unsigned long long transactions, bytes_rx, bytes_tx, errors, connects;
    double lat_sum;
    unsigned long long lat_n;
    pthread_mutex_t mu;
} C;

static int dial(void) {
    int fd = socket(C.addr.ss_family, SOCK_STREAM, 0), one = 1;
    if (fd < 0) return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = 2, .tv_usec = 0}; /* a stalled transfer ends the trial, not the gate */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (C.sockbuf) {
        int b = (int)C.sockbuf;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
    }
    if (connect(fd, (struct sockaddr *)&C.addr, C.addrlen) < 0) {
        close(fd);
        return -1;
    }
    uint32_t hello[5];
    memcpy(hello, "V6G2", 4);
    hello[1] = htonl((uint32_t)C.req);
    hello[2] = htonl((uint32_t)C.resp);
    hello[3] = htonl((uint32_t)C.dstopts);
    hello[4] = htonl((uint32_t)C.wsize);
    if (write_full(fd, (char *)hello, sizeof hello, sizeof hello) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *client_pair(void *unused) {
    (void)unused;
    char *buf = malloc(BUFSZ);
    memset(buf, 'q', BUFSZ);
    unsigned long long tx = 0, rx = 0, n = 0, errs = 0, lat_n = 0;
    double lat_sum = 0;
    int fd = -1;
    while (now() < C.end) {
        if (fd < 0) {
            fd = dial();
            if (fd < 0) {
                errs++;
                usleep(1000);
                continue;
            }
        }
        double t0 = now();
        int rc = write_full(fd, buf, C.req, BUFSZ) < 0 ? -1 : read_full(fd, buf, C.resp, BUFSZ, &C.bytes_rx, &C.start, &C.end);
        if (rc == 1) break; /* the trial ended in the middle of a response */
        if (rc < 0) {
            errs++;
            close(fd);
            fd = -1;
            continue;
        }
        double t1 = now();
        if (t0 >= C.start && t1 <= C.end) {
            n++;
            tx += C.req;
            lat_sum += t1 - t0;
            lat_n++;
        }
        if (C.crr) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0) close(fd);
    pthread_mutex_lock(&C.mu);
    C.transactions += n;
    C.bytes_tx += tx;
    C.errors += errs;
    C.lat_sum += lat_sum;
    C.lat_n += lat_n;
    pthread_mutex_unlock(&C.mu);
    (void)rx;
    free(buf);
    return NULL;
}

static double cpu_s(int who, double *user, double *sys) {
    struct rusage ru;
    getrusage(who, &ru);
    *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    return *user + *sys;
}

static int client(int argc, char **argv) {
    if (argc < 9) {
        fprintf(stderr, "usage: v6gate-loadgen client HOST PORT rr|crr|str REQ RESP PAIRS SECONDS [WARMUP [DSTOPTS [SOCKBUF]]]\n");
        return 2;
    }
    const char *host = argv[2], *port = argv[3], *mode = argv[4];
    C.req = strtoul(argv[5], NULL, 10);
    C.resp = strtoul(argv[6], NULL, 10);
    int pairs = atoi(argv[7]);
    double seconds = atof(argv[8]), warmup = argc > 9 ? atof(argv[9]) : 0.0;
    C.dstopts = argc > 10 ? strtoul(argv[10], NULL, 10) : 0;
    C.sockbuf = argc > 11 ? strtoul(argv[11], NULL, 10) : 0;
    C.crr = strcmp(mode, "crr") == 0;
    if (strcmp(mode, "rr") && strcmp(mode, "crr") && strcmp(mode, "str")) {
        fprintf(stderr, "v6gate-loadgen: unknown mode %s (rr, crr, str)\n", mode);
        return 2;
    }
    if (pairs < 1 || pairs > 1000 || seconds <= 0 || C.req < 1 || C.resp < 1) {
        fprintf(stderr, "v6gate-loadgen: bad numbers\n");
        return 2;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai;
    char portbuf[16];
    if (C.dstopts) { /* the server's Destination Options listener */
        snprintf(portbuf, sizeof portbuf, "%d", atoi(port) + 1);
        port = portbuf;
    }
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc) {
        fprintf(stderr, "v6gate-loadgen: %s: %s\n", host, gai_strerror(rc));
        return 2;
    }
    memcpy(&C.addr, ai->ai_addr, ai->ai_addrlen);
    C.addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    signal(SIGPIPE, SIG_IGN);
    pthread_mutex_init(&C.mu, NULL);
    double t_begin = now();
    C.start = t_begin + warmup;
    C.end = C.start + seconds;
    pthread_t *th = calloc(pairs, sizeof *th);
    double u0 = 0, s0 = 0, u1, s1;
    int measured = 0;
    for (int i = 0; i < pairs; i++) pthread_create(&th[i], NULL, client_pair, NULL);
    /* CPU of the measured window: sample rusage at its start */
    while (now() < C.start) usleep(2000);
    cpu_s(RUSAGE_SELF, &u0, &s0);
    measured = 1;
    for (int i = 0; i < pairs; i++) pthread_join(th[i], NULL);
    cpu_s(RUSAGE_SELF, &u1, &s1);
    double t_end = now();
    double window = (t_end < C.end ? t_end : C.end) - C.start;
    printf("{\"mode\":\"%s\",\"pairs\":%d,\"req\":%zu,\"resp\":%zu,\"dstopts\":%zu,\"sockbuf\":%zu,"
           "\"seconds\":%.6f,\"transactions\":%llu,\"bytes_rx\":%llu,\"bytes_tx\":%llu,\"errors\":%llu,"
           "\"latency_mean_s\":%.9f,\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f,\"measured\":%d,\"wall_s\":%.6f}\n",
           mode, pairs, C.req, C.resp, C.dstopts, C.sockbuf, window, C.transactions, C.bytes_rx, C.bytes_tx,
           C.errors, C.lat_n ? C.lat_sum / C.lat_n : 0.0, u1 - u0, s1 - s0, measured, t_end - t_begin);
    free(th);
    return 0;
}

/* ---------------------------------------------------------------- alternate */
struct arm {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int fd;
    size_t to_send; /* bytes of the current request still to send */
    size_t pending; /* bytes of the current response still to come */
    int udp;        /* urr: a UDP socket connected to the server's echo */
    unsigned long long transactions, bytes_rx, bytes_tx;
    double t_req, seconds, lat_sum, cpu_s;
    unsigned long long seq, lost; /* urr: the outstanding datagram's number; datagrams lost or late */
    int idle_slices;              /* measured slices in which this arm moved no byte */
    char error[160];              /* why this arm is dead (could not connect, its connection broke), or "" */
};

static int resolve(const char *host, const char *port, struct arm *a) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc) {
        fprintf(stderr, "v6gate-loadgen: %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    memcpy(&a->addr, ai->ai_addr, ai->ai_addrlen);
    a->addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static double thread_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Back-to-back transactions on one arm until `until`: 0, or -1 on a broken connection.  A request still
 * being sent or a response still arriving at the end of the slice is continued in the arm's next slice
 * (its bytes count where they move), so a slow arm cannot stretch a slice, and a throttled one is
 * measured, not waited for. */
static size_t chunk = BUFSZ; /* bytes per send() of a request and of a response (alternate's CHUNK) */

#define URR_LATE_S 0.02 /* a urr answer later than this is taken as lost, and the request sent again */

/* urr: one datagram out, its echo back; the datagram's first 8 bytes number it, so an echo of an
 * earlier one (late, or from the arm's previous slice) is not taken for the current answer. */
static int run_udp_slice(struct arm *a, char *buf, double until, int count) {
    double c0 = thread_cpu(), t0 = now();
    while (now() < until) {
        a->seq++;
        memcpy(buf, &a->seq, sizeof a->seq);
        a->t_req = now();
        ssize_t w = send(a->fd, buf, C.req, 0);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ENOBUFS || errno == ECONNREFUSED) continue;
            return -1;
        }
        if (count) a->bytes_tx += (unsigned long long)w;
        int answered = 0;
        for (;;) {
            double left = a->t_req + URR_LATE_S - now();
            if (until - now() < left) left = until - now();
            if (left <= 0) break;
            struct timeval tv = {.tv_sec = 0, .tv_usec = (suseconds_t)(left * 1e6) + 1};
            setsockopt(a->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            ssize_t r = recv(a->fd, buf + BUFSZ / 2, BUFSZ / 2, 0);
            if (r < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED) break;
                return -1;
            }
            unsigned long long got;
            memcpy(&got, buf + BUFSZ / 2, sizeof got);
            if (r >= (ssize_t)sizeof got && got == a->seq) {
                answered = 1;
                if (count) {
                    a->bytes_rx += (unsigned long long)r;
                    a->transactions++;
                    a->lat_sum += now() - a->t_req;
                }
                break;
            }
        }
        if (!answered && now() < until && count) a->lost++;
    }
    if (count) {
        a->seconds += now() - t0;
        a->cpu_s += thread_cpu() - c0;
    }
    return 0;
}

static int run_live_slice(struct arm *a, char *buf, double until, int count) {
    if (a->udp) return run_udp_slice(a, buf, until, count);
    double c0 = thread_cpu(), t0 = now();
    for (;;) {
        if (a->pending == 0 && a->to_send == 0) {
            if (now() >= until) break;
            a->to_send = C.req;
            a->t_req = now();
        }
        while (a->to_send > 0) { /* the request, in CHUNK-byte send()s; continued next slice if cut */
            if (now() >= until) goto out;
            ssize_t w = send(a->fd, buf, a->to_send < chunk ? a->to_send : chunk, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
                return -1;
            }
            a->to_send -= (size_t)w;
            if (count) a->bytes_tx += (unsigned long long)w;
            if (a->to_send == 0) a->pending = C.resp;
        }
        while (a->pending > 0) {
            if (now() >= until) goto out;
            ssize_t r = recv(a->fd, buf, a->pending < BUFSZ ? a->pending : BUFSZ, 0);
            if (r == 0) return -1;
            if (r < 0) {
                if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
                return -1;
            }
            a->pending -= (size_t)r;
            if (count) a->bytes_rx += (unsigned long long)r;
        }
        if (count) {
            a->transactions++;
            a->lat_sum += now() - a->t_req;
        }
    }
out:
    if (count) {
        a->seconds += now() - t0;
        a->cpu_s += thread_cpu() - c0;
    }
    return 0;
}

/* One slice of an arm.  A dead arm (it could not connect, or its connection broke: the DUT's service on that
 * address, not the bench, when the other arm lives) spends its slice idle, so the live arm keeps its cadence,
 * and counts its time with no bytes: the trial reports what each arm moved and why a dead one moved nothing. */
static void run_slice(struct arm *a, char *buf, double until, int count) {
    unsigned long long before = a->bytes_rx + a->bytes_tx;
    if (a->fd < 0) {
        double t0 = now(), left = until - t0;
        if (left > 0) usleep((useconds_t)(left * 1e6));
        if (count) a->seconds += now() - t0;
    } else if (run_live_slice(a, buf, until, count) < 0) {
        snprintf(a->error, sizeof a->error, "the connection broke: %s", strerror(errno));
        close(a->fd);
        a->fd = -1;
    }
    if (count && a->bytes_rx + a->bytes_tx == before) a->idle_slices++;
}

static int dial_udp(void) {
    int fd = socket(C.addr.ss_family, SOCK_DGRAM, 0), big = 4 * 1024 * 1024;
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    if (connect(fd, (struct sockaddr *)&C.addr, C.addrlen) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int alternate(int argc, char **argv) {
    if (argc < 11) {
        fprintf(stderr, "usage: v6gate-loadgen alternate HOST_A PORT_A HOST_B PORT_B rr|str REQ RESP SECONDS SLICE "
                        "[WARMUP [SOCKBUF [CHUNK]]] (MODE rr, str or urr)\n");
        return 2;
    }
    struct arm arms[2];
    memset(arms, 0, sizeof arms);
    const char *mode = argv[6];
    C.req = strtoul(argv[7], NULL, 10);
    C.resp = strtoul(argv[8], NULL, 10);
    double seconds = atof(argv[9]), slice = atof(argv[10]), warmup = argc > 11 ? atof(argv[11]) : 0.0;
    C.sockbuf = argc > 12 ? strtoul(argv[12], NULL, 10) : 0;
    chunk = argc > 13 ? strtoul(argv[13], NULL, 10) : BUFSZ;
    if (chunk < 1 || chunk > BUFSZ) {
        fprintf(stderr, "v6gate-loadgen: CHUNK must be 1..%d\n", BUFSZ);
        return 2;
    }
    C.wsize = chunk;
    int udp = strcmp(mode, "urr") == 0;
    if (strcmp(mode, "rr") && strcmp(mode, "str") && !udp) {
        fprintf(stderr, "v6gate-loadgen: alternate runs rr, str or urr, not %s\n", mode);
        return 2;
    }
    if (udp && (C.req != C.resp || C.req < 8 || C.req > 65000)) {
        fprintf(stderr, "v6gate-loadgen: urr echoes its datagrams: REQ must equal RESP, 8..65000 bytes\n");
        return 2;
    }
    if (seconds <= 0 || slice <= 0 || slice * 2 > seconds || C.req < 1 || C.resp < 1) {
        fprintf(stderr, "v6gate-loadgen: bad numbers (SLICE must fit twice in SECONDS)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char *buf = malloc(BUFSZ);
    memset(buf, 'q', BUFSZ);
    for (int i = 0; i < 2; i++) {
        if (resolve(argv[2 + 2 * i], argv[3 + 2 * i], &arms[i]) < 0) return 2;
        memcpy(&C.addr, &arms[i].addr, arms[i].addrlen);
        C.addrlen = arms[i].addrlen;
        arms[i].udp = udp;
        arms[i].fd = udp ? dial_udp() : dial();
        if (arms[i].fd < 0) /* reported in the arm's figures: the caller tells the DUT's dead path from the bench's */
            snprintf(arms[i].error, sizeof arms[i].error, "cannot connect to %s port %s: %s", argv[2 + 2 * i],
                     argv[3 + 2 * i], errno == EINPROGRESS ? "no answer within 2 s" : strerror(errno));
    }
    /* warm-up: both connections through slow start, unmeasured, in the same alternation (a dead arm idles) */
    double t = now(), end_warm = t + warmup;
    for (int k = 0; now() < end_warm || k < 2; k++)
        run_slice(&arms[k % 2], buf, now() + (arms[k % 2].fd < 0 ? 0 : slice / 4), 0);
    int slices = 0;
    double start = now(), end = start + seconds;
    while (now() + 2 * slice <= end + slice / 2) {
        int first = slices % 2;
        run_slice(&arms[first], buf, now() + slice, 1);
        run_slice(&arms[1 - first], buf, now() + slice, 1);
        slices++;
    }
    printf("{\"mode\":\"%s\",\"req\":%zu,\"resp\":%zu,\"sockbuf\":%zu,\"chunk\":%zu,\"slice_s\":%.6f,"
           "\"slices\":%d,\"arms\":[", mode, C.req, C.resp, C.sockbuf, chunk, slice, slices);
    for (int i = 0; i < 2; i++)
        printf("%s{\"host\":\"%s\",\"port\":%s,\"transactions\":%llu,\"bytes_rx\":%llu,\"seconds\":%.6f,"
               "\"bytes_tx\":%llu,\"latency_mean_s\":%.9f,\"cpu_s\":%.6f,\"lost\":%llu,\"idle_slices\":%d,"
               "\"error\":\"%s\"}", i ? "," : "", argv[2 + 2 * i],
               argv[3 + 2 * i], arms[i].transactions, arms[i].bytes_rx, arms[i].seconds, arms[i].bytes_tx,
               arms[i].transactions ? arms[i].lat_sum / arms[i].transactions : 0.0, arms[i].cpu_s, arms[i].lost,
               arms[i].idle_slices, arms[i].error);
    printf("],\"wall_s\":%.6f}\n", now() - t);
    for (int i = 0; i < 2; i++)
        if (arms[i].fd >= 0) close(arms[i].fd);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "alternate") == 0) return alternate(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "server") == 0) return server(atoi(argv[2]), argc > 3 ? strtoul(argv[3], NULL, 10) : 0);
    if (argc >= 2 && strcmp(argv[1], "client") == 0) return client(argc, argv);
    fprintf(stderr, "usage: v6gate-loadgen server PORT | client HOST PORT MODE REQ RESP PAIRS SECONDS [WARMUP [DSTOPTS [SOCKBUF]]]\n");
    return 2;
}
