package main

import (
	"bufio"
	"testing"
)

// TestRedisCompat runs testdata/compat.txt, replies recorded from
// redis-server 7.0: integers as Redis parses them ("-0" is not one), SET's
// GET option, CONFIG's and SELECT's errors, inline quoting, an unknown
// command in subscribed mode.
func TestRedisCompat(t *testing.T) {
	for _, loops := range []int{1, 2} {
		_, addr := startServer(t, loops, testLimits)
		c := dial(t, addr)
		r := bufio.NewReader(c)
		for _, tt := range loadCommands(t, "testdata/compat.txt") {
			if _, err := c.Write([]byte(tt.req)); err != nil {
				t.Fatal(err)
			}
			if got := readReplies(t, r, 1); got != tt.reply {
				t.Errorf("loops %d: %q: %q, want %q", loops, tt.req, got, tt.reply)
			}
		}
	}
}
