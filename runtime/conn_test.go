package uringrt

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/nettest"
)

func TestNettestConn(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			for _, dialer := range []string{"uringrt", "std"} {
				t.Run("dialer="+dialer, func(t *testing.T) {
					nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
						ln, err := rt.Listen("tcp", "127.0.0.1:0")
						if err != nil {
							return nil, nil, nil, err
						}
						defer ln.Close()
						type res struct {
							c   net.Conn
							err error
						}
						ch := make(chan res, 1)
						go func() {
							c, err := ln.Accept()
							ch <- res{c, err}
						}()
						if dialer == "std" {
							c1, err = net.Dial("tcp", ln.Addr().String())
						} else {
							c1, err = rt.Dial("tcp", ln.Addr().String())
						}
						if err != nil {
							return nil, nil, nil, err
						}
						r := <-ch
						if r.err != nil {
							c1.Close()
							return nil, nil, nil, r.err
						}
						return c1, r.c, func() { c1.Close(); r.c.Close() }, nil
					})
				})
			}
		})
	}
}

func TestErrorsLikeStd(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			for _, network := range []string{"tcp", "unix"} {
				c, s := pair(t, rt, network)
				// Read(nil)
				if n, err := s.Read(nil); n != 0 || err != nil {
					t.Fatalf("Read(nil) = %d, %v", n, err)
				}
				// deadline in the past
				s.SetReadDeadline(time.Now().Add(-time.Second))
				_, err := s.Read(make([]byte, 1))
				var ne net.Error
				if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("past deadline: %v", err)
				}
				// deadline in the future wakes a blocked read
				s.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
				start := time.Now()
				_, err = s.Read(make([]byte, 1))
				if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) < 20*time.Millisecond {
					t.Fatalf("future deadline: %v after %v", err, time.Since(start))
				}
				s.SetReadDeadline(time.Time{})
				// CloseWrite -> EOF after the bytes
				c.Write([]byte("bye"))
				c.(interface{ CloseWrite() error }).CloseWrite()
				got, err := io.ReadAll(s)
				if err != nil || string(got) != "bye" {
					t.Fatalf("after CloseWrite: %q, %v", got, err)
				}
				// Close wakes a blocked Read with ErrClosed
				done := make(chan error, 1)
				go func() {
					_, err := c.Read(make([]byte, 1))
					done <- err
				}()
				time.Sleep(20 * time.Millisecond)
				c.Close()
				if err := <-done; !errors.Is(err, net.ErrClosed) {
					t.Fatalf("read blocked across Close: %v", err)
				}
				if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
					t.Fatalf("write after close: %v", err)
				}
				var oe *net.OpError
				if err := c.Close(); !errors.As(err, &oe) || !errors.Is(err, net.ErrClosed) {
					t.Fatalf("second close: %v", err)
				}
			}
		})
	}
}

func TestResetAndRefused(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			// reset: SO_LINGER 0 then close.
			setLinger0(t, c)
			c.Close()
			_, err := s.Read(make([]byte, 8))
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("read after peer reset: %v", err)
			}
			var werr error
			for i := 0; i < 10 && werr == nil; i++ {
				_, werr = s.Write(bytes.Repeat([]byte("x"), 1024))
			}
			if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
				t.Fatalf("write to reset peer: %v", werr)
			}
			// refused
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			addr := ln.Addr().String()
			ln.Close()
			_, err = rt.Dial("tcp", addr)
			var oe *net.OpError
			if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &oe) || oe.Op != "dial" {
				t.Fatalf("dial closed port: %v", err)
			}
		})
	}
}

func TestEchoManyConns(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			relAcceptEcho(new(sync.WaitGroup), ln)
			defer ln.Close()
			const conns, msgs = 50, 50
			inParallel(t, conns, func(i int) error {
				c, err := rt.Dial("tcp", ln.Addr().String())
				if err != nil {
					return err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 100)
				for m := 0; m < msgs; m++ {
					msg := bytes.Repeat([]byte{byte(i + m)}, 1+m)
					if _, err := c.Write(msg); err != nil {
						return err
					}
					if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil || !bytes.Equal(buf[:len(msg)], msg) {
						return errors.Join(err, errors.New("mismatch"))
					}
				}
				return nil
			})
		})
	}
}
