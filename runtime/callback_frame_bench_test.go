package uringrt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCallbackFrames1MiB: a memcached-like server takes "set" commands
// of 1 MiB values, one after the other from one client in a child process
// (so the test process's CPU is the server's alone), on the callback API
// (Peek for the whole command, Discard) and on Go's net (bufio.Reader:
// ReadSlice for the line, io.ReadFull for the value, as a Go server
// reads). Rounds alternate between the two; each reports the server
// process's CPU per set, and the benchmark the medians and their ratio
// (callback / Go net). Run it under the bench lock:
//
//	flock /work/notes/bench.lock go test -run XXX -bench CallbackFrames1MiB -benchtime 1x ./runtime/
func BenchmarkCallbackFrames1MiB(b *testing.B) {
	const value, sets, rounds = 1 << 20, 64, 6
	rt := newRT(b, Config{Loops: 1})
	cbAddr := serveCB(b, rt, memcacheSetHandler()).Addr().String()
	netAddr := serveNetMemcacheSet(b)
	var cb, gn []float64
	for range b.N {
		for range rounds {
			cb = append(cb, frameRound(b, cbAddr, sets, value))
			gn = append(gn, frameRound(b, netAddr, sets, value))
		}
	}
	slices.Sort(cb)
	slices.Sort(gn)
	mc, mg := cb[len(cb)/2], gn[len(gn)/2]
	b.ReportMetric(mc, "cb-cpu-us/set")
	b.ReportMetric(mg, "net-cpu-us/set")
	b.ReportMetric(mc/mg, "ratio")
	b.Logf("CPU per 1 MiB set, us: callback %v, Go net %v; median ratio %.2f", round1(cb), round1(gn), mc/mg)
}

func round1(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x*10)) / 10
	}
	return out
}

// memcacheSetHandler answers "set <key> <flags> <exptime> <bytes>\r\n"
// followed by the value and "\r\n" with "STORED\r\n", framing with Peek
// and Discard.
func memcacheSetHandler() Handler {
	return HandlerFuncs{Data: func(c *CallbackConn, _ []byte) {
		for {
			buf, _ := c.Peek(-1)
			i := bytes.Index(buf, []byte("\r\n"))
			if i < 0 {
				return
			}
			f := bytes.Fields(buf[:i])
			n, err := strconv.Atoi(string(f[len(f)-1]))
			if err != nil || len(f) != 5 {
				c.Close()
				return
			}
			total := i + 2 + n + 2
			if _, err := c.Peek(total); err != nil {
				return // the rest of the value comes in later OnData calls
			}
			c.Discard(total)
			c.Write([]byte("STORED\r\n"))
		}
	}}
}

// serveNetMemcacheSet is memcacheSetHandler on Go's net, a goroutine per
// connection reading through bufio.
func serveNetMemcacheSet(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				var val []byte
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						return
					}
					f := bytes.Fields(line)
					n, err := strconv.Atoi(string(f[len(f)-1]))
					if err != nil || len(f) != 5 {
						return
					}
					if cap(val) < n+2 {
						val = make([]byte, n+2)
					}
					if _, err := io.ReadFull(r, val[:n+2]); err != nil {
						return
					}
					c.Write([]byte("STORED\r\n"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// frameRound runs a child process that sends sets of value bytes to
// addr, one after another, and returns the CPU this process spent per set
// (us) while it did.
func frameRound(b *testing.B, addr string, sets, value int) float64 {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("URINGRT_FRAME_CLIENT=%s,%d,%d", addr, sets, value))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		b.Fatalf("frame client: %q %v", line, err)
	}
	t0 := cpuTime()
	in.Write([]byte("go\n"))
	if err := cmd.Wait(); err != nil {
		b.Fatalf("frame client: %v", err)
	}
	return float64(cpuTime()-t0) / float64(time.Microsecond) / float64(sets)
}

// frameClient is the child of frameRound ("addr,sets,value"): it
// connects, prints "ready", waits for a line on stdin, then sends its
// sets one by one, each after the last one's reply.
func frameClient(spec string) int {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return 2
	}
	sets, _ := strconv.Atoi(parts[1])
	value, _ := strconv.Atoi(parts[2])
	c, err := net.Dial("tcp", parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	msg := fmt.Appendf(nil, "set k 0 0 %d\r\n", value)
	msg = append(msg, bytes.Repeat([]byte("v"), value)...)
	msg = append(msg, "\r\n"...)
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	c.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReader(c)
	for range sets {
		if _, err := c.Write(msg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if line, err := r.ReadString('\n'); err != nil || line != "STORED\r\n" {
			fmt.Fprintln(os.Stderr, "reply:", line, err)
			return 1
		}
	}
	return 0
}
