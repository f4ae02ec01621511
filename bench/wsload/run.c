// wsload's connections, frames and measurement.
#define _GNU_SOURCE
#include "wsload.h"

#define PATLEN 65521u /* prime: a message's bytes start at a different offset each time */
#define NBUCKET 2400  /* latency buckets: 1 % wide, log scale, from 1 us */

enum { ST_CONNECTING, ST_HANDSHAKE, ST_OPEN, ST_DEAD };

typedef struct {
    int fd, st;
    uint32_t idx;
    uint64_t sent, recvd;       /* messages */
    uint8_t *rx;                /* received, not yet parsed */
    uint32_t rxlen, rxcap;
    uint8_t *tx;                /* to write */
    uint32_t txoff, txlen, txcap;
    uint64_t *ts;               /* echo: send times, depth entries */
    int welcomed;               /* bcast: the server's 1-byte welcome came: joined */
    int want_out;
} conn_t;

static struct opts *O;
static uint8_t *pat;
static conn_t *cs;
static int ep, nopen, nready, nconnecting, nextconn, nwelcomed;
static uint64_t hist[NBUCKET], nmsg, mismatches, ioerrs, negotiated, compressed;
static int measuring;
static uint64_t bsent, bdone, *bts; /* broadcast: published, completed, send times */
static uint32_t *bcnt;              /* broadcast: receivers of each in-flight seq */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static void record(uint64_t ns) {
    if (!measuring) return;
    double us = ns / 1000.0;
    int b = us < 1 ? 0 : (int)(log(us) * 100);
    hist[b < NBUCKET ? b : NBUCKET - 1]++;
}

static double pct(double p) {
    uint64_t total = 0, acc = 0;
    for (int i = 0; i < NBUCKET; i++) total += hist[i];
    if (!total) return 0;
    for (int i = 0; i < NBUCKET; i++) {
        acc += hist[i];
        if (acc >= total * p) return exp((i + 0.5) / 100.0);
    }
    return 0;
}

/* payload start of message seq on connection idx (broadcasts use idx 0) */
static const uint8_t *expect(uint32_t idx, uint64_t seq) {
    return pat + (idx * 7919u + seq * 131u) % PATLEN;
}

static void grow(uint8_t **b, uint32_t *cap, uint32_t need) {
    if (need <= *cap) return;
    while (*cap < need) *cap = *cap ? *cap * 2 : 4096;
    *b = realloc(*b, *cap);
}

static void want_out(conn_t *c, int on) {
    if (c->want_out == on) return;
    c->want_out = on;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u32 = c->idx};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void die_conn(conn_t *c) {
    if (c->st == ST_DEAD) return;
    if (c->st == ST_CONNECTING || c->st == ST_HANDSHAKE) nconnecting--;
    if (c->st == ST_OPEN) nopen--;
    c->st = ST_DEAD;
    ioerrs++;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
}

static void flush(conn_t *c) {
    while (c->txoff < c->txlen) {
        ssize_t n = write(c->fd, c->tx + c->txoff, c->txlen - c->txoff);
        if (n < 0) {
            if (errno == EAGAIN) break;
            die_conn(c);
            return;
        }
        c->txoff += n;
    }
    if (c->txoff == c->txlen) c->txoff = c->txlen = 0;
    want_out(c, c->txlen > 0);
}

static void queue(conn_t *c, const void *p, uint32_t n) {
    grow(&c->tx, &c->txcap, c->txlen + n);
    memcpy(c->tx + c->txlen, p, n);
    c->txlen += n;
}

/* queue a masked binary frame whose payload is expect(idx, seq) */
static void send_msg(conn_t *c, uint32_t idx, uint64_t seq) {
    uint32_t n = O->size, h = 0;
    uint8_t hdr[14];
    hdr[h++] = 0x82;
    if (n < 126) hdr[h++] = 0x80 | n;
    else if (n <= 0xffff) { hdr[h++] = 0x80 | 126; hdr[h++] = n >> 8; hdr[h++] = n; }
    else { hdr[h++] = 0x80 | 127; for (int i = 7; i >= 0; i--) hdr[h++] = (uint64_t)n >> (8 * i); }
    uint8_t key[4] = {(uint8_t)seq, (uint8_t)(seq >> 8), (uint8_t)c->idx, 0x5a};
    memcpy(hdr + h, key, 4);
    h += 4;
    queue(c, hdr, h);
    grow(&c->tx, &c->txcap, c->txlen + n);
    const uint8_t *p = expect(idx, seq);
    uint8_t *d = c->tx + c->txlen;
    for (uint32_t i = 0; i < n; i++) d[i] = p[i] ^ key[i & 3];
    c->txlen += n;
}

static void echo_send(conn_t *c) {
    c->ts[c->sent % O->depth] = now_ns();
    send_msg(c, c->idx, c->sent);
    c->sent++;
}

