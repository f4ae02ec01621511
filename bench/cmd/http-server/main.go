// Command http-server is the net/http server of scripts/bench-http.sh: a
// handler answering every request with a 13-byte text body, on uringrt's
// listener or Go's net (-backend), over plain HTTP/1.1 or, with -tls, over
// crypto/tls with HTTP/2 offered by ALPN (a self-signed ECDSA P-256
// certificate made at start). It exits 0 on SIGINT or SIGTERM.
//
//	http-server -addr 127.0.0.1:17610 -backend uring [-tls]
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"time"

	"github.com/uringrt/uringrt/bench/internal/benchsrv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:17610", "listen `address`")
	backend := flag.String("backend", "uring", "listener: uring (uringrt, -loops loops), uring-locked (the same with Config.LockedLoops), uring-netpoll (readers waiting in Go's netpoller), uring-loop (readers waiting on the loop's POLLIN) or std (Go's net)")
	loops := flag.Int("loops", 1, "uringrt event loops (0 = GOMAXPROCS)")
	useTLS := flag.Bool("tls", false, "serve TLS with HTTP/2 (ALPN h2, http/1.1)")
	flag.Parse()
	ln, closeLn, err := benchsrv.Listen(*backend, *addr, *loops)
	if err != nil {
		fmt.Fprintf(os.Stderr, "http-server: %v\n", err)
		os.Exit(2)
	}
	body := []byte("Hello, World!")
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	ctx, stop := benchsrv.SignalContext()
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if *useTLS {
		cert, err := selfSigned()
		if err != nil {
			fmt.Fprintf(os.Stderr, "http-server: %v\n", err)
			os.Exit(1)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	closeLn()
	if err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "http-server: %v\n", err)
		os.Exit(1)
	}
}

// selfSigned makes a certificate for 127.0.0.1 valid for a day.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
