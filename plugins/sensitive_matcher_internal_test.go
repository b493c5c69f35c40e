package plugins

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
)

var filterWords = []string{"password", "pass code", "机密", "机密文件", "API密钥", "σίσυφος", "ab", "bcd", "kelvin"}

const filterText = "My PASSWORD is passwor-d; Pass Code 12. 机密文件在这里，机密！ Use the api密钥 now. ΣΊΣΥΦΟΣ rolls. " +
	"passpassword abcd xabx bcbcd. Full-width ＡＢ is another letter; the \u212AELVIN sign folds to k."

func foldRunes(s string) []rune {
	rs := []rune(s)
	for i, r := range rs {
		rs[i] = fold(r)
	}
	return rs
}

func hasPrefixRunes(s, prefix []rune) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i := range prefix {
		if s[i] != prefix[i] {
			return false
		}
	}
	return true
}

// refMask masks every occurrence, overlapping ones included, of every word
// in text, by brute force.
func refMask(words []string, text string) string {
	rs, folded := []rune(text), foldRunes(text)
	masked := make([]bool, len(rs))
	for _, w := range words {
		fw := foldRunes(w)
		for i := range folded {
			if hasPrefixRunes(folded[i:], fw) {
				for k := range fw {
					masked[i+k] = true
				}
			}
		}
	}
	for i := range rs {
		if masked[i] {
			rs[i] = '*'
		}
	}
	return string(rs)
}

// refHold is the minimal number of runes at the end of text that must be
// held back: the longest suffix that is a proper prefix of a word.
func refHold(words []string, text string) int {
	folded := foldRunes(text)
	best := 0
	for _, w := range words {
		fw := foldRunes(w)
		for n := 1; n < len(fw) && n <= len(folded); n++ {
			if hasPrefixRunes(fw, folded[len(folded)-n:]) && n > best {
				best = n
			}
		}
	}
	return best
}

// Fed one rune at a time, the scanner releases at every step exactly the
// text that can no longer be part of a word — holding back the shortest
// possible suffix — already masked as the whole text would be.
func TestScannerHoldsBackOnlyTheShortestPossibleSuffix(t *testing.T) {
	t.Parallel()
	s := scanner{m: newMatcher(filterWords, nil, nil, 64)}
	want := []rune(refMask(filterWords, filterText))
	rs := []rune(filterText)
	var got strings.Builder
	for k := 1; k <= len(rs); k++ {
		out, blocked := s.write(string(rs[k-1]))
		if blocked {
			t.Fatal("blocked without blocking words")
		}
		got.WriteString(out)
		released := k - refHold(filterWords, string(rs[:k]))
		if got.String() != string(want[:released]) {
			t.Fatalf("after %q released %q, want %q", string(rs[:k]), got.String(), string(want[:released]))
		}
	}
	out, _ := s.flush()
	if got.WriteString(out); got.String() != string(want) {
		t.Fatalf("flushed to %q, want %q", got.String(), string(want))
	}
}

// feed runs text through a fresh scanner cut at the given byte offsets.
func feed(m *matcher, text string, cuts ...int) (string, bool) {
	s := scanner{m: m}
	var b strings.Builder
	from := 0
	for _, c := range append(cuts, len(text)) {
		out, blocked := s.write(text[from:c])
		b.WriteString(out)
		if blocked {
			return b.String(), true
		}
		from = c
	}
	out, blocked := s.flush()
	b.WriteString(out)
	return b.String(), blocked
}

// runeOffsets lists the byte offsets of the rune boundaries inside text.
func runeOffsets(text string) []int {
	var out []int
	for i := range text {
		if i > 0 {
			out = append(out, i)
		}
	}
	return out
}

// Every word, split across two deltas at every position, is masked as in
// the whole text; and so with every rune its own delta.
func TestWordsSplitAtEveryPositionAreMasked(t *testing.T) {
	t.Parallel()
	m := newMatcher(filterWords, nil, nil, 64)
	for _, w := range filterWords {
		text := "before " + strings.ToUpper(w) + " after " + w
		want := refMask(filterWords, text)
		for _, cut := range runeOffsets(text) {
			if got, _ := feed(m, text, cut); got != want {
				t.Fatalf("%q cut at %d: %q, want %q", text, cut, got, want)
			}
		}
		if got, _ := feed(m, text, runeOffsets(text)...); got != want {
			t.Fatalf("%q rune by rune: %q, want %q", text, got, want)
		}
	}
	want := refMask(filterWords, filterText)
	rng := rand.New(rand.NewPCG(1, 2))
	offsets := runeOffsets(filterText)
	for range 200 {
		var cuts []int
		for _, o := range offsets {
			if rng.IntN(4) == 0 {
				cuts = append(cuts, o)
			}
		}
		if got, _ := feed(m, filterText, cuts...); got != want {
			t.Fatalf("cuts %v: %q, want %q", cuts, got, want)
		}
	}
}

