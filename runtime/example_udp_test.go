package uringrt_test

import (
	"fmt"
	"log"
	"net"

	"github.com/uringrt/uringrt/runtime"
)

// A UDP echo on io_uring: ListenPacket returns a *PacketConn, which is a
// net.PacketConn (and has *net.UDPConn's ReadMsgUDP, WriteMsgUDP,
// SyscallConn, ...), so code written for Go's net runs on it unchanged.
func ExampleListenPacket() {
	rt, err := uringrt.New(uringrt.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	pc, err := rt.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { // the server: echo every datagram to its sender
		buf := make([]byte, 64<<10)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return // net.ErrClosed once the runtime closes pc
			}
			pc.WriteTo(buf[:n], from)
		}
	}()

	c, err := rt.DialUDP("udp", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello over io_uring"))
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	fmt.Println(string(buf[:n]))
	// Output: hello over io_uring
}
