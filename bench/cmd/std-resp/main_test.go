package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCommands runs examples/resp's table of requests and replies against
// the twin: the same semantics on both servers.
func TestCommands(t *testing.T) {
	const path = "../../../examples/resp/testdata/commands.txt"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := newServer(64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReader(c)
	n := 0
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		q1, err1 := strconv.QuotedPrefix(line)
		q2, err2 := strconv.QuotedPrefix(strings.TrimPrefix(line[len(q1):], " "))
		req, err3 := strconv.Unquote(q1)
		want, err4 := strconv.Unquote(q2)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		c.Write([]byte(req))
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
			t.Fatalf("%q: %q, %v; want %q", req, got, err, want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no requests in the table")
	}
}
