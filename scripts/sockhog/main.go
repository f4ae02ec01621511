// Command sockhog holds unread data in loopback TCP sockets, to run tests
// beside kernel TCP memory pressure (the machine-wide tcp_mem limit that
// makes Linux reset sockets closed with unsent data: TCPAbortOnMemory).
//
//	go run ./scripts/sockhog -bytes 1GiB -for 20m
//
// It opens connection pairs on 127.0.0.1 and writes into one end of each
// while nobody reads the other, until -bytes are queued or the sockets take
// no more, reports what it holds (and the kernel's TCP memory from
// /proc/net/sockstat), then holds it for -for (or until SIGINT/SIGTERM) and
// exits, freeing everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	want := flag.String("bytes", "1GiB", "unread bytes to hold (suffixes KiB, MiB, GiB)")
	hold := flag.Duration("for", 20*time.Minute, "how long to hold them (at most 2h)")
	flag.Parse()
	target, err := parseSize(*want)
	if err != nil || *hold <= 0 || *hold > 2*time.Hour {
		fmt.Fprintf(os.Stderr, "sockhog: -bytes %q (%v) or -for %v out of range\n", *want, err, *hold)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sockhog:", err)
		os.Exit(1)
	}
	defer ln.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	chunk := make([]byte, 1<<20)
	var held int64
	for held < target && len(conns) < 4000 && ctx.Err() == nil {
		w, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		r, err := ln.Accept()
		if err != nil {
			w.Close()
			break
		}
		conns = append(conns, w, r)
		// Write until this pair takes no more (its send and receive
		// buffers are full) or the target is reached.
		for held < target {
			w.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			n, err := w.Write(chunk[:min(int64(len(chunk)), target-held)])
			held += int64(n)
			if err != nil {
				break
			}
		}
	}
	fmt.Printf("sockhog: holding %d MiB unread in %d connection pairs; %s\n", held>>20, len(conns)/2, tcpMem())
	select {
	case <-ctx.Done():
	case <-time.After(*hold):
	}
}

// parseSize parses "1GiB", "512MiB", "64KiB" or a plain byte count.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suf, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if v, ok := strings.CutSuffix(s, suf); ok {
			s, mult = v, m
		}
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("not a size")
	}
	return n * mult, nil
}

// tcpMem is the TCP line of /proc/net/sockstat (mem is in pages).
func tcpMem() string {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "TCP:") {
			return "sockstat " + l
		}
	}
	return ""
}
