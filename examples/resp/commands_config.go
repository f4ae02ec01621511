package main

import (
	"path"
	"strconv"
	"strings"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
)

// CONFIG: what redis-benchmark and redis-cli ask of it.

// configParams are what CONFIG GET answers: what redis-benchmark and
// redis-cli ask, and the limits of this server.
func (s *server) configParams() [][2]string {
	return [][2]string{
		{"save", ""},
		{"appendonly", "no"},
		{"databases", "1"},
		{"maxmemory", "0"},
		{"proto-max-bulk-len", strconv.Itoa(s.lim.maxBulk)},
		{"client-query-buffer-limit", strconv.Itoa(s.lim.maxRequest)},
		{"client-output-buffer-limit", "normal 0 0 0 replica 0 0 0 pubsub " +
			strconv.Itoa(s.lim.pubsubLimit) + " " + strconv.Itoa(s.lim.pubsubLimit) + " 0"},
	}
}

// config runs CONFIG GET pattern... (glob patterns, as Redis); CONFIG SET
// changes nothing here and says so.
func (s *server) config(args [][]byte, out []byte) []byte {
	if len(args) < 2 {
		return arity(out, args)
	}
	switch strings.ToLower(string(args[1])) {
	case "get":
		if len(args) < 3 {
			return proto.AppendError(out, "ERR wrong number of arguments for 'config|get' command")
		}
		var found [][2]string
		for _, p := range s.configParams() {
			for _, pat := range args[2:] {
				lc := strings.ToLower(string(pat))
				if !strings.ContainsAny(lc, "*?[") {
					// A name, not a pattern: Redis answers with the
					// name as asked.
					if lc == p[0] {
						found = append(found, [2]string{string(pat), p[1]})
						break
					}
					continue
				}
				if ok, _ := path.Match(lc, p[0]); ok {
					found = append(found, p)
					break
				}
			}
		}
		out = proto.AppendArray(out, 2*len(found))
		for _, p := range found {
			out = proto.AppendBulkString(out, p[0])
			out = proto.AppendBulkString(out, p[1])
		}
		return out
	case "resetstat":
		return proto.AppendSimple(out, "OK")
	}
	// CONFIG SET and the others: not supported here.
	return proto.AppendError(out, "ERR unknown subcommand '"+string(args[1])+"'. Try CONFIG HELP.")
}
