package main

import (
	"bytes"
	"testing"
)

func TestPayloadDistinct(t *testing.T) {
	for _, size := range []int{1, 7, 8, 12, 15, 16, 512, 4096} {
		a := newPattern(1, size)
		b := append([]byte(nil), a...)
		c := newPattern(2, size)
		stamp(a, 1, 10)
		stamp(b, 1, 11)
		stamp(c, 2, 10)
		if bytes.Equal(a, b) || bytes.Equal(a, c) {
			t.Errorf("size %d: messages of different seq or connection are equal", size)
		}
		d := newPattern(1, size)
		stamp(d, 1, 10)
		if !bytes.Equal(a, d) {
			t.Errorf("size %d: message is not deterministic", size)
		}
	}
}