// A stop word split anywhere ends the text right before it, with earlier
// masks applied.
func TestStopWordSplitAtEveryPositionEndsTheTextBeforeIt(t *testing.T) {
	t.Parallel()
	m := newMatcher([]string{"secret"}, []string{"炸弹", "launch code"}, nil, 64)
	for _, text := range []string{
		"The secret is the LAUNCH CODE 0000, keep it.",
		"如何制作炸弹？secret",
		"launch cod, launch code",
	} {
		i := strings.Index(strings.ToLower(text), "launch code")
		if j := strings.Index(text, "炸弹"); j >= 0 {
			i = j
		}
		want := strings.ReplaceAll(text[:i], "secret", "******")
		for _, cut := range runeOffsets(text) {
			got, blocked := feed(m, text, cut)
			if !blocked || got != want {
				t.Fatalf("%q cut at %d: %q blocked=%v, want %q", text, cut, got, blocked, want)
			}
		}
	}
}

// Patterns are found split at every position too: \b sees the text
// before the held part, and a growing match is masked whole.
func TestPatternsSplitAtEveryPosition(t *testing.T) {
	t.Parallel()
	var patterns []compiledPattern
	for _, p := range []string{`[a-z0-9.]+@[a-z]+\.com`, `\bass\b`, `\d{3}-\d{4}`} {
		cp, err := compilePattern(p, false)
		if err != nil {
			t.Fatal(err)
		}
		patterns = append(patterns, cp)
	}
	m := newMatcher([]string{"机密"}, nil, patterns, 64)
	for _, tc := range []struct{ text, want string }{
		{"Mail bob.smith@example.com today", "Mail " + strings.Repeat("*", 21) + " today"},
		{"a class ass, Ass.", "a class ***, ***."},
		{"Call 555-1234 or 5555-12345.", "Call ******** or 5********5."},
		{"机密 x@y.com", "** *******"},
	} {
		for _, cut := range runeOffsets(tc.text) {
			if got, _ := feed(m, tc.text, cut); got != tc.want {
				t.Fatalf("%q cut at %d: %q, want %q", tc.text, cut, got, tc.want)
			}
		}
		if got, _ := feed(m, tc.text, runeOffsets(tc.text)...); got != tc.want {
			t.Fatalf("%q rune by rune: %q, want %q", tc.text, got, tc.want)
		}
	}
}

// A pattern that could grow forever holds back at most max_hold runes.
func TestPatternHoldIsBounded(t *testing.T) {
	t.Parallel()
	cp, err := compilePattern(`x+y`, false)
	if err != nil {
		t.Fatal(err)
	}
	s := scanner{m: newMatcher(nil, nil, []compiledPattern{cp}, 8)}
	out, _ := s.write("ab" + strings.Repeat("x", 100))
	if got := len(s.held); got != 8 || out != "ab"+strings.Repeat("x", 92) {
		t.Fatalf("held %d bytes, released %d", got, len(out))
	}
}

func TestExtendableMatchesExactlyWhatCanGrow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		grow    []string
		not     []string
	}{
		{`secret`, []string{"", "s", "SEC", "secre"}, []string{"secret", "x", "secrets"}},
		{`\d{3}-\d{4}`, []string{"", "5", "555", "555-", "555-12"}, []string{"555-1234", "a"}},
		{`a+b`, []string{"", "a", "aaaa"}, []string{"ab", "b"}},
		{`cat|dog`, []string{"c", "do"}, []string{"cat", "x"}},
	} {
		cp, err := compilePattern(tc.pattern, false)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(fmt.Sprintf(`^(?:%s)$`, cp.extend))
		for _, s := range tc.grow {
			if !re.MatchString(s) {
				t.Errorf("%s: %q can grow into a match (extend %s)", tc.pattern, s, cp.extend)
			}
		}
		for _, s := range tc.not {
			if re.MatchString(s) {
				t.Errorf("%s: %q cannot grow into a match (extend %s)", tc.pattern, s, cp.extend)
			}
		}
	}
}

// The <think> opening and </think> closing deltas
// keep their exact form, which the run's guard relies on.
func TestOutputFilterKeepsThinkTagsWhole(t *testing.T) {
	t.Parallel()
	var got []eventbus.Event
	f := &outputFilter{inner: eventbus.EmitterFunc(func(ev eventbus.Event) { got = append(got, ev) }),
		cancel: func(error) {}, answer: scanner{m: newMatcher([]string{"pass"}, nil, nil, 8)},
		thinking: scanner{m: newMatcher([]string{"pass"}, nil, nil, 8)}}
	for _, ev := range []eventbus.Event{
		{Type: eventbus.TypeThinkingStart},
		eventbus.Delta(eventbus.TypeThinkingDelta, "<think>pa"),
		eventbus.Delta(eventbus.TypeThinkingDelta, "ss"),
		eventbus.Delta(eventbus.TypeThinkingDelta, "</think>"),
		{Type: eventbus.TypeThinkingEnd},
	} {
		f.Emit(ev)
	}
	var texts []string
	for _, ev := range got {
		texts = append(texts, string(ev.Type)+":"+ev.Text)
	}
	want := "thinking.start:|thinking.delta:<think>|thinking.delta:****|thinking.delta:</think>|thinking.end:"
	if strings.Join(texts, "|") != want {
		t.Fatalf("got %s", strings.Join(texts, "|"))
	}
}
