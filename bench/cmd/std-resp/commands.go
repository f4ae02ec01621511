package main

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// The commands, on the map under the server's RWMutex.

// live returns the entry of key unless it expired (s.mu held).
func (s *server) live(key []byte) *entry {
	e := s.data[string(key)]
	if e != nil && e.expire != 0 && e.expire <= now() {
		return nil
	}
	return e
}

// setLocked stores a copy of val (s.mu held for writing).
func (s *server) setLocked(key, val []byte, expire int64) {
	e := s.data[string(key)]
	if e == nil {
		e = &entry{}
		s.data[string(key)] = e
	}
	e.val = append(e.val[:0], val...)
	e.expire = expire
}

// exec runs one request and writes its reply; it reports QUIT.
func (s *server) exec(c *conn, args [][]byte) (quit bool) {
	name := strings.ToLower(string(args[0]))
	if len(c.subs) > 0 {
		switch name {
		case "subscribe", "unsubscribe", "ping", "quit":
		default:
			c.err("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
			return false
		}
	}
	arity := func(ok bool) bool {
		if !ok {
			c.err("ERR wrong number of arguments for '" + name + "' command")
		}
		return ok
	}
	switch name {
	case "get":
		if !arity(len(args) == 2) {
			return
		}
		s.mu.RLock()
		if e := s.live(args[1]); e != nil {
			c.bulk(e.val)
		} else {
			c.null()
		}
		s.mu.RUnlock()
	case "set":
		s.set(c, args)
	case "ping":
		if !arity(len(args) <= 2) {
			return
		}
		switch {
		case len(c.subs) > 0:
			c.array(2)
			c.bulk([]byte("pong"))
			if len(args) == 2 {
				c.bulk(args[1])
			} else {
				c.bulk(nil)
			}
		case len(args) == 2:
			c.bulk(args[1])
		default:
			c.simple("PONG")
		}
	case "echo":
		if arity(len(args) == 2) {
			c.bulk(args[1])
		}
	case "del", "exists":
		if !arity(len(args) >= 2) {
			return
		}
		n := 0
		s.mu.Lock()
		for _, k := range args[1:] {
			if s.live(k) != nil {
				n++
				if name == "del" {
					delete(s.data, string(k))
				}
			}
		}
		s.mu.Unlock()
		c.int(int64(n))
	case "incr":
		if !arity(len(args) == 2) {
			return
		}
		s.mu.Lock()
		e := s.live(args[1])
		var n int64
		var err error
		if e != nil {
			n, err = strconv.ParseInt(string(e.val), 10, 64)
		}
		switch {
		case err != nil:
			c.err("ERR value is not an integer or out of range")
		case n == 1<<63-1:
			c.err("ERR increment or decrement would overflow")
		case e == nil:
			s.setLocked(args[1], []byte("1"), 0)
			c.int(1)
		default:
			n++
			e.val = strconv.AppendInt(e.val[:0], n, 10)
			c.int(n)
		}
		s.mu.Unlock()
	case "mget":
		if !arity(len(args) >= 2) {
			return
		}
		c.array(len(args) - 1)
		s.mu.RLock()
		for _, k := range args[1:] {
			if e := s.live(k); e != nil {
				c.bulk(e.val)
			} else {
				c.null()
			}
		}
		s.mu.RUnlock()
	case "mset":
		if !arity(len(args) >= 3 && len(args)%2 == 1) {
			return
		}
		s.mu.Lock()
		for i := 1; i < len(args); i += 2 {
			s.setLocked(args[i], args[i+1], 0)
		}
		s.mu.Unlock()
		c.simple("OK")
	case "config":
		s.config(c, args)
	case "command":
		c.array(0)
	case "subscribe":
		if !arity(len(args) >= 2) {
			return
		}
		for _, ch := range args[1:] {
			s.subscribe(c, string(ch))
			c.subReply("subscribe", []byte(ch), len(c.subs))
		}
	case "unsubscribe":
		s.unsubscribeAll(c, args[1:])
	case "publish":
		if arity(len(args) == 3) {
			c.int(int64(s.publish(args[1], args[2])))
		}
	case "quit":
		c.simple("OK")
		return true
	case "select":
		if !arity(len(args) == 2) {
			return
		}
		if string(args[1]) != "0" {
			c.err("ERR DB index is out of range")
		} else {
			c.simple("OK")
		}
	case "dbsize":
		s.mu.RLock()
		n := len(s.data)
		s.mu.RUnlock()
		c.int(int64(n))
	case "flushall", "flushdb":
		s.mu.Lock()
		clear(s.data)
		s.mu.Unlock()
		c.simple("OK")
	case "client":
		if len(args) >= 2 && (strings.EqualFold(string(args[1]), "setname") || strings.EqualFold(string(args[1]), "setinfo")) {
			c.simple("OK")
		} else {
			c.err("ERR unknown subcommand or wrong number of arguments for 'client' command")
		}
	default:
		var b strings.Builder
		fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", args[0])
		for _, a := range args[1:] {
			if b.Len() > 256 {
				break
			}
			fmt.Fprintf(&b, "'%s' ", a)
		}
		c.err(b.String())
	}
	return false
}

func (s *server) set(c *conn, args [][]byte) {
	if len(args) < 3 {
		c.err("ERR wrong number of arguments for 'set' command")
		return
	}
	var expire int64
	nx, xx, keep := false, false, false
	for i := 3; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch {
		case opt == "NX" && !xx:
			nx = true
		case opt == "XX" && !nx:
			xx = true
		case opt == "KEEPTTL" && expire == 0:
			keep = true
		case (opt == "EX" || opt == "PX") && expire == 0 && !keep && i+1 < len(args):
			i++
			v, err := strconv.ParseInt(string(args[i]), 10, 64)
			if err != nil {
				c.err("ERR value is not an integer or out of range")
				return
			}
			unit := int64(time.Second)
			if opt == "PX" {
				unit = int64(time.Millisecond)
			}
			if v <= 0 || v > (1<<63-1)/unit {
				c.err("ERR invalid expire time in 'set' command")
				return
			}
			expire = now() + v*unit
		default:
			c.err("ERR syntax error")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live(args[1])
	if nx && e != nil || xx && e == nil {
		c.null()
		return
	}
	if keep && e != nil {
		expire = e.expire
	}
	s.setLocked(args[1], args[2], expire)
	c.simple("OK")
}

func (s *server) config(c *conn, args [][]byte) {
	if len(args) < 3 || !strings.EqualFold(string(args[1]), "get") {
		c.err("ERR unknown subcommand or wrong number of arguments for 'config' command")
		return
	}
	params := [][2]string{{"save", ""}, {"appendonly", "no"}, {"databases", "1"}, {"maxmemory", "0"},
		{"proto-max-bulk-len", strconv.Itoa(maxBulk)}}
	var found [][2]string
	for _, p := range params {
		for _, pat := range args[2:] {
			if ok, _ := path.Match(strings.ToLower(string(pat)), p[0]); ok {
				found = append(found, p)
				break
			}
		}
	}
	c.array(2 * len(found))
	for _, p := range found {
		c.bulk([]byte(p[0]))
		c.bulk([]byte(p[1]))
	}
}
