package uringrt

import (
	"math/bits"
	"sync"
)

// (bits.Len is not constant: the array length above is checked here.)
var _ = [1]struct{}{}[len(keptPool{}.classes)-(bits.Len(keptPoolMax)-keptPoolShift)]

// The kept-input buffer of framing, for frames larger than a recv.
//
// A parser that waits for a large frame (Peek(n) past what is buffered)
// keeps the partial frame, and every recv after it adds to it. Three
// things keep that from costing a copy per recv per byte:
//
//   - The buffer grows geometrically (powers of two) and, once a frame
//     was consumed, goes back to the runtime's pool (keptPool) for the
//     next large frame of any connection, instead of being dropped for
//     the GC and grown again by append for the next frame.
//   - A Peek (or Next) past what is buffered tells the runtime how many
//     bytes the handler waits for (want, at most MaxWriteBuffer): the
//     buffer is grown to hold them once, the partial frame copied into it
//     once, and the recvs that follow read straight into its free space
//     (a single-shot recv into it, as a goroutine-per-connection server
//     reads into its frame buffer), so the kernel's copy is the only one.
//     OnData still runs after each of those recvs, with the kept bytes.
//     The room is made when the handler asks, before the bytes come, so
//     a connection may hold up to the frame size it waits for (at most
//     MaxWriteBuffer, the same bound as before, when a peer had to send
//     the bytes first). Growing it with the bytes received instead (to
//     four times them at most) cost a third more CPU per 1 MiB frame
//     (BENCHMARKS.md).
//   - When OnData consumed none of the kept bytes they stay where they
//     are (no move).
//
// A connection whose handler runs on a worker (MayBlocker) grows and
// pools its buffer the same way but reads through the loop's buffers.

// keptPoolMin and keptPoolMax bound the buffer sizes the pool keeps.
const (
	keptPoolMin   = 16 << 10
	keptPoolMax   = 64 << 20
	keptPoolShift = 14 // log2(keptPoolMin)
)

// directMin is the fewest missing bytes of a frame for which the recv
// reads straight into the kept buffer (below it a copy costs less than
// leaving the multishot recv).
const directMin = 8 << 10

// keptPool is a runtime's pool of kept-input buffers, by power-of-two
// size class.
type keptPool struct {
	classes [13]sync.Pool // keptPoolMin << 12 == keptPoolMax
}

// keptClass returns the class of a buffer of at least n bytes, and its size.
func keptClass(n int) (int, int) {
	if n <= keptPoolMin {
		return 0, keptPoolMin
	}
	i := bits.Len(uint(n-1)) - keptPoolShift
	return i, keptPoolMin << i
}

// get returns an empty buffer of capacity at least n.
func (p *keptPool) get(n int) []byte {
	i, size := keptClass(n)
	if p == nil || i >= len(p.classes) {
		return make([]byte, 0, size)
	}
	if b, ok := p.classes[i].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// put gives b back (its bytes are no longer used).
func (p *keptPool) put(b []byte) {
	if p == nil || cap(b) < keptPoolMin || cap(b)&(cap(b)-1) != 0 {
		return
	}
	i, _ := keptClass(cap(b))
	if i >= len(p.classes) {
		return
	}
	b = b[:0]
	p.classes[i].Put(&b)
}

// need makes room in kept for n more bytes, growing it geometrically
// (the kept bytes copied once into a buffer from the pool).
func (f *frameState) need(n int) {
	if len(f.kept)+n <= cap(f.kept) {
		return
	}
	b := f.pool.get(max(len(f.kept)+n, 2*cap(f.kept)))
	b = append(b, f.kept...)
	f.pool.put(f.kept)
	f.kept = b
}

// release empties kept, giving a large buffer back to the pool.
func (f *frameState) release() {
	if cap(f.kept) > keptMaxIdle {
		f.pool.put(f.kept)
		f.kept = nil
		return
	}
	f.kept = f.kept[:0]
}

// inKept reports whether data lies right after kept's bytes, in its free
// space: a recv read it there (a direct recv).
func (f *frameState) inKept(data []byte) bool {
	k := f.kept
	return len(data) > 0 && len(data) <= cap(k)-len(k) && &k[:len(k)+1][len(k)] == &data[0]
}

// directRoom returns the free space of kept a recv should read into: up
// to the bytes the handler waits for, when at least directMin are
// missing; nil otherwise (loop only, c not a MayBlocker).
func (c *CallbackConn) directRoom() []byte {
	f := &c.frame
	if c.blocking || f.want-len(f.kept) < directMin || f.fresh > 0 || c.tlsSt() != nil {
		return nil
	}
	return f.kept[len(f.kept):f.want]
}
