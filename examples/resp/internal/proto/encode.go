package proto

import "strconv"

// Append functions write RESP2 replies at the end of a buffer and return
// it, as strconv's Append functions do; they allocate only to grow it.

// AppendSimple appends a simple string: "+s\r\n". s must not hold "\r" or "\n".
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendError appends an error reply: "-msg\r\n". msg starts with an error
// code such as "ERR " or "WRONGTYPE "; "\r" and "\n" in it become spaces.
func AppendError(b []byte, msg string) []byte {
	b = append(b, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// AppendInt appends an integer reply: ":n\r\n".
func AppendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends a bulk string: "$len\r\nv\r\n".
func AppendBulk(b, v []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// AppendBulkString is AppendBulk for a string.
func AppendBulkString(b []byte, v string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// AppendNull appends the null bulk string: "$-1\r\n".
func AppendNull(b []byte) []byte { return append(b, "$-1\r\n"...) }

// AppendArray appends an array header for n elements: "*n\r\n"; the
// elements follow. n == -1 is the null array.
func AppendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}
