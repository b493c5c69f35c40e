package handler

import (
	"strconv"
	"testing"
)

func TestParseCursor(t *testing.T) {
	for _, tc := range []struct {
		header, query string
		want          int64
		ok            bool
	}{
		{"", "", 0, true},
		{"", "12", 12, true},
		{"7", "12", 7, true}, // EventSource's reconnect header is newer than the URL it reuses
		{" 7 ", "", 7, true},
		{"", "-1", 0, false},
		{"abc", "", 0, false},
		{"", "1.5", 0, false},
		{"", "+5", 0, false},
		{"", " 5", 0, false}, // ?after=+5 decoded
		{"+5", "", 0, false},
		{"", "99999999999999999999", 0, false},
	} {
		got, ok := ParseCursor(tc.header, tc.query)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseCursor(%q, %q) = %d, %v; want %d, %v", tc.header, tc.query, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add("12", "")
	f.Add("", "-3")
	f.Add("0x10", "9")
	f.Fuzz(func(t *testing.T, header, query string) {
		n, ok := ParseCursor(header, query)
		if !ok {
			return
		}
		if n < 0 || n > maxCursor {
			t.Fatalf("accepted out-of-range cursor %d", n)
		}
		if header == "" && query == "" && n != 0 {
			t.Fatalf("empty cursor parsed as %d", n)
		}
		_ = strconv.FormatInt(n, 10)
	})
}
