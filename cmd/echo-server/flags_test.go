package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestFlagRanges checks every flag at its bounds: the value just inside
// parses, the value just outside exits 2 before anything starts, with one
// line naming the flag and its range. Before the ranges, -wait-latency
// 1000h, -workers 1000000 and -loops 100000 started a server and
// -idle-poll 2s exited 1 (from New, after starting).
func TestFlagRanges(t *testing.T) {
	nofile := nofileLimit()
	type bound struct{ in, out []string }
	cases := map[string]bound{
		"addr":                 {[]string{"127.0.0.1:0", "/tmp/x.sock", "[::1]:65535"}, []string{"127.0.0.1:65536", "", "nohostport"}},
		"api":                  {[]string{"conn", "callback"}, []string{"grpc"}},
		"backend":              {[]string{"auto", "uring", "std"}, []string{"epoll"}},
		"pollable":             {[]string{"hybrid", "ring", "async", "blocking"}, []string{"sometimes"}},
		"batch":                {[]string{"on", "off"}, []string{"maybe"}},
		"wait-latency":         {[]string{"0", "100ms"}, []string{"-1ns", "100001us", "1000h"}},
		"idle-poll":            {[]string{"0", "1s"}, []string{"-1ns", "2s"}},
		"idle-timeout":         {[]string{"0", "10ms", "5m", "24h"}, []string{"-1s", "5ms", "25h"}},
		"max-buffered":         {[]string{"-1", "0", "1048576"}, []string{"-2", "2000000000000"}},
		"dedicated":            {[]string{"true", "false"}, nil},
		"locked-loops":         {[]string{"true", "false"}, nil},
		"inc-buffers":          {[]string{"true", "false"}, nil},
		"no-bundles":           {[]string{"true", "false"}, nil},
		"no-lend":              {[]string{"true", "false"}, nil},
		"netpoll-readiness":    {[]string{"true", "false"}, nil},
		"loop-readiness":       {[]string{"true", "false"}, nil},
		"loops":                {[]string{"0", "256"}, []string{"-1", "257", "100000"}},
		"workers":              {[]string{"0", "4096"}, []string{"-1", "4097", "1000000"}},
		"iowq-max-workers":     {[]string{"0", "65536"}, []string{"65537"}},
		"max-conns":            {[]string{"0", fmt.Sprint(nofile)}, []string{"-1", fmt.Sprint(nofile + 1)}},
		"metrics-addr":         {[]string{"", "127.0.0.1:0", "0.0.0.0:9100"}, []string{"9100", "127.0.0.1:99999"}},
		"metrics-max-conns":    {[]string{"1", "4096"}, []string{"0", "4097"}},
		"metrics-idle-timeout": {[]string{"100ms", "10m"}, []string{"99ms", "0", "11m"}},
		"metrics-host-info":    {[]string{"auto", "on", "off"}, []string{"yes"}},
		"shutdown-timeout":     {[]string{"0", "10m"}, []string{"-1s", "10m1s"}},
		"drain-delay":          {[]string{"0", "5m"}, []string{"-1s", "5m1s"}},
		"version":              {[]string{"true", "false"}, nil},
		"buf-size":             {[]string{"512", "16777216"}, []string{"511", "0", "16777217"}},
		"reuseport":            {[]string{"true", "false"}, nil},
		"network":              {[]string{"tcp", "udp"}, []string{"sctp", "unix"}},
		"udp-readers":          {[]string{"1", "1024"}, []string{"0", "1025"}},
		"udp-multishot":        {[]string{"true", "false"}, nil},
	}
	if nofile == 0 {
		cases["max-conns"] = bound{[]string{"0", "10000000"}, []string{"-1", "10000001"}}
	}
	ranges := flagRanges()
	for name := range ranges {
		if _, ok := cases[name]; !ok {
			t.Errorf("flag -%s has a range but no bounds case here", name)
		}
	}
	for name, b := range cases {
		r, ok := ranges[name]
		if !ok {
			t.Errorf("flag -%s has no range", name)
			continue
		}
		for _, v := range b.in {
			var stderr bytes.Buffer
			if _, code := parseFlags([]string{"-" + name + "=" + v}, &stderr); code != -1 {
				t.Errorf("-%s=%s: exit %d, want accepted; stderr %q", name, v, code, stderr.String())
			}
		}
		for _, v := range b.out {
			var stderr bytes.Buffer
			if _, code := parseFlags([]string{"-" + name + "=" + v}, &stderr); code != 2 {
				t.Errorf("-%s=%s: exit %d, want 2", name, v, code)
			}
			oneLine(t, stderr.String(), "-"+name)
			if !strings.Contains(stderr.String(), r.text) && !strings.Contains(stderr.String(), "invalid") {
				t.Errorf("-%s=%s: stderr %q does not state the range %q", name, v, stderr.String(), r.text)
			}
		}
	}
}

// TestEveryFlagHasRange: the defaults pass the range check (no flag is
// registered without a range, which checkRanges reports), and -help states
// every range.
func TestEveryFlagHasRange(t *testing.T) {
	var stderr bytes.Buffer
	if _, code := parseFlags(nil, &stderr); code != -1 {
		t.Fatalf("defaults: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if _, code := parseFlags([]string{"-h"}, &stderr); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	for name, r := range flagRanges() {
		if !strings.Contains(stderr.String(), "["+r.text+"]") {
			t.Errorf("-help does not state -%s's range %q", name, r.text)
		}
	}
	if strings.Contains(stderr.String(), "-network unix") {
		t.Errorf("-help names a -network unix, which does not exist (unix comes from a path -addr):\n%s", stderr.String())
	}
}

// TestOutOfRangeBeforeStart: a bad flag among good ones exits 2 from run
// without starting (no io_uring probe, nothing on stdout).
func TestOutOfRangeBeforeStart(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-idle-poll", "2s", "-addr", "127.0.0.1:0"}, &stdout, &stderr); code != 2 {
		t.Fatalf("-idle-poll 2s: exit %d, want 2; stderr %q", code, stderr.String())
	}
	oneLine(t, stderr.String(), "0s..1s")
}

func TestDefaultMaxConns(t *testing.T) {
	nofile := nofileLimit()
	if nofile == 0 {
		t.Skip("RLIMIT_NOFILE unknown")
	}
	got := defaultMaxConns()
	if want := max(1, nofile-fdHeadroom()); got != want {
		t.Errorf("defaultMaxConns() = %d, want RLIMIT_NOFILE %d - headroom %d", got, nofile, fdHeadroom())
	}
	if fdHeadroom() <= metricsMaxConnsDefault {
		t.Errorf("headroom %d does not cover the metrics server's cap %d", fdHeadroom(), metricsMaxConnsDefault)
	}
}
