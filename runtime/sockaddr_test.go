package uringrt

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRawSockaddrMatchesXSys: accept4, getsockname and getpeername, which
// parse the address themselves (one syscall each, where x/sys/unix's ask
// SO_PROTOCOL first), give what x/sys/unix's give, for TCP over IPv4 and
// IPv6 and for named, unnamed and abstract unix sockets.
func TestRawSockaddrMatchesXSys(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ network, addr string }{
		{"tcp4", "127.0.0.1:0"},
		{"tcp6", "[::1]:0"},
		{"unix", filepath.Join(dir, "s")},
		{"unix", "@uringrt-sockaddr-test-" + filepath.Base(dir)},
	}
	for _, tc := range cases {
		t.Run(tc.network+" "+tc.addr, func(t *testing.T) {
			ln, err := net.Listen(tc.network, tc.addr)
			if err != nil {
				t.Skipf("listen: %v", err)
			}
			defer ln.Close()
			lf, err := fileOf(ln)
			if err != nil {
				t.Fatal(err)
			}
			defer lf.Close()
			lfd := int(lf.Fd()) // Fd makes it blocking: once, before SetNonblock
			if err := unix.SetNonblock(lfd, true); err != nil {
				t.Fatal(err)
			}
			var dialer net.Dialer
			if tc.network == "unix" && tc.addr[0] != '@' {
				// A named client socket as well as the unnamed one below.
				dialer.LocalAddr = &net.UnixAddr{Name: filepath.Join(dir, "c"), Net: "unix"}
			}
			for i, d := range []*net.Dialer{{}, &dialer} {
				c, err := d.Dial(tc.network, ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				nfd, sa, err := accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
				if err != nil {
					t.Fatalf("accept4: %v", err)
				}
				defer unix.Close(nfd)
				want, err := unix.Getpeername(nfd)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(sa, want) {
					t.Errorf("dial %d: accept4's peer %#v, x/sys Getpeername's %#v", i, sa, want)
				}
				for _, f := range []struct {
					name      string
					ours      func(int) (unix.Sockaddr, error)
					reference func(int) (unix.Sockaddr, error)
				}{{"getpeername", getpeername, unix.Getpeername}, {"getsockname", getsockname, unix.Getsockname}} {
					got, err1 := f.ours(nfd)
					want, err2 := f.reference(nfd)
					if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("dial %d: %s %#v (%v), x/sys %#v (%v)", i, f.name, got, err1, want, err2)
					}
				}
			}
			if _, _, err := accept4(lfd, unix.SOCK_NONBLOCK); err != unix.EAGAIN {
				t.Errorf("accept4 with nothing pending: %v, want EAGAIN", err)
			}
		})
	}
}

func fileOf(ln net.Listener) (*os.File, error) {
	return ln.(interface{ File() (*os.File, error) }).File()
}
