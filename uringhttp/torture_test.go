package uringhttp_test

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tortureHandler answers /t?id=N&kind=K with what it read, so that a
// response given to the wrong request, or a pooled response writer's
// leftovers leaking into the next one, shows.
func tortureHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		id, kind := q.Get("id"), q.Get("kind")
		b, err := io.ReadAll(r.Body)
		sum := fmt.Sprintf("id=%s len=%d sha=%x err=%v", id, len(b), sha256.Sum256(b), err)
		w.Header().Set("X-Id", id)
		switch kind {
		case "flush":
			io.WriteString(w, sum)
			w.(http.Flusher).Flush()
			io.WriteString(w, ";flushed")
		case "trailer":
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, sum)
			w.Header().Set("X-Sum", id)
		case "large":
			io.WriteString(w, sum)
			w.Write([]byte(strings.Repeat(id, 20000/len(id))))
		case "status":
			w.WriteHeader(201 + len(id)%3)
			io.WriteString(w, sum)
		default:
			io.WriteString(w, sum)
		}
	})
}

// TestTortureMixedPipelines: connections pipeline mixed requests (GET,
// POST with Content-Length or chunked bodies, responses flushed, with
// trailers, large, with other statuses) at random depths, their bytes cut
// at random places; every response must be the one its request asked for,
// in order.
func TestTortureMixedPipelines(t *testing.T) {
	s := startUring(t, tortureHandler(), nil)
	conns, perConn := 16, 120
	if testing.Short() {
		conns, perConn = 4, 30
	}
	kinds := []string{"plain", "flush", "trailer", "large", "status"}
	var wg sync.WaitGroup
	for ci := 0; ci < conns; ci++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(ci)))
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			br := bufio.NewReader(c)
			type sent struct {
				id, kind string
				body     []byte
			}
			for done := 0; done < perConn; {
				depth := 1 + rng.Intn(8)
				var batch []sent
				var raw strings.Builder
				for i := 0; i < depth && done+i < perConn; i++ {
					id := strconv.Itoa(ci*100000 + done + i)
					kind := kinds[rng.Intn(len(kinds))]
					body := make([]byte, rng.Intn(3)*rng.Intn(5000))
					rng.Read(body)
					target := "/t?id=" + id + "&kind=" + kind
					switch {
					case len(body) == 0:
						raw.WriteString("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n")
					case rng.Intn(2) == 0:
						fmt.Fprintf(&raw, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", target, len(body), body)
					default:
						fmt.Fprintf(&raw, "POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", target)
						for off := 0; off < len(body); {
							n := min(1+rng.Intn(1500), len(body)-off)
							fmt.Fprintf(&raw, "%x\r\n%s\r\n", n, body[off:off+n])
							off += n
						}
						raw.WriteString("0\r\n\r\n")
					}
					batch = append(batch, sent{id, kind, body})
				}
				// Write the batch cut at random places, while reading.
				werr := make(chan error, 1)
				go func(b string) {
					for len(b) > 0 {
						n := min(1+rng.Intn(3000), len(b))
						if _, err := io.WriteString(c, b[:n]); err != nil {
							werr <- err
							return
						}
						b = b[n:]
					}
					werr <- nil
				}(raw.String())
				for _, q := range batch {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Errorf("conn %d, request %s (%s): %v", ci, q.id, q.kind, err)
						return
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					want := fmt.Sprintf("id=%s len=%d sha=%x err=<nil>", q.id, len(q.body), sha256.Sum256(q.body))
					if err != nil || !strings.HasPrefix(string(got), want) || resp.Header.Get("X-Id") != q.id {
						t.Errorf("conn %d, request %s (%s): got %d X-Id=%q %.120q (%v), want %q", ci, q.id, q.kind, resp.StatusCode, resp.Header.Get("X-Id"), got, err, want)
						return
					}
					switch q.kind {
					case "trailer":
						if resp.Trailer.Get("X-Sum") != q.id {
							t.Errorf("request %s: trailer %q", q.id, resp.Trailer)
						}
					case "large":
						if len(got) != len(want)+20000/len(q.id)*len(q.id) {
							t.Errorf("request %s: %d bytes", q.id, len(got))
						}
					case "flush":
						if !strings.HasSuffix(string(got), ";flushed") {
							t.Errorf("request %s: %q", q.id, got)
						}
					case "status":
						if resp.StatusCode != 201+len(q.id)%3 {
							t.Errorf("request %s: status %d", q.id, resp.StatusCode)
						}
					}
				}
				if err := <-werr; err != nil {
					t.Errorf("conn %d: write: %v", ci, err)
					return
				}
				done += len(batch)
			}
		}()
	}
	wg.Wait()
}
