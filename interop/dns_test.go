package interop

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/uringrt/uringrt/runtime"
)

// newRuntime starts a uringrt runtime on io_uring (no fallback: these tests
// prove the ring path) that the test closes; multishot selects
// Config.UDPRecvMultishot.
func newRuntime(t *testing.T, multishot bool) *uringrt.Runtime {
	t.Helper()
	rt, err := uringrt.New(uringrt.Config{Backend: uringrt.BackendUring, Loops: 2, UDPRecvMultishot: multishot})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// dnsServer serves zone answers with miekg/dns on a uringrt PacketConn and
// returns its address; the server is shut down when the test ends.
func dnsServer(t *testing.T, rt *uringrt.Runtime) string {
	t.Helper()
	pc, err := rt.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := dns.NewServeMux()
	mux.HandleFunc("uringrt.test.", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		switch q.Qtype {
		case dns.TypeA:
			var ip net.IP = net.IPv4(192, 0, 2, 1)
			// hostN.uringrt.test. answers 192.0.2.N.
			var i int
			if _, err := fmt.Sscanf(q.Name, "host%d.", &i); err == nil {
				ip = net.IPv4(192, 0, 2, byte(i))
			}
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: ip})
		case dns.TypeTXT:
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{"served by uringrt"}})
		default:
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: mux, NotifyStartedFunc: func() { close(started) }}
	served := make(chan error, 1)
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		t.Fatalf("dns server: %v", err)
	}
	t.Cleanup(func() {
		// miekg/dns shuts down by setting a read deadline in the past on
		// the PacketConn, which must wake its parked ReadFrom.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.ShutdownContext(ctx); err != nil {
			t.Errorf("dns server shutdown: %v", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("dns server: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("dns server did not return after shutdown")
		}
	})
	return pc.LocalAddr().String()
}

// TestDNSServerMiekgClient: miekg/dns's own client queries the server,
// sequentially and 200 queries from 8 goroutines, each answer checked; on
// both receive paths (nonblock recvmsg, multishot recvmsg).
func TestDNSServerMiekgClient(t *testing.T) {
	for _, multishot := range []bool{false, true} {
		t.Run(fmt.Sprintf("multishot=%v", multishot), func(t *testing.T) { testDNSMiekgClient(t, multishot) })
	}
}

func testDNSMiekgClient(t *testing.T, multishot bool) {
	addr := dnsServer(t, newRuntime(t, multishot))
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	query := func(name string, qtype uint16) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		var r *dns.Msg
		var err error
		for try := 0; try < 3; try++ { // UDP: a lost datagram is retried, as resolvers do
			if r, _, err = c.Exchange(m, addr); err == nil {
				break
			}
		}
		return r, err
	}
	r, err := query("www.uringrt.test.", dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" || !r.Authoritative {
		t.Fatalf("A answer: %v", r)
	}
	r, err = query("www.uringrt.test.", dns.TypeTXT)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Answer) != 1 || r.Answer[0].(*dns.TXT).Txt[0] != "served by uringrt" {
		t.Fatalf("TXT answer: %v", r)
	}
	r, err = query("www.uringrt.test.", dns.TypeMX)
	if err != nil || r.Rcode != dns.RcodeNameError {
		t.Fatalf("MX: want NXDOMAIN, got %v %v", r, err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < 200; i += 8 {
				n := i%250 + 1
				r, err := query(fmt.Sprintf("host%d.uringrt.test.", n), dns.TypeA)
				if err != nil {
					errs <- err
					continue
				}
				if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != fmt.Sprintf("192.0.2.%d", n) {
					errs <- fmt.Errorf("host%d: %v", n, r.Answer)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDNSServerDig: Debian's dig (dnsutils) queries the server. Without
// dig the test skips, unless URINGRT_REQUIRE_DIG=1 (set by .ci/run, which
// installs it).
func TestDNSServerDig(t *testing.T) {
	dig, err := exec.LookPath("dig")
	if err != nil {
		if os.Getenv("URINGRT_REQUIRE_DIG") == "1" {
			t.Fatal("dig not found and URINGRT_REQUIRE_DIG=1: apt-get install dnsutils")
		}
		t.Skip("dig not found (apt-get install dnsutils); set URINGRT_REQUIRE_DIG=1 to fail instead")
	}
	addr := dnsServer(t, newRuntime(t, false))
	host, port, _ := net.SplitHostPort(addr)
	for _, c := range []struct{ name, qtype, want string }{
		{"www.uringrt.test", "A", "192.0.2.1"},
		{"host42.uringrt.test", "A", "192.0.2.42"},
		{"www.uringrt.test", "TXT", `"served by uringrt"`},
	} {
		out, err := exec.Command(dig, "@"+host, "-p", port, "+short", "+tries=3", "+time=5", c.name, c.qtype).CombinedOutput()
		if err != nil {
			t.Fatalf("dig %s %s: %v\n%s", c.name, c.qtype, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("dig %s %s = %q, want %q", c.name, c.qtype, got, c.want)
		}
	}
	// The full answer: status and the authoritative flag.
	out, err := exec.Command(dig, "@"+host, "-p", port, "+tries=3", "+time=5", "nothing.uringrt.test", "MX").CombinedOutput()
	if err != nil {
		t.Fatalf("dig: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "status: NXDOMAIN") || !strings.Contains(string(out), "flags: qr aa") {
		t.Errorf("dig MX: want NXDOMAIN with aa:\n%s", out)
	}
}
