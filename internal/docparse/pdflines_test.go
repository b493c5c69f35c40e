package docparse

import "testing"

// seenLine builds the line of glyphs laid out left to right on one
// baseline, 6 units each, as a producer draws a line in the order it is
// seen; a " " is a space glyph. rtlPage says the page is mostly
// right-to-left letters.
func seenLine(rtlPage bool, glyphs ...string) string {
	b := lineBuilder{rtlPage: rtlPage}
	x := 72.0
	for _, s := range glyphs {
		b.add(glyph{s: s, x: x, y: 700, w: 6, size: 12})
		x += 6
	}
	return b.String()
}

// eachRune is s's runes, one glyph each.
func eachRune(s string) []string {
	var out []string
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

func TestRightToLeftLinesComeOutInReadingOrder(t *testing.T) {
	for _, c := range []struct {
		what    string
		rtlPage bool
		glyphs  []string
		want    string
	}{
		{"a Hebrew sentence", true, eachRune(".ברעב 8 העשה דע החותפ"), "פתוחה עד השעה 8 בערב."},
		{"an English line quoting a Hebrew word", false, eachRune("Shalom is םולש in Hebrew."), "Shalom is שלום in Hebrew."},
		{"an English line with one Hebrew letter", false, eachRune("Section א applies to all tenants."), "Section א applies to all tenants."},
		{"a Hebrew line on a Hebrew page naming a product", true, eachRune("Github -ב שפח"), "חפש ב- Github"},
		{"Arabic-Indic digits", true, eachRune("١٢٣ ةفرغلا"), "الغرفة ١٢٣"},
		{"a currency sign", true, eachRune("דבלב $100 ריחמה"), "המחיר $100 בלבד"},
		{"a percent sign", true, eachRune("החנהב 50% לש החנה"), "הנחה של 50% בהנחה"},
		{"brackets", true, eachRune("(רוקמ) הרעה"), "הערה (מקור)"},
		// A ligature's text is in reading order already: meem, lam-alef, seen.
		{"a ligature", true, []string{"م", "لا", "س"}, "سلام"},
		// A mark drawn as a glyph of its own stands left of its letter.
		{"a mark", true, []string{"ן", "י", "\u05B4", "מ"}, "מ\u05B4ין"},
	} {
		if got := seenLine(c.rtlPage, c.glyphs...); got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
}

func TestLinesDrawnInReadingOrderAreLeftAlone(t *testing.T) {
	// Right-to-left text drawn glyph by glyph from the right, as it is
	// read: nothing to reverse.
	var b lineBuilder
	x := 300.0
	for _, r := range "שלום עולם" {
		x -= 6
		b.add(glyph{s: string(r), x: x, y: 700, w: 6, size: 12})
	}
	if got := b.String(); got != "שלום עולם" {
		t.Fatalf("%q", got)
	}
}

func TestOperandCounterTellsOperandsFromOperators(t *testing.T) {
	for _, tc := range []struct {
		stream string
		want   int // operands waiting at the end
	}{
		{"1 2 3", 2}, // the last number may go on
		{"1 2 3 m", 3},
		{"1 2 3 ", 3},
		{"1 2 3 m ", 0},
		{"/A /B (s) <00> [1 2] true ", 7},
		{"(a (b) \\) c) << /K 1 >> ", 3},
		{"% 1 2 3 Tj\n4 ", 1},
		{"0.5 -3 +2 .1 cm 7 ", 1},
		{"(Tj) Tj\n", 0},
		// A name defined in PostScript pushes a value each time.
		{"1 dict begin /x 0 def x x x ", 9},
		{"true false null ", 3},
	} {
		var c operandCounter
		if got := c.feed([]byte(tc.stream)); got != tc.want {
			t.Errorf("%q: %d operands waiting, want %d", tc.stream, got, tc.want)
		}
		// Fed a byte at a time, the same.
		var d operandCounter
		got := 0
		for i := range len(tc.stream) {
			got = d.feed([]byte{tc.stream[i]})
		}
		if got != tc.want {
			t.Errorf("%q byte by byte: %d, want %d", tc.stream, got, tc.want)
		}
	}
}
