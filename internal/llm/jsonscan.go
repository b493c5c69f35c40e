package llm

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A minimal JSON scanner for the chunk decoder: it walks a document in
// place, reads keys and strings as byte slices into the input, and turns
// into Go strings only the values the caller keeps.

// scanner walks one JSON document; d holds the reusable buffers.
type scanner struct {
	data []byte
	pos  int
	d    *chunkDecoder
}

// optString reads a string or null (""); another type is skipped as "".
func (s *scanner) optString() (string, error) {
	if s.peek() != '"' {
		return "", s.skip()
	}
	return s.str()
}

// str reads a string value.
func (s *scanner) str() (string, error) {
	raw, esc, err := s.rawString()
	if err != nil {
		return "", err
	}
	return s.d.stringOf(raw, esc), nil
}

// rawString reads a string and returns its bytes between the quotes, still
// escaped, and whether it contains escapes.
func (s *scanner) rawString() (raw []byte, escaped bool, err error) {
	if s.peek() != '"' {
		return nil, false, s.syntax("expected string")
	}
	start := s.pos + 1
	i := start
	for {
		j := bytes.IndexByte(s.data[i:], '"')
		if j < 0 {
			return nil, false, s.syntax("unterminated string")
		}
		end := i + j
		bs := bytes.IndexByte(s.data[i:end], '\\')
		if bs < 0 {
			s.pos = end + 1
			return s.data[start:end], escaped, nil
		}
		// An escape before the quote: step over it and look again.
		escaped = true
		i += bs + 2
		if i > len(s.data) {
			return nil, false, s.syntax("unterminated string")
		}
	}
}

// stringOf converts a raw string to a Go string: one allocation, plus the
// unescaping work when needed. Invalid UTF-8 becomes U+FFFD, as in
// encoding/json.
func (d *chunkDecoder) stringOf(raw []byte, escaped bool) string {
	if len(raw) == 0 {
		return ""
	}
	if !escaped && utf8.Valid(raw) {
		return string(raw)
	}
	d.scratch = unescape(d.scratch[:0], raw)
	return string(d.scratch)
}

// unescape appends the unescaped form of raw to dst.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) {
			i += 2
			switch raw[i-1] {
			case '"', '\\', '/':
				dst = append(dst, raw[i-1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, n := hex4(raw[i:])
				if n == 0 {
					dst = utf8.AppendRune(dst, utf8.RuneError)
					continue
				}
				i += n
				if utf16.IsSurrogate(r) {
					r2, n2 := rune(-1), 0
					if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2, n2 = hex4(raw[i+2:])
					}
					if dec := utf16.DecodeRune(r, r2); n2 > 0 && dec != utf8.RuneError {
						i += 2 + n2
						r = dec
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default:
				dst = append(dst, '\\', raw[i-1])
			}
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		dst = utf8.AppendRune(dst, r) // RuneError for invalid bytes
		i += size
	}
	return dst
}

func hex4(b []byte) (rune, int) {
	if len(b) < 4 {
		return 0, 0
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, 0
		}
		r = r<<4 | rune(c)
	}
	return r, 4
}

// int reads a number (or null as 0) as an int.
func (s *scanner) int() (int, error) {
	if s.peek() == 'n' {
		return 0, s.skip()
	}
	start := s.pos
	if err := s.skipNumber(); err != nil {
		return 0, err
	}
	num := s.data[start:s.pos]
	n, neg, i := 0, false, 0
	if num[0] == '-' {
		neg, i = true, 1
	}
	for ; i < len(num); i++ {
		c := num[i]
		if c < '0' || c > '9' {
			f, err := strconv.ParseFloat(string(num), 64) // 1.0, 1e3: rare
			if err != nil || math.IsInf(f, 0) {
				return 0, s.syntax("bad number")
			}
			return int(f), nil
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

func (s *scanner) skipNumber() error {
	start := s.pos
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			s.pos++
			continue
		}
		break
	}
	if s.pos == start {
		return s.syntax("expected value")
	}
	return nil
}

// skip steps over one value of any type.
func (s *scanner) skip() error {
	switch c := s.peek(); c {
	case '"':
		_, _, err := s.rawString()
		return err
	case '{', '[':
		depth := 0
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case '"':
				if _, _, err := s.rawString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return nil
				}
			}
			s.pos++
		}
		return s.syntax("unterminated value")
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.skipNumber()
	}
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(lit)) {
		return s.syntax("bad literal")
	}
	s.pos += len(lit)
	return nil
}

// objectBegin consumes '{' or null.
func (s *scanner) objectBegin() (null bool, err error) {
	switch s.peek() {
	case '{':
		s.pos++
		return false, nil
	case 'n':
		return true, s.literal("null")
	}
	return false, s.syntax("expected object")
}

// fields walks an object (or null, reported as such), calling field for
// each key with the scanner positioned at its value; field must consume
// the value. The key is valid only during the call.
func (s *scanner) fields(field func(key []byte) error) (null bool, err error) {
	if null, err = s.objectBegin(); err != nil || null {
		return null, err
	}
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil || done {
			return false, err
		}
		if err := field(key); err != nil {
			return false, err
		}
	}
}

// arrayBegin consumes '[' or null.
func (s *scanner) arrayBegin() (null bool, err error) {
	switch s.peek() {
	case '[':
		s.pos++
		return false, nil
	case 'n':
		return true, s.literal("null")
	}
	return false, s.syntax("expected array")
}

// nextKey reads the next key of an object and its colon; done at '}'.
// The key is valid until the next call.
func (s *scanner) nextKey(first bool) (key []byte, done bool, err error) {
	s.ws()
	if s.peek() == '}' {
		s.pos++
		return nil, true, nil
	}
	if !first {
		if s.peek() != ',' {
			return nil, false, s.syntax("expected , or }")
		}
		s.pos++
		s.ws()
	}
	raw, esc, err := s.rawString()
	if err != nil {
		return nil, false, err
	}
	if esc {
		s.d.keyBuf = unescape(s.d.keyBuf[:0], raw)
		raw = s.d.keyBuf
	}
	s.ws()
	if s.peek() != ':' {
		return nil, false, s.syntax("expected :")
	}
	s.pos++
	s.ws()
	return raw, false, nil
}

// nextElem positions at the next array element; done at ']'.
func (s *scanner) nextElem(first bool) (done bool, err error) {
	s.ws()
	if s.peek() == ']' {
		s.pos++
		return true, nil
	}
	if !first {
		if s.peek() != ',' {
			return false, s.syntax("expected , or ]")
		}
		s.pos++
		s.ws()
	}
	return false, nil
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) syntax(what string) error {
	return fmt.Errorf("stream chunk: %s at offset %d", what, s.pos)
}
