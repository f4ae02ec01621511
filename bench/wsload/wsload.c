// wsload: closed-loop WebSocket load client (single thread, level-triggered
// epoll), the one client of every WebSocket benchmark.
//
//   wsload -a HOST:PORT -m echo|bcast|idle [-c CONNS] [-s SIZE] [-d DEPTH]
//          [-w WARMUP_S] [-t SECONDS] [-P SERVER_PID] [-z] [-k CONNECTING]
//
// echo:  CONNS connections to /echo, each keeps DEPTH binary messages of SIZE
//        bytes outstanding, sending the next when an echo is back; prints
//        messages/s and round-trip p50/p99 over the measured window.
// bcast: CONNS connections join /bcast (the server sends each a 1-byte
//        welcome once it has joined it); connection 0 publishes, keeping
//        DEPTH broadcasts in flight: the next goes out when every connection
//        has received the oldest. Prints deliveries/s (messages received over
//        all connections) and p50/p99 of a broadcast's completion.
// idle:  CONNS connections to /echo each echo one message, then stay open
//        for SECONDS; prints "READY n" when all have, for a script to read
//        the server's memory.
// Every received payload is compared byte for byte with what was sent (idle
// with -z only checks its length: the server may compress its answer).
// -z offers permessage-deflate; the client itself never compresses.
// -P samples the server's CPU (utime+stime of /proc/PID/stat) over the
// window. Build: cc -O2 -o wsload wsload.c -lm
#define _GNU_SOURCE
#include "wsload.h"

static void usage(void) {
    fprintf(stderr, "usage: wsload -a host:port -m echo|bcast|idle [-c conns] [-s size] [-d depth] "
                    "[-w warmup_s] [-t seconds] [-P pid] [-z] [-k connecting]\n");
    exit(2);
}

int main(int argc, char **argv) {
    struct opts o = {.conns = 100, .size = 1024, .depth = 1, .warm = 2, .secs = 10, .connecting = 200};
    char *addr = NULL, *mode = "echo";
    int ch;
    while ((ch = getopt(argc, argv, "a:m:c:s:d:w:t:P:zk:")) != -1) {
        switch (ch) {
        case 'a': addr = optarg; break;
        case 'm': mode = optarg; break;
        case 'c': o.conns = atoi(optarg); break;
        case 's': o.size = atoi(optarg); break;
        case 'd': o.depth = atoi(optarg); break;
        case 'w': o.warm = atof(optarg); break;
        case 't': o.secs = atof(optarg); break;
        case 'P': o.pid = atoi(optarg); break;
        case 'z': o.deflate = 1; break;
        case 'k': o.connecting = atoi(optarg); break;
        default: usage();
        }
    }
    if (!addr || o.conns < 1 || o.size < 8 || o.depth < 1) usage();
    if (!strcmp(mode, "echo")) o.mode = MODE_ECHO;
    else if (!strcmp(mode, "bcast")) o.mode = MODE_BCAST;
    else if (!strcmp(mode, "idle")) o.mode = MODE_IDLE;
    else usage();
    char *colon = strrchr(addr, ':');
    if (!colon) usage();
    *colon = 0;
    o.host = addr;
    o.port = atoi(colon + 1);
    signal(SIGPIPE, SIG_IGN);
    return run(&o);
}
