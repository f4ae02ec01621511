package sched

// ring is the SharedPool's FIFO: a growable circular buffer (capacity a power
// of two). It keeps its capacity up to maxSpareCap when it empties, so a
// steady load allocates nothing. Not safe for concurrent use; the pool's
// mutex guards it.
type ring struct {
	buf  []item
	head int // index of the oldest item
	n    int // number of items
}

func (r *ring) push(it item) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = it
	r.n++
}

// pop removes and returns the oldest item; the ring must not be empty.
func (r *ring) pop() item {
	it := r.buf[r.head]
	r.buf[r.head] = item{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if r.n == 0 {
		r.head = 0
		if len(r.buf) > maxSpareCap {
			r.buf = nil
		}
	}
	return it
}

func (r *ring) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = 64
	}
	buf := make([]item, size)
	k := copy(buf, r.buf[r.head:])
	copy(buf[k:], r.buf[:r.head])
	r.buf, r.head = buf, 0
}

// each calls f on every item, oldest first.
func (r *ring) each(f func(*item)) {
	for i := 0; i < r.n; i++ {
		f(&r.buf[(r.head+i)&(len(r.buf)-1)])
	}
}
