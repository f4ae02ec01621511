// Command resp-server is the RESP (Redis protocol) server of
// scripts/bench-http.sh: github.com/tidwall/redcon serving PING, SET, GET,
// DEL, INCR and CONFIG GET (what redis-benchmark asks) from an in-memory
// map, on uringrt's listener or Go's net (-backend). It exits 0 on SIGINT
// or SIGTERM.
//
//	resp-server -addr 127.0.0.1:17611 -backend uring
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/redcon"

	"github.com/uringrt/uringrt/bench/internal/benchsrv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:17611", "listen `address`")
	backend := flag.String("backend", "uring", "listener: uring (uringrt, -loops loops), uring-locked (the same with Config.LockedLoops), uring-netpoll (readers waiting in Go's netpoller), uring-loop (readers waiting on the loop's POLLIN) or std (Go's net)")
	loops := flag.Int("loops", 1, "uringrt event loops (0 = GOMAXPROCS)")
	flag.Parse()
	ln, closeLn, err := benchsrv.Listen(*backend, *addr, *loops)
	if err != nil {
		fmt.Fprintf(os.Stderr, "resp-server: %v\n", err)
		os.Exit(2)
	}
	s := &store{m: map[string][]byte{}}
	srv := redcon.NewServer(*addr, s.handle, nil, nil)
	ctx, stop := benchsrv.SignalContext()
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	err = srv.Serve(ln)
	closeLn()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "resp-server: %v\n", err)
		os.Exit(1)
	}
}

type store struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func (s *store) handle(conn redcon.Conn, cmd redcon.Command) {
	switch strings.ToLower(string(cmd.Args[0])) {
	case "ping":
		conn.WriteString("PONG")
	case "set":
		if len(cmd.Args) < 3 {
			conn.WriteError("ERR wrong number of arguments for 'set'")
			return
		}
		s.mu.Lock()
		s.m[string(cmd.Args[1])] = append([]byte(nil), cmd.Args[2]...)
		s.mu.Unlock()
		conn.WriteString("OK")
	case "get":
		if len(cmd.Args) != 2 {
			conn.WriteError("ERR wrong number of arguments for 'get'")
			return
		}
		s.mu.RLock()
		v, ok := s.m[string(cmd.Args[1])]
		s.mu.RUnlock()
		if !ok {
			conn.WriteNull()
			return
		}
		conn.WriteBulk(v)
	case "del":
		s.mu.Lock()
		n := 0
		for _, k := range cmd.Args[1:] {
			if _, ok := s.m[string(k)]; ok {
				delete(s.m, string(k))
				n++
			}
		}
		s.mu.Unlock()
		conn.WriteInt(n)
	case "incr":
		if len(cmd.Args) != 2 {
			conn.WriteError("ERR wrong number of arguments for 'incr'")
			return
		}
		s.mu.Lock()
		n, err := strconv.ParseInt(string(s.m[string(cmd.Args[1])]), 10, 64)
		if err != nil && len(s.m[string(cmd.Args[1])]) > 0 {
			s.mu.Unlock()
			conn.WriteError("ERR value is not an integer or out of range")
			return
		}
		n++
		s.m[string(cmd.Args[1])] = strconv.AppendInt(nil, n, 10)
		s.mu.Unlock()
		conn.WriteInt64(n)
	case "config":
		// redis-benchmark's CONFIG GET save / appendonly: nothing set.
		if len(cmd.Args) == 3 {
			conn.WriteArray(2)
			conn.WriteBulk(cmd.Args[2])
			conn.WriteBulkString("")
			return
		}
		conn.WriteArray(0)
	default:
		conn.WriteError("ERR unknown command '" + string(cmd.Args[0]) + "'")
	}
}
