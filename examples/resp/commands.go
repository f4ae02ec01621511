package main

import (
	"strings"
	"time"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
)

// Commands, looked up by their lower-cased name.
const (
	cmdUnknown = iota
	cmdPing
	cmdEcho
	cmdSet
	cmdGet
	cmdDel
	cmdExists
	cmdIncr
	cmdMget
	cmdMset
	cmdConfig
	cmdCommand
	cmdSubscribe
	cmdUnsubscribe
	cmdPublish
	cmdQuit
	cmdSelect
	cmdDbsize
	cmdFlush
	cmdClient
	cmdCrossProtocol // POST and Host: (crossproto.go's crossProtocol)
)

// lookup returns the command named name (any case) without allocating.
func lookup(name []byte) int {
	if len(name) == 3 { // GET and SET, most requests, without the switch
		// |0x20 lower-cases a letter; only 'G' and 'g' give 'g', and so on.
		switch string([]byte{name[0] | 0x20, name[1] | 0x20, name[2] | 0x20}) {
		case "get":
			return cmdGet
		case "set":
			return cmdSet
		}
	}
	var lc [16]byte
	if len(name) > len(lc) {
		return cmdUnknown
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lc[i] = c
	}
	switch string(lc[:len(name)]) {
	case "get":
		return cmdGet
	case "set":
		return cmdSet
	case "ping":
		return cmdPing
	case "echo":
		return cmdEcho
	case "del":
		return cmdDel
	case "exists":
		return cmdExists
	case "incr":
		return cmdIncr
	case "mget":
		return cmdMget
	case "mset":
		return cmdMset
	case "config":
		return cmdConfig
	case "command":
		return cmdCommand
	case "subscribe":
		return cmdSubscribe
	case "unsubscribe":
		return cmdUnsubscribe
	case "publish":
		return cmdPublish
	case "quit":
		return cmdQuit
	case "select":
		return cmdSelect
	case "dbsize":
		return cmdDbsize
	case "flushall", "flushdb":
		return cmdFlush
	case "client":
		return cmdClient
	case "post", "host:":
		return cmdCrossProtocol
	}
	return cmdUnknown
}

func nowNano() int64 { return time.Now().UnixNano() }

