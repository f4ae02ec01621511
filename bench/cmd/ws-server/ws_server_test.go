package main

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServersUnderWsload builds wsload and runs each of its modes briefly
// against gorilla's and uringws's servers, started in this process: the
// same behaviour from each (every echoed and broadcast byte checked,
// deflate negotiated where offered). nbio's engine is left out here: in a
// test process beside the others it refuses a few of a burst of new
// connections now and then (as its own process it has not).
func TestServersUnderWsload(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc): wsload not built")
	}
	bin := filepath.Join(t.TempDir(), "wsload")
	if out, err := exec.Command(cc, "-O2", "-o", bin, "../../wsload/wsload.c", "../../wsload/run.c", "-lm").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	for _, name := range []string{"gorilla", "uringws"} {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			go servers[name](addr, 1, true)
			for i := 0; ; i++ {
				c, err := net.Dial("tcp", addr)
				if err == nil {
					c.Close()
					break
				}
				if i == 200 {
					t.Fatalf("%s did not listen on %s", name, addr)
				}
				time.Sleep(25 * time.Millisecond)
			}
			for _, args := range [][]string{
				{"-m", "idle", "-c", "20", "-t", "0.1", "-z"},
				{"-m", "echo", "-c", "20", "-d", "2", "-w", "0.2", "-t", "0.5"},
				{"-m", "bcast", "-c", "20", "-d", "2", "-w", "0.2", "-t", "0.5"},
			} {
				out, err := exec.Command(bin, append([]string{"-a", addr, "-s", "1024"}, args...)...).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "mismatches=0") {
					t.Fatalf("wsload %v: %v\n%s", args, err, out)
				}
				if args[1] == "idle" && !strings.Contains(string(out), "deflate_negotiated=20 ") {
					t.Fatalf("wsload %v: permessage-deflate not negotiated on every connection\n%s", args, out)
				}
			}
		})
	}
}
