package proto

import "bytes"

// ErrUnbalancedQuotes is the error for an inline line whose quotes do not
// close, or whose closing quote is followed by more than a separator.
var ErrUnbalancedQuotes = &Error{"unbalanced quotes in request"}

// inline parses a line of words ended by "\n" (a "\r" before it is
// dropped), split as Redis splits it (sdssplitargs): words are separated
// by spaces, tabs and "\r"; a word may hold "double-quoted" parts with C
// escapes (\n, \r, \t, \b, \a, \xHH, \<any>) and 'single-quoted' parts
// where only \' is an escape. A word without quotes is a slice of b; one
// with quotes is unescaped into the parser's scratch buffer.
func (p *Parser) inline(b []byte) ([][]byte, int, error) {
	_, _, maxInline, _ := p.limits()
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > maxInline {
			return nil, 0, ErrInlineTooBig
		}
		return nil, 0, nil
	}
	if i > maxInline {
		return nil, 0, ErrInlineTooBig
	}
	line := b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args := p.args[:0]
	if cap(p.scratch) < len(line) || cap(p.scratch) > 4*maxInline {
		p.scratch = make([]byte, 0, max(len(line), 64))
	}
	scratch := p.scratch[:0] // never grows past len(line): no reallocation
	for j := 0; ; {
		for j < len(line) && isSpace(line[j]) {
			j++
		}
		if j == len(line) {
			break
		}
		k := j
		for k < len(line) && !isSep(line[k]) && line[k] != '"' && line[k] != '\'' {
			k++
		}
		if k == len(line) || isSep(line[k]) { // a plain word
			args = append(args, line[j:k:k])
			j = k
			continue
		}
		start := len(scratch)
		scratch = append(scratch, line[j:k]...)
		var err error
		scratch, j, err = unquoteWord(line, k, scratch)
		if err != nil {
			p.args = args[:0]
			return nil, 0, err
		}
		args = append(args, scratch[start:len(scratch):len(scratch)])
	}
	p.args = args
	p.scratch = scratch[:0]
	return args, i + 1, nil
}

// unquoteWord appends to dst the rest of a word of line from j, where
// quotes may open, and returns dst and the offset after the word.
func unquoteWord(line []byte, j int, dst []byte) ([]byte, int, error) {
	for j < len(line) {
		c := line[j]
		switch {
		case isSep(c):
			return dst, j, nil
		case c == '"' || c == '\'':
			var err error
			if dst, j, err = quoted(line, j, dst); err != nil {
				return dst, j, err
			}
			// A closing quote ends the word: a separator or the end
			// must follow.
			if j < len(line) && !isSep(line[j]) {
				return dst, j, ErrUnbalancedQuotes
			}
			return dst, j, nil
		default:
			dst = append(dst, c)
			j++
		}
	}
	return dst, j, nil
}

// quoted appends the unescaped text of the quoted part opening at
// line[j] and returns dst and the offset after its closing quote.
func quoted(line []byte, j int, dst []byte) ([]byte, int, error) {
	q := line[j]
	for j++; j < len(line); j++ {
		c := line[j]
		switch {
		case c == q:
			return dst, j + 1, nil
		case c == '\\' && q == '\'' && j+1 < len(line) && line[j+1] == '\'':
			dst = append(dst, '\'')
			j++
		case c == '\\' && q == '"' && j+3 < len(line) && line[j+1] == 'x' && isHex(line[j+2]) && isHex(line[j+3]):
			dst = append(dst, unhex(line[j+2])<<4|unhex(line[j+3]))
			j += 3
		case c == '\\' && q == '"' && j+1 < len(line):
			j++
			switch c = line[j]; c {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'a':
				c = '\a'
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst, j, ErrUnbalancedQuotes
}

// isSep reports whether c ends an unquoted word (Redis: space, tab, CR,
// LF, NUL).
func isSep(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0 }

// isSpace reports whether c is skipped between words: C's isspace, and
// NUL (where Redis's C string, and so the line, ends).
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' || c == 0 }

func isHex(c byte) bool { return c-'0' <= 9 || (c|0x20)-'a' <= 5 }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return (c | 0x20) - 'a' + 10
}