static void publish(void) {
    conn_t *c = &cs[0];
    while (bsent - bdone < (uint64_t)O->depth && c->st == ST_OPEN) {
        bts[bsent % O->depth] = now_ns();
        bcnt[bsent % O->depth] = 0;
        send_msg(c, 0, bsent);
        bsent++;
    }
    flush(c);
}

static void opened(conn_t *c) {
    nconnecting--;
    nopen++;
    c->st = ST_OPEN;
    if (O->mode == MODE_ECHO) {
        for (int i = 0; i < O->depth; i++) echo_send(c);
    } else if (O->mode == MODE_IDLE) {
        echo_send(c);
    }
}

/* a whole message arrived on c: verify and answer it */
static void on_message(conn_t *c, const uint8_t *p, uint64_t n, int rsv1) {
    uint64_t now = now_ns();
    if (O->mode == MODE_IDLE) {
        if (rsv1) compressed++;
        if ((!rsv1 && (n != (uint64_t)O->size || memcmp(p, expect(c->idx, 0), n))) || (rsv1 && n == 0)) mismatches++;
        c->recvd++;
        nready++;
        return;
    }
    if (O->mode == MODE_BCAST && !c->welcomed && n == 1) n = O->size; /* the welcome, below */
    else if (rsv1 || n != (uint64_t)O->size) { mismatches++; return; }
    if (O->mode == MODE_ECHO) {
        if (memcmp(p, expect(c->idx, c->recvd), n)) mismatches++;
        record(now - c->ts[c->recvd % O->depth]);
        c->recvd++;
        if (measuring) nmsg++;
        echo_send(c);
        return;
    }
    if (!c->welcomed) { /* a 1-byte welcome when the server has joined c to the group */
        c->welcomed = 1;
        if (++nwelcomed == O->conns) publish();
        return;
    }
    uint64_t seq = c->recvd++;
    if (memcmp(p, expect(0, seq), n)) mismatches++;
    if (measuring) nmsg++;
    if (++bcnt[seq % O->depth] == (uint32_t)O->conns && seq == bdone) {
        /* deliveries of a seq complete in order: each connection gets them in order */
        record(now - bts[seq % O->depth]);
        bdone++;
        publish();
    }
}

/* parse the frames in c->rx */
static void parse(conn_t *c) {
    uint32_t off = 0;
    for (;;) {
        uint8_t *b = c->rx + off;
        uint32_t have = c->rxlen - off;
        if (have < 2) break;
        uint64_t n = b[1] & 0x7f;
        uint32_t h = 2;
        if (b[1] & 0x80) { mismatches++; die_conn(c); return; } /* a masked server frame */
        if (n == 126) { if (have < 4) break; n = (uint64_t)b[2] << 8 | b[3]; h = 4; }
        else if (n == 127) {
            if (have < 10) break;
            n = 0;
            for (int i = 2; i < 10; i++) n = n << 8 | b[i];
            h = 10;
        }
        if (n > (64u << 20)) { mismatches++; die_conn(c); return; }
        if (have < h + n) { grow(&c->rx, &c->rxcap, off + h + n); break; }
        uint8_t op = b[0] & 0x0f;
        if (op == 0x8) { die_conn(c); return; }
        if (op == 0x9) { /* ping: pong with the same payload, masked with a zero key */
            uint8_t hdr[6] = {0x8a, 0x80 | (uint8_t)n, 0, 0, 0, 0};
            queue(c, hdr, 6);
            queue(c, b + h, n);
        } else if (op == 0x1 || op == 0x2) {
            if (!(b[0] & 0x80)) { mismatches++; die_conn(c); return; } /* fragmented: not expected */
            on_message(c, b + h, n, b[0] & 0x40);
            if (c->st == ST_DEAD) return;
        }
        off += h + n;
    }
    memmove(c->rx, c->rx + off, c->rxlen - off);
    c->rxlen -= off;
}

static void start_handshake(conn_t *c) {
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
                     O->mode == MODE_BCAST ? "/bcast" : "/echo", O->host, O->port,
                     O->deflate ? "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" : "");
    c->st = ST_HANDSHAKE;
    queue(c, req, n);
    flush(c);
}

static void on_readable(conn_t *c) {
    for (;;) {
        grow(&c->rx, &c->rxcap, c->rxlen + 16384);
        ssize_t n = read(c->fd, c->rx + c->rxlen, c->rxcap - c->rxlen);
        if (n == 0 || (n < 0 && errno != EAGAIN)) { die_conn(c); return; }
        if (n < 0) break;
        c->rxlen += n;
        if (c->st == ST_HANDSHAKE) {
            uint8_t *end = memmem(c->rx, c->rxlen, "\r\n\r\n", 4);
            if (!end) continue;
            if (c->rxlen < 12 || memcmp(c->rx, "HTTP/1.1 101", 12)) { die_conn(c); return; }
            uint32_t hl = end + 4 - c->rx;
            if (O->deflate && memmem(c->rx, hl, "permessage-deflate", 18)) negotiated++;
            memmove(c->rx, c->rx + hl, c->rxlen - hl);
            c->rxlen -= hl;
            opened(c);
        }
        if (c->st == ST_OPEN) parse(c);
        if (c->st != ST_OPEN) return;
        if ((size_t)n < 16384) break;
    }
    if (c->txlen) flush(c);
}

