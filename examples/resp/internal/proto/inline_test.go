package proto

import (
	"errors"
	"reflect"
	"testing"
)

// TestInlineQuotes: an inline line is split as Redis splits it
// (sdssplitargs): double quotes with C escapes, single quotes with \',
// "\r" a separator; unbalanced quotes and a closing quote glued to the
// next word are protocol errors.
func TestInlineQuotes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  error
	}{
		{"ECHO \"hello world\"\r\n", []string{"ECHO", "hello world"}, nil},
		{"ECHO 'hello world'\r\n", []string{"ECHO", "hello world"}, nil},
		{"SET k \"\"\r\n", []string{"SET", "k", ""}, nil},
		{"ECHO \"\\x41\\n\\r\\t\\b\\a\\\\\\\"\\q\"\n", []string{"ECHO", "A\n\r\t\b\a\\\"q"}, nil},
		{"ECHO \"\\x4g\"\n", []string{"ECHO", "x4g"}, nil},
		{"ECHO 'it\\'s' 'a\\b'\n", []string{"ECHO", "it's", "a\\b"}, nil},
		{"ECHO a\"b c\"d\n", nil, ErrUnbalancedQuotes},
		{"ECHO a\"b c\"\n", []string{"ECHO", "ab c"}, nil},
		{"PING\rPING\r\n", []string{"PING", "PING"}, nil},
		{"  SET\t a \v b\r\n", []string{"SET", "a", "b"}, nil},
		{"ECHO a\vb\n", []string{"ECHO", "a\vb"}, nil},
		{"ECHO \"unbalanced\r\n", nil, ErrUnbalancedQuotes},
		{"ECHO 'unbalanced\r\n", nil, ErrUnbalancedQuotes},
		{"ECHO \"a\"b\r\n", nil, ErrUnbalancedQuotes},
		{"ECHO 'a'b\r\n", nil, ErrUnbalancedQuotes},
		{"ECHO \"a\\\"\r\n", nil, ErrUnbalancedQuotes},
		{"ECHO plain\r\n", []string{"ECHO", "plain"}, nil},
		{"ECHO\x00\x00a\n", []string{"ECHO", "a"}, nil},
	} {
		var p Parser
		args, n, err := p.Next([]byte(tc.in))
		if !errors.Is(err, tc.err) {
			t.Errorf("%q: err %v, want %v", tc.in, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		got := make([]string, len(args))
		for i, a := range args {
			got[i] = string(a)
		}
		if n != len(tc.in) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q (n %d), want %q (n %d)", tc.in, got, n, tc.want, len(tc.in))
		}
	}
}
