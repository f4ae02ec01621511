// wsload's shared declarations.
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MODE_ECHO, MODE_BCAST, MODE_IDLE };

struct opts {
    int mode, conns, size, depth, connecting, deflate, pid, port;
    double warm, secs;
    const char *host;
};

int run(struct opts *o);