// exec runs one request and appends its reply to out.
func (s *server) exec(cl *client, args [][]byte, out []byte) []byte {
	cmd := lookup(args[0])
	if len(cl.chans) > 0 {
		switch cmd {
		case cmdSubscribe, cmdUnsubscribe, cmdPing, cmdQuit, cmdUnknown, cmdCrossProtocol:
		default:
			return proto.AppendError(out, "ERR Can't execute '"+strings.ToLower(string(args[0]))+
				"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		}
	}
	switch cmd {
	case cmdGet:
		if len(args) != 2 {
			if s.crossProtocol(cl, args) {
				return out
			}
			return arity(out, args)
		}
		sh := s.st.lock(args[1])
		e := sh.get(args[1], nowNano)
		if e == nil {
			s.st.unlock(sh)
			return proto.AppendNull(out)
		}
		if big := s.bigValue(cl, e); big != nil {
			s.st.unlock(sh)
			return s.writeBig(cl, out, big)
		}
		out = proto.AppendBulk(out, e.val)
		s.st.unlock(sh)
		return out
	case cmdSet:
		return s.set(cl, args, out)
	case cmdPing:
		return ping(cl, args, out)
	case cmdEcho:
		if len(args) != 2 {
			return arity(out, args)
		}
		return proto.AppendBulk(out, args[1])
	case cmdDel, cmdExists:
		if len(args) < 2 {
			return arity(out, args)
		}
		n := 0
		for _, k := range args[1:] {
			sh := s.st.lock(k)
			if cmd == cmdDel && sh.del(k, nowNano) || cmd == cmdExists && sh.get(k, nowNano) != nil {
				n++
			}
			s.st.unlock(sh)
		}
		return proto.AppendInt(out, int64(n))
	case cmdIncr:
		if len(args) != 2 {
			return arity(out, args)
		}
		return s.incr(args[1], out)
	case cmdMget:
		if len(args) < 2 {
			return arity(out, args)
		}
		out = proto.AppendArray(out, len(args)-1)
		for i, k := range args[1:] {
			// A reply of many big values is written as it grows, and
			// made only as fast as the client takes it: past paceHigh
			// the rest waits, its values held as they are now.
			if len(out) >= flushAt {
				if out = s.flush(cl, out); cl.closing {
					return out
				}
			}
			if s.over(cl, out) {
				s.lendRest(cl, args[1+i:])
				return out
			}
			sh := s.st.lock(k)
			e := sh.get(k, nowNano)
			if e == nil {
				out = proto.AppendNull(out)
			} else if big := s.bigValue(cl, e); big != nil {
				s.st.unlock(sh)
				if out = s.writeBig(cl, out, big); cl.closing {
					return out
				}
				continue
			} else {
				out = proto.AppendBulk(out, e.val)
			}
			s.st.unlock(sh)
		}
		return out
	case cmdMset:
		if len(args) < 3 || len(args)%2 == 0 {
			return arity(out, args)
		}
		for i := 1; i < len(args); i += 2 {
			sh := s.st.lock(args[i])
			sh.set(args[i], args[i+1], 0)
			s.st.unlock(sh)
		}
		return proto.AppendSimple(out, "OK")
	case cmdConfig:
		return s.config(args, out)
	case cmdCommand:
		// redis-cli asks COMMAND DOCS for its hints; there are none.
		return proto.AppendArray(out, 0)
	case cmdSubscribe:
		if len(args) < 2 {
			return arity(out, args)
		}
		if len(cl.chans) == 0 {
			s.startQbase(cl)
		}
		for _, ch := range args[1:] {
			n := s.ps.subscribe(cl, ch)
			out = subReply(out, "subscribe", ch, n)
		}
		return out
	case cmdUnsubscribe:
		return s.ps.unsubscribeAll(cl, args[1:], out)
	case cmdPublish:
		if len(args) != 3 {
			return arity(out, args)
		}
		return proto.AppendInt(out, int64(s.publish(cl, args[1], args[2])))
	case cmdQuit:
		cl.closing = true
		return proto.AppendSimple(out, "OK")
	case cmdSelect:
		if len(args) != 2 {
			return arity(out, args)
		}
		if db, ok := parseInt(args[1]); !ok {
			return proto.AppendError(out, "ERR value is not an integer or out of range")
		} else if db != 0 {
			return proto.AppendError(out, "ERR DB index is out of range")
		}
		return proto.AppendSimple(out, "OK")
	case cmdDbsize:
		return proto.AppendInt(out, int64(s.st.size()))
	case cmdFlush:
		s.st.flush()
		return proto.AppendSimple(out, "OK")
	case cmdCrossProtocol:
		s.crossProtocol(cl, args)
		return out
	case cmdClient:
		// Client libraries name themselves (CLIENT SETNAME, SETINFO).
		if len(args) >= 2 && (strings.EqualFold(string(args[1]), "setname") || strings.EqualFold(string(args[1]), "setinfo")) {
			return proto.AppendSimple(out, "OK")
		}
		return proto.AppendError(out, "ERR unknown subcommand or wrong number of arguments for 'client' command")
	}
	if s.crossProtocol(cl, args) {
		return out
	}
	return unknown(out, args)
}

func arity(out []byte, args [][]byte) []byte {
	return proto.AppendError(out, "ERR wrong number of arguments for '"+strings.ToLower(string(args[0]))+"' command")
}

func unknown(out []byte, args [][]byte) []byte {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(args[0])
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 256 {
			break
		}
		b.WriteString("'")
		b.Write(a)
		b.WriteString("' ")
	}
	return proto.AppendError(out, b.String())
}

func ping(cl *client, args [][]byte, out []byte) []byte {
	if len(args) > 2 {
		return arity(out, args)
	}
	if len(cl.chans) > 0 { // subscribed mode: a pong message
		out = proto.AppendArray(out, 2)
		out = proto.AppendBulkString(out, "pong")
		if len(args) == 2 {
			return proto.AppendBulk(out, args[1])
		}
		return proto.AppendBulkString(out, "")
	}
	if len(args) == 2 {
		return proto.AppendBulk(out, args[1])
	}
	return append(out, "+PONG\r\n"...)
}