static void connect_more(void) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(O->port)};
    inet_pton(AF_INET, O->host, &sa.sin_addr);
    while (nextconn < O->conns && nconnecting < O->connecting) {
        conn_t *c = &cs[nextconn];
        c->idx = nextconn++;
        c->ts = calloc(O->depth, sizeof *c->ts);
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (c->fd < 0 || (connect(c->fd, (void *)&sa, sizeof sa) < 0 && errno != EINPROGRESS)) {
            perror("connect");
            exit(1);
        }
        c->st = ST_CONNECTING;
        nconnecting++;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = c->idx};
        c->want_out = 1;
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
}

static uint64_t proc_cpu_ticks(int pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (p) sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    return ut + st;
}

static double self_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void poll_once(int ms) {
    struct epoll_event evs[512];
    int n = epoll_wait(ep, evs, 512, ms);
    for (int i = 0; i < n; i++) {
        conn_t *c = &cs[evs[i].data.u32];
        if (c->st == ST_DEAD) continue;
        if (c->st == ST_CONNECTING && (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
            int err = 0;
            socklen_t l = sizeof err;
            getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
            if (err) { die_conn(c); continue; }
            start_handshake(c);
            continue;
        }
        if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
        if (c->st != ST_DEAD && (evs[i].events & EPOLLOUT)) flush(c);
    }
}

int run(struct opts *o) {
    O = o;
    pat = malloc(PATLEN + o->size);
    for (uint32_t i = 0; i < PATLEN + (uint32_t)o->size; i++) pat[i] = (uint8_t)(i * 2654435761u >> 13);
    cs = calloc(o->conns, sizeof *cs);
    bts = calloc(o->depth, sizeof *bts);
    bcnt = calloc(o->depth, sizeof *bcnt);
    ep = epoll_create1(0);
    uint64_t t0 = now_ns();
    while (nopen + (int)ioerrs < o->conns) {
        connect_more();
        poll_once(100);
        if (now_ns() - t0 > 120e9) { fprintf(stderr, "wsload: %d of %d open after 120 s\n", nopen, o->conns); return 1; }
    }
    if (ioerrs) { fprintf(stderr, "wsload: %lu connections failed\n", (unsigned long)ioerrs); return 1; }
    if (o->mode == MODE_IDLE) {
        while (nready < o->conns && now_ns() - t0 < 120e9) poll_once(100);
        printf("READY %d deflate_negotiated=%lu compressed_echoes=%lu mismatches=%lu\n", nready,
               (unsigned long)negotiated, (unsigned long)compressed, (unsigned long)mismatches);
        fflush(stdout);
        uint64_t end = now_ns() + (uint64_t)(o->secs * 1e9);
        while (now_ns() < end) poll_once(100);
        return nready == o->conns && !mismatches ? 0 : 1;
    }
    /* bcast: the first broadcast goes out once every connection is welcomed */
    uint64_t w = now_ns() + (uint64_t)(o->warm * 1e9);
    while (now_ns() < w) poll_once(10);
    measuring = 1;
    uint64_t s0 = now_ns(), p0 = o->pid ? proc_cpu_ticks(o->pid) : 0;
    double c0 = self_cpu();
    uint64_t end = s0 + (uint64_t)(o->secs * 1e9);
    while (now_ns() < end) poll_once(10);
    measuring = 0;
    double el = (now_ns() - s0) / 1e9, tick = sysconf(_SC_CLK_TCK);
    double srv = o->pid ? (proc_cpu_ticks(o->pid) - p0) / tick / el * 100 : -1;
    printf("mode=%s conns=%d size=%d depth=%d msgs_per_s=%.0f p50_us=%.0f p99_us=%.0f srv_cpu=%.0f "
           "srv_ns_per_msg=%.0f cli_cpu=%.0f mismatches=%lu ioerrs=%lu\n",
           o->mode == MODE_ECHO ? "echo" : "bcast", o->conns, o->size, o->depth, nmsg / el, pct(0.5), pct(0.99), srv,
           nmsg && srv >= 0 ? srv / 100 * el * 1e9 / nmsg : -1,
           (self_cpu() - c0) / el * 100, (unsigned long)mismatches, (unsigned long)ioerrs);
    return mismatches || ioerrs || !nmsg ? 1 : 0;
}
