package uringrt

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// Tests of a connection's edges (issue 14): addresses kept for life,
// writes refused once a close began, half-close in the callback API,
// abstract unix names, cancelled dials. Each failed before its fix.

// TestAcceptAddrAfterPeerReset: a client connects, sets SO_LINGER 0 and
// closes before the server accepts; Accept's conn still names the peer
// (accept4 returns it), and both addresses stay the same after Close.
func TestAcceptAddrAfterPeerReset(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			ln := listenTCP(t, rt)
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			want := c.LocalAddr().String()
			setLinger0(t, c)
			c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			if s.RemoteAddr() == nil || s.RemoteAddr().String() != want {
				t.Fatalf("RemoteAddr after the peer's reset = %v, want %s", s.RemoteAddr(), want)
			}
			if s.LocalAddr() == nil || s.LocalAddr().String() != ln.Addr().String() {
				t.Fatalf("LocalAddr = %v, want %s", s.LocalAddr(), ln.Addr())
			}
			s.Close()
			if s.RemoteAddr() == nil || s.RemoteAddr().String() != want || s.LocalAddr() == nil {
				t.Fatalf("after Close: LocalAddr %v RemoteAddr %v, want %s", s.LocalAddr(), s.RemoteAddr(), want)
			}
		})
	}
}

// TestDialedAddrAfterClose: a dialed conn keeps both addresses after Close.
func TestDialedAddrAfterClose(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			la, ra := c.LocalAddr().String(), c.RemoteAddr().String()
			if la != s.RemoteAddr().String() || ra != s.LocalAddr().String() {
				t.Fatalf("client %s->%s, server %s<-%s", la, ra, s.LocalAddr(), s.RemoteAddr())
			}
			c.Close()
			if c.LocalAddr() == nil || c.LocalAddr().String() != la || c.RemoteAddr() == nil || c.RemoteAddr().String() != ra {
				t.Fatalf("after Close: %v->%v, want %s->%s", c.LocalAddr(), c.RemoteAddr(), la, ra)
			}
		})
	}
}

// TestCallbackOnCloseSeesAddrs: OnClose sees both addresses after the
// peer's FIN, after a local Close and after the peer's reset.
func TestCallbackOnCloseSeesAddrs(t *testing.T) {
	for _, tier := range relCbTiers {
		for _, how := range []string{"fin", "local", "reset"} {
			t.Run(tier.name+"/"+how, func(t *testing.T) {
				rt := newRT(t, tier.cfg)
				type addrs struct{ local, remote net.Addr }
				got := make(chan addrs, 4)
				opened := make(chan string, 4)
				h := HandlerFuncs{
					Open: func(c *CallbackConn) { opened <- c.RemoteAddr().String() },
					Data: func(c *CallbackConn, d []byte) {
						if how == "local" {
							c.Close()
						}
					},
					Close: func(c *CallbackConn, err error) {
						got <- addrs{c.LocalAddr(), c.RemoteAddr()}
					},
					Blocking: tier.blocking,
				}
				ln := relServeCB(t, rt, h)
				for len(got) > 0 { // relServeCB's own probe connection
					<-got
				}
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				wantL, wantR := c.RemoteAddr().String(), c.LocalAddr().String()
				switch how {
				case "fin":
					c.Close()
				case "local":
					c.Write([]byte("x"))
				case "reset":
					// Reset once the handler has it (a connection reset
					// before it is accepted is closed unseen).
					for a := range opened {
						if a == wantR {
							break
						}
					}
					setLinger0(t, c)
					c.Close()
				}
				end := time.After(10 * time.Second)
				for {
					select {
					case a := <-got:
						if a.remote != nil && a.remote.String() != wantR {
							continue // the probe connection's OnClose
						}
						if a.local == nil || a.remote == nil || a.local.String() != wantL {
							t.Fatalf("OnClose after %s: LocalAddr %v RemoteAddr %v, want %s and %s", how, a.local, a.remote, wantL, wantR)
						}
						return
					case <-end:
						t.Fatalf("no OnClose after %s", how)
					}
				}
			})
		}
	}
}

// TestListenAbstractUnixUnlinksNothing: with a regular file named like an
// abstract socket in the working directory, Listen("unix", "@name") and
// Close leave the file alone (an abstract name has no file).
func TestListenAbstractUnixUnlinksNothing(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			name := "@uringrt-test-" + strings.ReplaceAll(t.Name(), "/", "-")
			if err := os.WriteFile(name, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			ln, err := rt.Listen("unix", name)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				if s, err := ln.Accept(); err == nil {
					io.Copy(s, s)
					s.Close()
				}
			}()
			c, err := rt.Dial("unix", name)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte("x"))
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			c.Close()
			ln.Close()
			if b, err := os.ReadFile(name); err != nil || string(b) != "keep" {
				t.Fatalf("file %q after Close of the abstract listener: %q, %v", name, b, err)
			}
		})
	}
}

