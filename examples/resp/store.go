package main

import (
	"hash/maphash"
	"sync"
)

// store is the key space: string keys to byte-string values with an
// optional expiry.
//
// Ownership, and why there is no global lock: with one loop (-loops 1, the
// benchmarked setup) the store has one shard that only that loop touches,
// with no lock at all (with Go's net backend, where each connection has a
// goroutine, it is locked as for several loops). With N loops it has 64 shards by key hash, each
// with its own mutex, so two loops contend only when they touch the same
// shard at the same moment. Handing each shard to one loop and routing a
// command to its owner instead would cost a cross-loop wake-up per remote
// key and would have to hold a connection's later pipelined replies until
// the remote answer came back (replies keep request order); an uncontended
// mutex costs a few nanoseconds.
type store struct {
	shards []shard
	locked bool
	seed   maphash.Seed
}

// shard is one part of the key space. ttl holds the entries that expire,
// so the expiry sweep samples only those.
type shard struct {
	mu  sync.Mutex
	m   map[string]*entry
	ttl map[string]*entry
}

// entry is a value; expire is the Unix time in nanoseconds at which it
// expires, 0 for never. lent says that a paced MGET reply holds val
// (pace.go's mgetRest), so val is never written in place again: a new
// value gets new memory.
type entry struct {
	val    []byte
	expire int64
	lent   bool
}

// newStore makes the key space; shared: callbacks run in parallel (see
// newServer), so it is sharded and locked.
func newStore(shared bool) *store {
	s := &store{seed: maphash.MakeSeed()}
	n := 1
	if shared {
		n, s.locked = 64, true
	}
	s.shards = make([]shard, n)
	for i := range s.shards {
		s.shards[i].m = map[string]*entry{}
		s.shards[i].ttl = map[string]*entry{}
	}
	return s
}

// lock returns the shard of key, locked when loops share the store; the
// caller calls s.unlock(sh) when done.
func (s *store) lock(key []byte) *shard {
	if !s.locked {
		return &s.shards[0]
	}
	sh := &s.shards[maphash.Bytes(s.seed, key)%uint64(len(s.shards))]
	sh.mu.Lock()
	return sh
}

func (s *store) unlock(sh *shard) {
	if s.locked {
		sh.mu.Unlock()
	}
}

// get returns the live entry of key (nil if none), deleting it if it has
// expired. now is called only for an entry that expires.
func (sh *shard) get(key []byte, now func() int64) *entry {
	e := sh.m[string(key)]
	if e == nil || e.expire == 0 || e.expire > now() {
		return e
	}
	delete(sh.m, string(key))
	delete(sh.ttl, string(key))
	return nil
}

// set stores val (copied) under key with expire, reusing the entry's
// memory when the key exists and its buffer fits.
func (sh *shard) set(key, val []byte, expire int64) {
	e := sh.m[string(key)]
	if e == nil {
		e = &entry{}
		sh.m[string(key)] = e
	}
	if !e.lent && cap(e.val) >= len(val) && cap(e.val) <= 2*len(val)+64 {
		e.val = append(e.val[:0], val...)
	} else {
		e.val, e.lent = append([]byte(nil), val...), false
	}
	sh.setExpire(key, e, expire)
}

func (sh *shard) setExpire(key []byte, e *entry, expire int64) {
	if e.expire != 0 && expire == 0 {
		delete(sh.ttl, string(key))
	} else if e.expire == 0 && expire != 0 {
		sh.ttl[string(key)] = e
	}
	e.expire = expire
}

// del removes key and reports whether it was live.
func (sh *shard) del(key []byte, now func() int64) bool {
	e := sh.get(key, now)
	if e == nil {
		return false
	}
	delete(sh.m, string(key))
	if e.expire != 0 {
		delete(sh.ttl, string(key))
	}
	return true
}

// expireSome deletes expired keys among at most n of those with a TTL (a
// sample, as Redis's active expiry does) and returns how many it deleted.
func (sh *shard) expireSome(n int, now int64) int {
	deleted := 0
	for k, e := range sh.ttl {
		if n--; n < 0 {
			break
		}
		if e.expire <= now {
			delete(sh.ttl, k)
			delete(sh.m, k)
			deleted++
		}
	}
	return deleted
}

// sweep runs the active expiry over every shard: keys that expire and
// are never read again do not stay in memory.
func (s *store) sweep(now int64) {
	for i := range s.shards {
		sh := &s.shards[i]
		if s.locked {
			sh.mu.Lock()
		}
		// A quarter of a sample expired: sample again, at most 16 times
		// per sweep so that one sweep stays short.
		for r := 0; r < 16 && sh.expireSome(20, now) > 5; r++ {
		}
		if s.locked {
			sh.mu.Unlock()
		}
	}
}

// ttlKeys returns the number of keys with a TTL.
func (s *store) ttlKeys() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		if s.locked {
			sh.mu.Lock()
		}
		n += len(sh.ttl)
		if s.locked {
			sh.mu.Unlock()
		}
	}
	return n
}

// size returns the number of keys (expired ones not yet swept included).
func (s *store) size() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		if s.locked {
			sh.mu.Lock()
		}
		n += len(sh.m)
		if s.locked {
			sh.mu.Unlock()
		}
	}
	return n
}

// flush deletes every key.
func (s *store) flush() {
	for i := range s.shards {
		sh := &s.shards[i]
		if s.locked {
			sh.mu.Lock()
		}
		clear(sh.m)
		clear(sh.ttl)
		if s.locked {
			sh.mu.Unlock()
		}
	}
}
