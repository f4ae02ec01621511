// Command std-udp-echo is the baseline UDP echo server of the benchmark:
// Go's net package, one UDP socket read by -readers goroutines (default 1,
// as echo-server -network udp), a 64 KiB buffer, ReadFromUDPAddrPort then
// WriteToUDPAddrPort. It exits 0 on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7777", "listen `address`")
	readers := flag.Int("readers", 1, "goroutines reading the socket")
	flag.Parse()
	pc, err := net.ListenPacket("udp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "std-udp-echo: %v\n", err)
		os.Exit(1)
	}
	uc := pc.(*net.UDPConn)
	// The same socket buffers as echo-server -network udp.
	uc.SetReadBuffer(4 << 20)
	uc.SetWriteBuffer(4 << 20)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		uc.Close()
	}()
	var wg sync.WaitGroup
	for range max(*readers, 1) {
		wg.Go(func() { echo(uc) })
	}
	wg.Wait()
}

// echo sends every datagram back to its sender until uc is closed.
func echo(uc *net.UDPConn) {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if _, err := uc.WriteToUDPAddrPort(buf[:n], from); errors.Is(err, net.ErrClosed) {
			return
		}
	}
}