// TestDialContextCancelled: a dial with a context cancelled before the
// call, or during a connect that cannot complete, fails with an error
// wrapping context.Canceled, on tcp and unix, by DialContext and
// DialCallback.
func TestDialContextCancelled(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			tcp := listenTCP(t, rt)
			ux, err := rt.Listen("unix", t.TempDir()+"/s.sock")
			if err != nil {
				t.Fatal(err)
			}
			defer ux.Close()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			for _, ln := range []net.Listener{tcp, ux} {
				network := ln.Addr().Network()
				for i := 0; i < 5; i++ {
					c, err := rt.DialContext(ctx, network, ln.Addr().String())
					if !errors.Is(err, context.Canceled) {
						if c != nil {
							c.Close()
						}
						t.Fatalf("%s DialContext with a cancelled context: %v, want context.Canceled", network, err)
					}
					cc, err := rt.DialCallback(ctx, network, ln.Addr().String(), HandlerFuncs{})
					if !errors.Is(err, context.Canceled) {
						if cc != nil {
							cc.AsyncClose()
						}
						t.Fatalf("%s DialCallback with a cancelled context: %v, want context.Canceled", network, err)
					}
				}
			}
			// Mid-dial: a listener whose accept queue is full drops SYNs, so
			// the connect stays in progress until the context is cancelled.
			addr := fullListener(t)
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			c, err := rt.DialContext(ctx, "tcp", addr)
			if !errors.Is(err, context.Canceled) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("DialContext cancelled mid-connect: %v, want context.Canceled", err)
			}
		})
	}
}

// fullListener returns the address of a listening socket (backlog 0) that
// is never accepted from and whose accept queue has been filled: further
// connects stay in progress (their SYNs are dropped).
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(fd)
	addr := sockaddrToAddr("tcp", sa).String()
	for i := 0; i < 16; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // this one could not complete: the queue is full
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the accept queue never filled")
	return ""
}

// TestPostToExitedLoop: a connection handed to a loop that has already
// exited (accepted on another loop while the runtime closes) is closed,
// and an AsyncWrite to a conn of that loop says net.ErrClosed; before, the
// request sat in the dead loop's queue and the socket stayed open.
func TestPostToExitedLoop(t *testing.T) {
	rt := newRT(t, Config{Loops: 2})
	l := rt.loops[1]
	l.post(request{kind: reqStop})
	<-l.done
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	n := newBareNetFD(rt, l, fds[0], unix.AF_UNIX, "unix")
	n.cb = true
	rt.track(n)
	cc := newCallbackConn(n, HandlerFuncs{})
	l.post(request{kind: reqRegisterCB, cc: cc})
	if !n.final.Load() {
		t.Fatal("a conn posted to an exited loop was left open")
	}
	if _, err := cc.AsyncWrite([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("AsyncWrite on an exited loop: %v, want net.ErrClosed", err)
	}
}

// TestStopClosesConnWithOutputQueued: the runtime stops in the same loop
// pass in which a callback conn, its read side already ended, queues
// output and begins closing. Its send is then refused by the stopping
// loop; that refusal must still close the conn. Before, it was dropped
// without a word and the socket stayed open (in CLOSE_WAIT: the leak
// TestNetworkChaosNoCrash saw under CPU load).
func TestStopClosesConnWithOutputQueued(t *testing.T) {
	for _, tier := range relCbTiers {
		if tier.cfg.Backend == BackendStd || tier.blocking {
			continue
		}
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			opened := make(chan *CallbackConn, 2)
			ln := relServeCB(t, rt, HandlerFuncs{Open: func(c *CallbackConn) { opened <- c }})
			<-opened // the probe
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cc := <-opened
			l := cc.l
			onLoop(l, func() { cc.paused = true; l.cancelOp(&cc.recvOp) })
			for armed := true; armed; {
				onLoop(l, func() { armed = cc.recvOp.armed })
			}
			// Both in one drain: the conn starts closing with output
			// queued, then the loop stops before flushing it.
			l.mu.Lock()
			l.queue = append(l.queue,
				request{kind: reqFunc, fn: func() { cc.queue([]byte("x"), false); cc.closeOnLoop(io.EOF) }},
				request{kind: reqStop})
			l.mu.Unlock()
			l.wake()
			<-l.done
			if !cc.fd.final.Load() {
				t.Fatal("the loop exited and left the conn's socket open")
			}
		})
	}
}

// TestStopWakesRefusedOp: a goroutine's ring op (a net.Conn send under
// the ring policy) posted in the same pass as the loop's stop is refused
// with ECANCELED, and its owner must be woken before the loop exits.
// Before, the wake was queued and the loop exited without sending it: the
// writer waited for ever (TestNetworkChaosNoCrash's conn/ring case hung
// in CI, its echo goroutine parked in ringOp after Close).
func TestStopWakesRefusedOp(t *testing.T) {
	rt := newRT(t, Config{Loops: 2, Switches: experiment.Switches{Pollable: experiment.PollRing}})
	l := rt.loops[1]
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	n := newNetFD(rt, l, fds[0], unix.AF_UNIX, "unix")
	o := &n.ringOps().wop
	o.buf = []byte("x")
	// The stop's own cancels come back first; then, in the pass in which
	// nothing is left in flight, a send is posted and refused.
	l.post(request{kind: reqFunc, fn: func() {
		l.stop()
		var again func()
		again = func() {
			if l.inflight != 0 {
				l.mu.Lock()
				l.queue = append(l.queue, request{kind: reqFunc, fn: again}) // next pass
				l.mu.Unlock()
				return
			}
			l.arm(o)
		}
		l.mu.Lock()
		l.queue = append(l.queue, request{kind: reqFunc, fn: again})
		l.mu.Unlock()
	}})
	select {
	case <-o.done:
		if o.res != -int32(syscall.ECANCELED) {
			t.Fatalf("refused send: res %d, want -ECANCELED", o.res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a send refused by a stopping loop never woke its owner")
	}
}
