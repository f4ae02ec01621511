package uringrt

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// idleProbe dials addr and reports when the server closed the connection
// (the client's Read returns), after echoing one message to prove it
// worked. The caller keeps a second connection busy meanwhile.
func idleProbe(t *testing.T, addr string) (net.Conn, time.Time) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	sent := time.Now() // the server's last progress (its echo) comes after this
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	return c, sent
}

// checkIdleClose runs one idle and one busy connection against addr: the
// idle one is closed by the server no earlier than timeout after its last
// byte (and within a generous bound), the busy one (a byte echoed every
// timeout/4) stays open throughout.
func checkIdleClose(t *testing.T, addr string, timeout time.Duration) {
	t.Helper()
	idle, last := idleProbe(t, addr)
	busy, _ := idleProbe(t, addr)
	closed := make(chan time.Time, 1)
	go func() {
		_, err := idle.Read(make([]byte, 1))
		if err == nil {
			t.Errorf("idle connection: Read returned data")
		}
		closed <- time.Now()
	}()
	end := last.Add(timeout + 10*time.Second)
	var at time.Time
	for at.IsZero() {
		select {
		case at = <-closed:
		case <-time.After(timeout / 4):
			if time.Now().After(end) {
				t.Fatalf("idle connection still open %v after its last byte (IdleTimeout %v)", time.Since(last), timeout)
			}
			busy.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := busy.Write([]byte("y")); err != nil {
				t.Fatalf("busy connection: %v", err)
			}
			if _, err := io.ReadFull(busy, make([]byte, 1)); err != nil {
				t.Fatalf("busy connection closed: %v", err)
			}
		}
	}
	if d := at.Sub(last); d < timeout {
		t.Errorf("idle connection closed %v after its last byte, before IdleTimeout %v", d, timeout)
	}
	// The busy one survives a further timeout of activity.
	for i := 0; i < 6; i++ {
		time.Sleep(timeout / 4)
		busy.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := busy.Write([]byte("z")); err != nil {
			t.Fatalf("busy connection: %v", err)
		}
		if _, err := io.ReadFull(busy, make([]byte, 1)); err != nil {
			t.Fatalf("busy connection closed: %v", err)
		}
	}
}

// TestIdleTimeout: Config.IdleTimeout closes a connection without read or
// write progress, on both APIs, counts it in uringrt_idle_closed_total, and
// leaves busy connections alone. (Before: nothing ever closed an idle
// connection.)
func TestIdleTimeout(t *testing.T) {
	const timeout = 600 * time.Millisecond
	for _, api := range []string{"callback", "conn"} {
		t.Run(api, func(t *testing.T) {
			rt := newRT(t, Config{Loops: 2, IdleTimeout: timeout})
			var addr string
			var closeErr chan error
			if api == "callback" {
				closeErr = make(chan error, 4)
				ln := relServeCB(t, rt, HandlerFuncs{
					Data:  func(c *CallbackConn, d []byte) { c.Write(d) },
					Close: func(c *CallbackConn, err error) { closeErr <- err },
				})
				addr = ln.Addr().String()
				// relServeCB's probe connection closes with io.EOF.
				if err := <-closeErr; err != io.EOF {
					t.Fatalf("probe connection: OnClose(%v)", err)
				}
			} else {
				addr = relServeConnEcho(t, rt).Addr().String()
			}
			checkIdleClose(t, addr, timeout)
			if closeErr != nil {
				select {
				case err := <-closeErr:
					if !errors.Is(err, ErrIdleTimeout) {
						t.Errorf("OnClose(%v), want ErrIdleTimeout", err)
					}
				case <-time.After(5 * time.Second):
					t.Error("no OnClose for the idle connection")
				}
			}
			if n := loopSum(rt.Stats(), func(l *LoopStats) uint64 { return l.IdleClosed }); n != 1 {
				t.Errorf("IdleClosed = %v, want 1", n)
			}
		})
	}
}

// TestIdleTimeoutDialedConn: a dialed net.Conn left idle is closed too; its
// blocked Read returns net.ErrClosed.
func TestIdleTimeoutDialedConn(t *testing.T) {
	const timeout = 200 * time.Millisecond
	rt := newRT(t, Config{Loops: 1, IdleTimeout: timeout})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	start := time.Now() // before the conn exists: its idle time starts after
	c, err := rt.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(start.Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read on an idle dialed conn: %v, want net.ErrClosed", err)
	}
	if d := time.Since(start); d < timeout {
		t.Errorf("closed after %v, before IdleTimeout %v", d, timeout)
	}
}
