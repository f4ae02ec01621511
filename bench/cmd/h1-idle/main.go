// Command h1-idle holds idle HTTP/1.1 keep-alive connections for
// scripts/bench-uringhttp.sh and scripts/bench-tls.sh (-tls): it opens -n
// connections to -addr, sends one
// GET on each and reads its response, prints "ready N", and keeps them
// open until its standard input ends.
//
//	h1-idle -addr 127.0.0.1:17630 -n 15000
package main

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:17630", "server `address`")
	n := flag.Int("n", 15000, "connections")
	useTLS := flag.Bool("tls", false, "HTTPS (TLS 1.3 by default, the certificate not verified)")
	flag.Parse()
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	conns := make([]net.Conn, *n)
	errs := make(chan error, *n)
	sem := make(chan struct{}, 100)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := one(*addr, *useTLS)
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed == 0 {
			fmt.Fprintf(os.Stderr, "h1-idle: %v\n", err)
		}
		failed++
	}
	fmt.Printf("ready %d\n", *n-failed)
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

func one(addr string, useTLS bool) (net.Conn, error) {
	var c net.Conn
	var err error
	for try := 0; try < 5; try++ {
		if c, err = net.DialTimeout("tcp", addr, 10*time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if useTLS {
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 256), nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
