package docparse

import (
	"io"
	"strings"
	"unicode/utf16"

	"github.com/ledongthuc/pdf"
)

// cmap is a ToUnicode map: code spaces, single codes and code ranges.
type cmap struct {
	spaces []codeSpace
	chars  map[int]string
	ranges []codeRange
}

type codeSpace struct{ lo, hi string }

type codeRange struct {
	lo, hi, n int
	base      []rune   // destination of lo; later codes add to its last rune
	list      []string // or one destination per code
}

// maxCMapEntries bounds what a hostile ToUnicode map can make us hold.
const maxCMapEntries = 1 << 17

// readCMap parses a ToUnicode stream, or returns nil when it is not a
// usable map. A CMap is a PostScript program, but the parts that matter
// are flat lists of hex strings between begin…/end… keywords, so a small
// tokenizer reads them; the library's PostScript interpreter would need
// a dictionary for CMaps' "findresource begin" that its API cannot make.
func readCMap(v pdf.Value) *cmap {
	rc := v.Reader()
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxCMapBytes))
	if err != nil {
		return nil
	}
	m := &cmap{chars: map[int]string{}}
	var (
		operands []cmapToken
		inArray  bool
		array    []string
	)
	for _, tok := range tokenizeCMap(data) {
		switch {
		case tok.kind == '[':
			inArray, array = true, nil
		case tok.kind == ']':
			inArray = false
			operands = append(operands, cmapToken{kind: ']', list: array})
		case inArray:
			if tok.kind == '<' {
				array = append(array, tok.text)
			}
		case tok.kind == '<':
			operands = append(operands, tok)
		case tok.kind == 'k':
			switch tok.text {
			case "endcodespacerange":
				for i := 0; i+1 < len(operands); i += 2 {
					lo, hi := operands[i].text, operands[i+1].text
					if len(lo) > 0 && len(lo) == len(hi) && len(lo) <= 4 {
						m.spaces = append(m.spaces, codeSpace{lo, hi})
					}
				}
			case "endbfchar":
				for i := 0; i+1 < len(operands) && len(m.chars) < maxCMapEntries; i += 2 {
					m.chars[codeOf(operands[i].text)] = utf16String(operands[i+1].text)
				}
			case "endbfrange":
				for i := 0; i+2 < len(operands) && len(m.ranges) < maxCMapEntries; i += 3 {
					lo, hi, dst := operands[i].text, operands[i+1].text, operands[i+2]
					r := codeRange{lo: codeOf(lo), hi: codeOf(hi), n: len(lo)}
					if dst.kind == ']' {
						for _, d := range dst.list {
							r.list = append(r.list, utf16String(d))
						}
					} else {
						r.base = []rune(utf16String(dst.text))
					}
					m.ranges = append(m.ranges, r)
				}
			}
			operands = operands[:0]
		}
	}
	if len(m.chars) == 0 && len(m.ranges) == 0 {
		return nil
	}
	return m
}

// maxCMapBytes bounds a ToUnicode stream we read.
const maxCMapBytes = 8 << 20

// cmapToken is a hex string ('<', text = its bytes), a keyword ('k'), an
// array's brackets ('[', ']', list = the hex strings inside) or anything
// else ('x').
type cmapToken struct {
	kind byte
	text string
	list []string
}

func tokenizeCMap(data []byte) []cmapToken {
	var out []cmapToken
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '%':
			for i < len(data) && data[i] != '\n' && data[i] != '\r' {
				i++
			}
		case c == '<' && i+1 < len(data) && data[i+1] == '<', c == '>' && i+1 < len(data) && data[i+1] == '>':
			i += 2
		case c == '<':
			j := i + 1
			var hex []byte
			for ; j < len(data) && data[j] != '>'; j++ {
				if h, ok := hexDigit(data[j]); ok {
					hex = append(hex, h)
				}
			}
			if len(hex)%2 == 1 {
				hex = append(hex, 0)
			}
			b := make([]byte, len(hex)/2)
			for k := range b {
				b[k] = hex[2*k]<<4 | hex[2*k+1]
			}
			out = append(out, cmapToken{kind: '<', text: string(b)})
			i = j + 1
		case c == '[' || c == ']':
			out = append(out, cmapToken{kind: c})
			i++
		case c == '(':
			// A literal string (rare in ToUnicode maps): skipped, nesting kept.
			depth := 0
			for ; i < len(data); i++ {
				if data[i] == '\\' {
					i++
					continue
				}
				if data[i] == '(' {
					depth++
				} else if data[i] == ')' {
					if depth--; depth == 0 {
						i++
						break
					}
				}
			}
			out = append(out, cmapToken{kind: 'x'})
		case c <= ' ':
			i++
		default:
			j := i
			for j < len(data) && data[j] > ' ' && !strings.ContainsRune("<>[]()/%", rune(data[j])) || j == i {
				j++
			}
			word := string(data[i:j])
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				out = append(out, cmapToken{kind: 'k', text: word})
			} else {
				out = append(out, cmapToken{kind: 'x', text: word})
			}
			i = j
		}
	}
	return out
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func codeOf(s string) int {
	c := 0
	for i := 0; i < len(s) && i < 4; i++ {
		c = c<<8 | int(s[i])
	}
	return c
}

func utf16String(s string) string {
	if len(s)%2 == 1 {
		return string([]rune(s)) // not UTF-16: take it byte by byte
	}
	u := make([]uint16, len(s)/2)
	for i := range u {
		u[i] = uint16(s[2*i])<<8 | uint16(s[2*i+1])
	}
	return string(utf16.Decode(u))
}

// codeLength is the length of the code at the start of raw: the shortest
// code space it falls in, else def.
func (m *cmap) codeLength(raw string, def int) int {
	if len(m.spaces) == 0 {
		return def
	}
	best := 0
	for _, s := range m.spaces {
		n := len(s.lo)
		if n > len(raw) || (best != 0 && n >= best) {
			continue
		}
		in := true
		for i := 0; i < n; i++ {
			if raw[i] < s.lo[i] || raw[i] > s.hi[i] {
				in = false
				break
			}
		}
		if in {
			best = n
		}
	}
	if best == 0 {
		return def
	}
	return best
}

// lookup is the text of a code of n bytes, or "" when the map lacks it.
// Unless exact, a range matches a code of any length: a simple font's
// one-byte codes are often mapped with two-byte ranges.
func (m *cmap) lookup(code, n int, exact bool) string {
	if s, ok := m.chars[code]; ok {
		return s
	}
	for _, r := range m.ranges {
		if (exact && r.n != n) || code < r.lo || code > r.hi {
			continue
		}
		off := code - r.lo
		if r.list != nil {
			if off < len(r.list) {
				return r.list[off]
			}
			return ""
		}
		if len(r.base) == 0 {
			return ""
		}
		out := append([]rune(nil), r.base...)
		out[len(out)-1] += rune(off)
		return string(out)
	}
	return ""
}
