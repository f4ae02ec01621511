package uringrt

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets the test binary act as a client process for tests that
// need more descriptors than one process may hold.
func TestMain(m *testing.M) {
	if spec := os.Getenv("URINGRT_IDLE_CLIENT"); spec != "" {
		os.Exit(idleClient(spec))
	}
	if spec := os.Getenv("URINGRT_MANY_CLIENT"); spec != "" {
		os.Exit(manyClient(spec))
	}
	if d := os.Getenv("URINGRT_CPU_HOG"); d != "" {
		os.Exit(cpuHog(d))
	}
	if spec := os.Getenv("URINGRT_FRAME_CLIENT"); spec != "" {
		os.Exit(frameClient(spec)) // callback_frame_bench_test.go
	}
	os.Exit(m.Run())
}

// cpuHog spins one thread for the duration d (a Go duration): load for
// tests that need busy CPUs, as on a loaded CI machine.
func cpuHog(d string) int {
	dur, err := time.ParseDuration(d)
	if err != nil || dur <= 0 || dur > time.Minute {
		return 2
	}
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
	}
	return 0
}

// idleClient opens N connections to addr ("addr,N"), echoes one byte on
// each, prints "ready", and holds them until stdin closes.
func idleClient(spec string) int {
	addr, nStr, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(nStr)
	raiseSoftNOFILE()
	conns := make([]net.Conn, 0, n)
	buf := make([]byte, 1)
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		// Generous: on a loaded machine a dropped handshake ACK is
		// retransmitted after seconds.
		c.SetDeadline(time.Now().Add(60 * time.Second))
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		if _, err := io.ReadFull(c, buf); err != nil || buf[0] != byte(i) {
			fmt.Println("error: echo", err)
			return 1
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	return 0
}

// manyClient ("addr,N,api") opens N connections at once (through a uringrt
// runtime for api "netconn", Go's net otherwise), echoes a 16-byte message
// on every one while all are open, then resets them all. It prints how
// long dialing took; a failure is printed and exits 1.
func manyClient(spec string) int {
	parts := strings.Split(spec, ",")
	addr, api := parts[0], parts[2]
	n, _ := strconv.Atoi(parts[1])
	raiseSoftNOFILE()
	dial := func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 10*time.Second) }
	if api == "netconn" {
		rt, err := New(Config{Loops: 2, Backend: BackendUring})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		defer rt.Close()
		dial = func() (net.Conn, error) { return rt.Dial("tcp", addr) }
	}
	conns := make([]net.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				if l, ok := c.(interface{ SetLinger(int) error }); ok {
					l.SetLinger(0) // RST: no TIME_WAIT holding 10,000 ports
				}
				c.Close()
			}
		}
	}()
	const workers = 32
	run := func(f func(i int) error) error {
		errc := make(chan error, workers)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < n; i += workers {
					if err := f(i); err != nil {
						errc <- fmt.Errorf("conn %d: %w", i, err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errc)
		return <-errc
	}
	start := time.Now()
	deadline := start.Add(50 * time.Second)
	if err := run(func(i int) error {
		c, err := dial()
		if err != nil {
			return err
		}
		conns[i] = c
		return c.SetDeadline(deadline)
	}); err != nil {
		fmt.Println("error: dial:", err)
		return 1
	}
	dialed := time.Since(start)
	if err := run(func(i int) error {
		var msg, got [16]byte
		binary.LittleEndian.PutUint64(msg[:], uint64(i))
		binary.LittleEndian.PutUint64(msg[8:], ^uint64(i))
		if _, err := conns[i].Write(msg[:]); err != nil {
			return err
		}
		if _, err := io.ReadFull(conns[i], got[:]); err != nil {
			return err
		}
		if got != msg {
			return fmt.Errorf("echo %x, want %x", got, msg)
		}
		return nil
	}); err != nil {
		fmt.Println("error: echo:", err)
		return 1
	}
	fmt.Printf("dialed in %v\n", dialed)
	return 0
}
