package main

import (
	"flag"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Every flag has a stated range (flagRanges), shown in -help and checked
// by checkRanges right after parsing, before anything starts: a value out
// of range is one line on stderr naming the range, and exit 2.
// TestFlagRanges holds every registered flag to an entry here, so a flag
// added without a range fails a test.

// flagRange is what one flag accepts.
type flagRange struct {
	text string         // the range as written in -help and in the error
	ok   func(any) bool // given the flag's flag.Getter value
}

func intRange(lo, hi int64, note string) flagRange {
	text := fmt.Sprintf("%d..%d", lo, hi)
	if note != "" {
		text += " (" + note + ")"
	}
	return flagRange{text, func(v any) bool {
		var n int64
		switch v := v.(type) {
		case int:
			n = int64(v)
		case uint:
			if v > uint(hi) {
				return false
			}
			n = int64(v)
		default:
			return false
		}
		return n >= lo && n <= hi
	}}
}

func durRange(lo, hi time.Duration, note string) flagRange {
	text := fmt.Sprintf("%v..%v", lo, hi)
	if note != "" {
		text += " (" + note + ")"
	}
	return flagRange{text, func(v any) bool {
		d, ok := v.(time.Duration)
		return ok && d >= lo && d <= hi
	}}
}

func oneOf(vals ...string) flagRange {
	return flagRange{"one of " + strings.Join(vals, ", "), func(v any) bool {
		s, ok := v.(string)
		return ok && slices.Contains(vals, s)
	}}
}

var boolRange = flagRange{"true or false", func(v any) bool { _, ok := v.(bool); return ok }}

// hostPort accepts host:port with a numeric port 0..65535 (a path too when
// paths are allowed, empty when allowEmpty).
func hostPort(allowPath, allowEmpty bool) flagRange {
	text := "host:port, port 0..65535"
	if allowPath {
		text += ", or a unix socket path starting with / or ."
	}
	if allowEmpty {
		text += ", or empty"
	}
	return flagRange{text, func(v any) bool {
		s, _ := v.(string)
		if s == "" {
			return allowEmpty
		}
		if allowPath && (s[0] == '/' || s[0] == '.') {
			return true
		}
		_, port, err := net.SplitHostPort(s)
		if err != nil {
			return false
		}
		p, err := net.LookupPort("tcp", port)
		return err == nil && p >= 0 && p <= 65535
	}}
}

// Bounds of the numeric flags, and why.
const (
	// maxLoops: each loop is one ring and its goroutine (a locked OS
	// thread with -locked-loops); past a few per core they only contend,
	// so the echo-server stops well below the runtime's uringrt.MaxLoops.
	maxLoops = 256
	// maxWorkers: fixed workers are goroutines with private lists (a few
	// KiB each); 1,000,000 took 3.9 GB and 22 s to start.
	maxWorkers = 4096
	// maxIOWQWorkers: the kernel also caps io-wq at RLIMIT_NPROC.
	maxIOWQWorkers = 65536
	// maxWaitLatency: batched waiting holds completions at most this long;
	// -wait-latency 1000h started a server that never echoed.
	maxWaitLatency = 100 * time.Millisecond
	// maxIdlePoll is Config.IdlePoll's own bound.
	maxIdlePoll = time.Second
	// maxShutdown bounds the SIGTERM drain (Kubernetes' grace period must
	// exceed -drain-delay plus this).
	maxShutdown = 10 * time.Minute
	// maxDrainDelay bounds the time /readyz answers 503 before the drain.
	maxDrainDelay = 5 * time.Minute
)

// fdHeadroom is how many descriptors the default -max-conns leaves for
// everything that is not an echo connection: the metrics server's
// connections (its cap, metricsMaxConnsDefault), a ring and a wake-up
// eventfd per loop (GOMAXPROCS loops by default), and 32 for stdio, the
// listeners, Go's epoll descriptor and wake pipe, the process collector's
// /proc reads and the descriptor a connection over the cap holds between
// accept and close.
func fdHeadroom() int {
	return metricsMaxConnsDefault + 2*runtime.GOMAXPROCS(0) + 32
}

// nofileLimit is the soft RLIMIT_NOFILE (Go raises it to the hard limit at
// start), or 0 when unknown.
func nofileLimit() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}

