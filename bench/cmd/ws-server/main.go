// Command ws-server is one WebSocket server of the WebSocket benchmarks,
// the same behaviour on each library: /echo writes every message back,
// /bcast joins the broadcast group, sends the new member a 1-byte text
// message ("j") once it is in, and every message a member sends goes to
// all members (encoded once where the library can: gorilla's and uringws's
// prepared messages).
//
//	ws-server -server gorilla|nbio|uringws -addr 127.0.0.1:9000 [-stats-addr 127.0.0.1:9001] [-loops 1]
//
// -stats-addr serves, on Go's net/http, /stats: the goroutine count after a
// collection that returns freed memory to the OS, so that the RSS a script
// reads next from /proc is the live heap's; and /debug/pprof/.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
)

// servers are the implementations by name; each serves until it fails.
var servers = map[string]func(addr string, loops int, deflate bool) error{}

func main() {
	server := flag.String("server", "gorilla", "the implementation: "+strings.Join(names(), ", "))
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	stats := flag.String("stats-addr", "", "serve /stats (goroutines after a GC) here")
	loops := flag.Int("loops", 0, "uringrt loops or nbio pollers (0: the library's default)")
	deflate := flag.Bool("deflate", false, "accept permessage-deflate")
	list := flag.Bool("list", false, "print the implementations built in, one a line, and exit")
	flag.Parse()
	if *list {
		fmt.Println(strings.Join(names(), "\n"))
		return
	}
	run, ok := servers[*server]
	if !ok {
		log.Fatalf("-server %q: want one of %v", *server, names())
	}
	if *stats != "" {
		go func() {
			http.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
				runtime.GC()
				debug.FreeOSMemory()
				fmt.Fprintf(w, "goroutines %d\n", runtime.NumGoroutine())
			})
			log.Fatal(http.ListenAndServe(*stats, nil)) // /stats and net/http/pprof's /debug/pprof/
		}()
	}
	fmt.Fprintf(os.Stderr, "ws-server %s listening on %s\n", *server, *addr)
	log.Fatal(run(*addr, *loops, *deflate))
}

func names() []string {
	var out []string
	for n := range servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// hub is the broadcast group: members by identity, written by whoever
// holds them.
type hub[C comparable] struct {
	mu      sync.RWMutex
	members map[C]struct{}
}

func newHub[C comparable]() *hub[C] { return &hub[C]{members: map[C]struct{}{}} }

func (h *hub[C]) join(c C)  { h.mu.Lock(); h.members[c] = struct{}{}; h.mu.Unlock() }
func (h *hub[C]) leave(c C) { h.mu.Lock(); delete(h.members, c); h.mu.Unlock() }

// each calls f for every member.
func (h *hub[C]) each(f func(C)) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for c := range h.members {
		f(c)
	}
}
