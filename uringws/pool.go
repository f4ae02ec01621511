package uringws

import "sync"

// Buffers live in a pool while a message is under way only: an idle
// connection holds none.
var bufPool sync.Pool // *[]byte

const maxPooledBuf = 1 << 20

// getBuf returns an empty buffer with room for at least n bytes.
func getBuf(n int) *[]byte {
	if v := bufPool.Get(); v != nil {
		bp := v.(*[]byte)
		if cap(*bp) >= n {
			*bp = (*bp)[:0]
			return bp
		}
		bufPool.Put(bp)
	}
	b := make([]byte, 0, max(n, 4096))
	return &b
}

// putBuf gives a buffer of getBuf back (one grown past 1 MiB goes to the
// collector).
func putBuf(bp *[]byte) {
	if bp == nil || cap(*bp) > maxPooledBuf {
		return
	}
	*bp = (*bp)[:0]
	bufPool.Put(bp)
}
