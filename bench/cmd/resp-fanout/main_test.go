package main

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// feed writes the frames of the given sequence numbers to one end of a
// pipe and runs readMessages for want messages on the other end.
func feed(t *testing.T, seqs []int, want int) error {
	t.Helper()
	cfg := config{msgs: want, size: 64, channel: "ch"}
	head := frame(cfg.channel, make([]byte, cfg.size))
	prefix := head[:len(head)-cfg.size-2]
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		defer b.Close()
		p := make([]byte, cfg.size)
		for _, s := range seqs {
			payload(p, s)
			if _, err := b.Write(frame(cfg.channel, p)); err != nil {
				return
			}
		}
	}()
	var got atomic.Int64
	return readMessages(a, prefix, cfg, &got, make(chan struct{}, 1))
}

func TestReadMessagesInOrder(t *testing.T) {
	seqs := make([]int, 1200) // past a carry into the hundreds and thousands
	for i := range seqs {
		seqs[i] = i
	}
	if err := feed(t, seqs, len(seqs)); err != nil {
		t.Fatal(err)
	}
}

func TestReadMessagesGap(t *testing.T) {
	err := feed(t, []int{0, 1, 2, 4, 5}, 5)
	if err == nil || !strings.Contains(err.Error(), "message 3 out of order") {
		t.Fatalf("a missing message: %v, want an out-of-order error", err)
	}
}

func TestReadMessagesShort(t *testing.T) {
	if err := feed(t, []int{0, 1}, 3); err == nil {
		t.Fatal("2 of 3 messages then EOF: no error")
	}
}
