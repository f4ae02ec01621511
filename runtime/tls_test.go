package uringrt

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/uringrt/uringrt/internal/testcert"
)

// TestTLSEcho: a crypto/tls server over uringrt conns echoes lines (bufio
// on top, lines from a few bytes to several TLS records) to a TLS client
// dialled through uringrt; CloseWrite reaches the server as EOF.
func TestTLSEcho(t *testing.T) {
	cert, pool := testcert.New(t)
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			raw, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := tls.NewListener(raw, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
			defer ln.Close()
			serverDone := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					serverDone <- err
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				br, bw := bufio.NewReader(c), bufio.NewWriter(c)
				for {
					line, err := br.ReadString('\n')
					if err == io.EOF && line == "" {
						serverDone <- nil // the client's CloseWrite
						return
					}
					if err != nil {
						serverDone <- err
						return
					}
					if _, err := bw.WriteString(line); err != nil {
						serverDone <- err
						return
					}
					if err := bw.Flush(); err != nil {
						serverDone <- err
						return
					}
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rc, err := rt.DialContext(ctx, "tcp", raw.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			tc := tls.Client(rc, &tls.Config{RootCAs: pool, ServerName: "localhost"})
			defer tc.Close()
			tc.SetDeadline(time.Now().Add(20 * time.Second))
			if err := tc.HandshakeContext(ctx); err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if st := tc.ConnectionState(); !st.HandshakeComplete || st.Version != tls.VersionTLS13 {
				t.Fatalf("connection state: complete %v version %x", st.HandshakeComplete, st.Version)
			}
			br, bw := bufio.NewReader(tc), bufio.NewWriter(tc)
			for i := 0; i < 60; i++ {
				n := 1 + i*37
				if i%10 == 9 {
					n = 70000 + i // several 16 KiB records
				}
				line := strings.Repeat(string(rune('a'+i%26)), n) + "\n"
				if _, err := bw.WriteString(line); err != nil {
					t.Fatal(err)
				}
				if err := bw.Flush(); err != nil {
					t.Fatal(err)
				}
				got, err := br.ReadString('\n')
				if err != nil || got != line {
					t.Fatalf("line %d (%d bytes): got %d bytes, %v", i, len(line), len(got), err)
				}
			}
			if err := tc.CloseWrite(); err != nil {
				t.Fatalf("CloseWrite: %v", err)
			}
			select {
			case err := <-serverDone:
				if err != nil {
					t.Fatalf("server: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("server did not see the client's CloseWrite")
			}
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				t.Fatalf("client read after server close: %v, want EOF", err)
			}
		})
	}
}