// defaultMaxConns is RLIMIT_NOFILE minus fdHeadroom: a connection over the
// cap is accepted and closed at once (counted in
// uringrt_connections_rejected_total) instead of accept failing with
// EMFILE, so the listener, the metrics server and the loops keep the
// descriptors they need. 0 (no cap) when the limit is unknown; at least 1.
func defaultMaxConns() int {
	n := nofileLimit()
	if n == 0 {
		return 0
	}
	return max(1, n-fdHeadroom())
}

// flagRanges is every flag's range. Flags that other files register add
// theirs here.
func flagRanges() map[string]flagRange {
	nofile := nofileLimit()
	maxConns := intRange(0, 10_000_000, "0 = no cap")
	if nofile > 0 {
		maxConns = intRange(0, int64(nofile), fmt.Sprintf("0 = no cap; at most RLIMIT_NOFILE %d, default RLIMIT_NOFILE - %d headroom", nofile, fdHeadroom()))
	}
	ranges := map[string]flagRange{
		"addr":                 hostPort(true, false),
		"api":                  oneOf("conn", "callback"),
		"backend":              oneOf("auto", "uring", "std"),
		"pollable":             oneOf("hybrid", "ring", "async", "blocking"),
		"batch":                oneOf("on", "off"),
		"wait-latency":         durRange(0, maxWaitLatency, "0 = default"),
		"idle-poll":            durRange(0, maxIdlePoll, ""),
		"dedicated":            boolRange,
		"locked-loops":         boolRange,
		"inc-buffers":          boolRange,
		"no-bundles":           boolRange,
		"no-lend":              boolRange,
		"netpoll-readiness":    boolRange,
		"loop-readiness":       boolRange,
		"loops":                intRange(0, maxLoops, "0 = GOMAXPROCS"),
		"workers":              intRange(0, maxWorkers, "0 = default"),
		"iowq-max-workers":     intRange(0, maxIOWQWorkers, "0 = kernel default"),
		"max-conns":            maxConns,
		"metrics-addr":         hostPort(false, true),
		"metrics-max-conns":    intRange(1, 4096, ""),
		"metrics-idle-timeout": durRange(100*time.Millisecond, 10*time.Minute, ""),
		"metrics-host-info":    oneOf("auto", "on", "off"),
		"shutdown-timeout":     durRange(0, maxShutdown, ""),
		"drain-delay":          durRange(0, maxDrainDelay, ""),
		"version":              boolRange,
		"buf-size":             intRange(minBufSize, maxBufSize, "bytes"),
		"reuseport":            boolRange,
		"network":              oneOf("tcp", "udp"),
		"udp-readers":          intRange(1, 1024, ""),
		"udp-multishot":        boolRange,
	}
	for name, r := range limitRanges() {
		ranges[name] = r
	}
	return ranges
}

// annotateRanges appends each flag's range to its help text.
func annotateRanges(fs *flag.FlagSet, ranges map[string]flagRange) {
	fs.VisitAll(func(f *flag.Flag) {
		if r, ok := ranges[f.Name]; ok {
			f.Usage += " [" + r.text + "]"
		}
	})
}

// checkRanges returns the error line for the first flag (in name order)
// whose value is out of range, or "". A flag without a range is itself an
// error, so none slips through unchecked.
func checkRanges(fs *flag.FlagSet, ranges map[string]flagRange) string {
	msg := ""
	fs.VisitAll(func(f *flag.Flag) {
		if msg != "" {
			return
		}
		r, ok := ranges[f.Name]
		if !ok {
			msg = fmt.Sprintf("-%s has no stated range (flags.go)", f.Name)
			return
		}
		g, isGetter := f.Value.(flag.Getter)
		if !isGetter || !r.ok(g.Get()) {
			msg = fmt.Sprintf("-%s %s out of range: want %s", f.Name, f.Value.String(), r.text)
		}
	})
	return msg
}
