package knowledge

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/tokens"
)

func contents(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Content
	}
	return out
}

func headings(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Heading
	}
	return out
}

// checkInvariants asserts what every chunking must satisfy.
func checkInvariants(t *testing.T, c Chunker, chunks []Chunk) {
	t.Helper()
	for i, ch := range chunks {
		if ch.Index != i {
			t.Errorf("chunk %d has Index %d", i, ch.Index)
		}
		if strings.TrimSpace(ch.Content) == "" {
			t.Errorf("chunk %d is empty", i)
		}
		if ch.Tokens != tokens.Estimate(ch.Content) {
			t.Errorf("chunk %d: Tokens %d, Estimate %d", i, ch.Tokens, tokens.Estimate(ch.Content))
		}
		if ch.Tokens > c.TargetTokens {
			t.Errorf("chunk %d: %d tokens, over the target %d: %q", i, ch.Tokens, c.TargetTokens, ch.Content)
		}
	}
}

func TestChunkerMarkdownSections(t *testing.T) {
	t.Parallel()
	md := `Preface before any heading.

# Guide

Intro.

## Install

Run it.

### Linux
Use the package.

## Configure
Edit config.yaml.

# Other

Last words.`
	c := Chunker{TargetTokens: 100, OverlapTokens: 10}
	chunks := c.Markdown(md)
	checkInvariants(t, c, chunks)
	wantHeadings := []string{"", "Guide", "Guide > Install", "Guide > Install > Linux", "Guide > Configure", "Other"}
	wantContents := []string{"Preface before any heading.", "Intro.", "Run it.", "Use the package.", "Edit config.yaml.", "Last words."}
	if got := headings(chunks); !reflect.DeepEqual(got, wantHeadings) {
		t.Errorf("headings = %q, want %q", got, wantHeadings)
	}
	if got := contents(chunks); !reflect.DeepEqual(got, wantContents) {
		t.Errorf("contents = %q, want %q (a chunk never spans sections, no overlap across them)", got, wantContents)
	}
}

func TestALongHeadingIsCutInPathsAndKeptAsText(t *testing.T) {
	t.Parallel()
	// A paragraph written as a heading: every chunk under it would carry
	// it whole in its path.
	long := strings.Repeat("harbour ", 100) + "lighthouse"
	c := Chunker{TargetTokens: 100, OverlapTokens: 10}
	chunks := c.Markdown("# " + long + "\n\nFirst.\n\n## Tides\n\nSecond.")
	checkInvariants(t, c, chunks)
	for _, ch := range chunks {
		if n := utf8.RuneCountInString(ch.Heading); n > 170 {
			t.Errorf("chunk %d: heading of %d runes", ch.Index, n)
		}
	}
	var all strings.Builder
	for _, ch := range chunks {
		all.WriteString(ch.Content + "\n")
	}
	if !strings.Contains(all.String(), "harbour lighthouse") || !strings.HasSuffix(chunks[len(chunks)-1].Heading, "… > Tides") {
		t.Errorf("chunks %+v", chunks)
	}
}

func TestChunkerHeadingSyntax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line  string
		title string
		ok    bool
	}{
		{"# Title", "Title", true},
		{"###### Six", "Six", true},
		{"####### Seven", "", false},
		{"#hashtag", "", false},
		{"   ## Indented", "Indented", true},
		{"    # code", "", false},
		{"## Closed ##", "Closed", true},
		{"## C# tips", "C# tips", true},
		{"#", "", true},
	} {
		_, title, ok := atxHeading(tc.line)
		if ok != tc.ok || title != tc.title {
			t.Errorf("atxHeading(%q) = %q, %v; want %q, %v", tc.line, title, ok, tc.title, tc.ok)
		}
	}
}

func TestChunkerKeepsParagraphsWholeWhereTheyFit(t *testing.T) {
	t.Parallel()
	p1 := strings.Repeat("alpha ", 30) + "end one." // ~46 tokens
	p2 := strings.Repeat("bravo ", 30) + "end two."
	p3 := strings.Repeat("charlie ", 20) + "end three."
	c := Chunker{TargetTokens: 100, OverlapTokens: 0}
	chunks := c.Markdown(p1 + "\n\n" + p2 + "\n\n" + p3)
	checkInvariants(t, c, chunks)
	want := []string{p1 + "\n\n" + p2, p3}
	if got := contents(chunks); !reflect.DeepEqual(got, want) {
		t.Errorf("contents = %q, want %q", got, want)
	}
}

func TestChunkerListKeptWholeAndSplitAtItems(t *testing.T) {
	t.Parallel()
	list := "- first item\n- second item\n  continued\n- third item"
	c := Chunker{TargetTokens: 50}
	if got := contents(c.Markdown("Intro.\n" + list)); !reflect.DeepEqual(got, []string{"Intro.\n\n" + list}) {
		t.Errorf("small list: %q", got)
	}
	long := ""
	for i := range 12 {
		long += fmt.Sprintf("- item number %d with some words\n", i)
	}
	c = Chunker{TargetTokens: 30}
	chunks := c.Markdown(long)
	checkInvariants(t, c, chunks)
	for _, ch := range chunks {
		for _, line := range strings.Split(ch.Content, "\n") {
			if !strings.HasPrefix(line, "- item number ") || !strings.HasSuffix(line, "some words") {
				t.Errorf("list split inside an item: %q", ch.Content)
			}
		}
	}
}

func TestChunkerOverlapRepeatsTheEndOfThePreviousChunk(t *testing.T) {
	t.Parallel()
	var sentences []string
	for i := range 30 {
		sentences = append(sentences, fmt.Sprintf("Sentence number %d says something.", i))
	}
	c := Chunker{TargetTokens: 40, OverlapTokens: 12}
	chunks := c.Markdown(strings.Join(sentences, " "))
	checkInvariants(t, c, chunks)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want several", len(chunks))
	}
	for i := 1; i < len(chunks); i++ {
		prev, cur := chunks[i-1].Content, chunks[i].Content
		// The chunk starts with whole sentences that ended the previous one.
		first, _, _ := strings.Cut(cur, ".")
		first += "."
		if !strings.HasSuffix(prev, first) && !strings.Contains(prev, first+" ") {
			t.Errorf("chunk %d does not start with text of chunk %d:\n%q\n%q", i, i-1, prev, cur)
		}
		if !strings.HasPrefix(first, "Sentence number") {
			t.Errorf("overlap is not made of whole sentences: %q", cur)
		}
		overlap := 0
		for _, s := range sentences {
			if strings.Contains(prev, s) && strings.Contains(cur, s) {
				overlap += tokens.Estimate(s) + 1
			}
		}
		if overlap == 0 || overlap > c.OverlapTokens+1 {
			t.Errorf("chunks %d and %d share %d tokens, want 1..%d", i-1, i, overlap, c.OverlapTokens)
		}
	}
	// No overlap configured, no text repeated.
	c.OverlapTokens = 0
	var all strings.Builder
	for _, ch := range c.Markdown(strings.Join(sentences, " ")) {
		all.WriteString(ch.Content + " ")
	}
	if got := strings.Count(all.String(), "Sentence number 7 "); got != 1 {
		t.Errorf("without overlap a sentence appears %d times", got)
	}
}

func TestChunkerCutsChineseAtSentenceEnds(t *testing.T) {
	t.Parallel()
	sentence := "客户端断开连接以后可以继续读取流。"
	text := strings.Repeat(sentence, 20) // no spaces at all
	c := Chunker{TargetTokens: 40, OverlapTokens: 0}
	chunks := c.Markdown(text)
	checkInvariants(t, c, chunks)
	if strings.Join(contents(chunks), "") != text {
		t.Errorf("chunks do not reassemble the text")
	}
	for _, ch := range chunks {
		if !strings.HasSuffix(ch.Content, "。") {
			t.Errorf("chunk not cut at a sentence end: %q", ch.Content)
		}
	}
	// Other CJK sentence ends, closing quotes kept with their sentence.
	mixed := strings.Repeat("你知道吗？", 5) + strings.Repeat("太好了！", 5) + strings.Repeat("第一；", 5) + strings.Repeat("他说：“好。”", 5)
	c = Chunker{TargetTokens: 8}
	chunks = c.Markdown(mixed)
	checkInvariants(t, c, chunks)
	for _, ch := range chunks {
		if !strings.ContainsAny(ch.Content[len(ch.Content)-3:], "？！；”") {
			t.Errorf("chunk not cut at a CJK sentence end: %q", ch.Content)
		}
	}
}

func TestChunkerCutsLongSentencesAtWordsThenRunes(t *testing.T) {
	t.Parallel()
	words := strings.TrimSpace(strings.Repeat("lorem ipsum ", 100))
	c := Chunker{TargetTokens: 20}
	chunks := c.PlainText(words)
	checkInvariants(t, c, chunks)
	for _, ch := range chunks {
		if strings.HasPrefix(ch.Content, " ") || strings.HasSuffix(ch.Content, " ") ||
			strings.Contains(" "+ch.Content+" ", " lor ") {
			t.Errorf("cut inside a word: %q", ch.Content)
		}
	}
	if strings.Join(contents(chunks), " ") != words {
		t.Error("word-cut chunks do not reassemble the text")
	}

	noSpaces := strings.Repeat("汉字", 100) + strings.Repeat("x", 200)
	chunks = c.PlainText(noSpaces)
	checkInvariants(t, c, chunks)
	if strings.Join(contents(chunks), "") != noSpaces {
		t.Error("rune-cut chunks do not reassemble the text")
	}
}

func TestChunkerCodeFences(t *testing.T) {
	t.Parallel()
	fence := "```go\nfunc main() {\n\n# not a heading\n\tprintln(1)\n}\n```"
	c := Chunker{TargetTokens: 100}
	chunks := c.Markdown("## Code\n\nBefore.\n\n" + fence + "\n\nAfter.")
	if got := contents(chunks); !reflect.DeepEqual(got, []string{"Before.\n\n" + fence + "\n\nAfter."}) {
		t.Errorf("small fence: %q", got)
	}
	if got := headings(chunks); !reflect.DeepEqual(got, []string{"Code"}) {
		t.Errorf("a # line inside a fence became a heading: %q", got)
	}

	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("\tx%d := compute(%d)", i, i))
	}
	big := "~~~python\n" + strings.Join(lines, "\n") + "\n~~~"
	c = Chunker{TargetTokens: 50, OverlapTokens: 10}
	chunks = c.Markdown(big)
	checkInvariants(t, c, chunks)
	if len(chunks) < 2 {
		t.Fatalf("big fence in %d chunk(s)", len(chunks))
	}
	var inner []string
	for _, ch := range chunks {
		if !strings.HasPrefix(ch.Content, "~~~python\n") || !strings.HasSuffix(ch.Content, "\n~~~") {
			t.Errorf("part of a cut fence is not a fence: %q", ch.Content)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(ch.Content, "~~~python\n"), "\n~~~")
		inner = append(inner, strings.Split(body, "\n")...)
	}
	if !reflect.DeepEqual(inner, lines) {
		t.Error("cut fence lost, repeated or split lines (code is never overlapped)")
	}

	// A fence left open runs to the end of the document.
	chunks = (Chunker{TargetTokens: 100}).Markdown("```\ncode\n# still code")
	if len(chunks) != 1 || chunks[0].Heading != "" {
		t.Errorf("unclosed fence: %+v", chunks)
	}
}

func TestChunkerPlainTextHasNoHeadings(t *testing.T) {
	t.Parallel()
	chunks := (Chunker{TargetTokens: 100}).PlainText("# not a heading\n\nsecond paragraph")
	if len(chunks) != 1 || chunks[0].Heading != "" || chunks[0].Content != "# not a heading\n\nsecond paragraph" {
		t.Errorf("PlainText = %+v", chunks)
	}
}

func TestChunkerHeadingsOnlyDocumentIsNotLost(t *testing.T) {
	t.Parallel()
	chunks := (Chunker{TargetTokens: 100}).Markdown("# Title\n## Section")
	if len(chunks) != 1 || chunks[0].Content != "# Title\n## Section" {
		t.Errorf("headings-only document: %+v", chunks)
	}
	if chunks := (Chunker{TargetTokens: 100}).Markdown(" \n\n "); len(chunks) != 0 {
		t.Errorf("blank document: %+v", chunks)
	}
}

func TestChunkerIsDeterministicBoundedAndLosesNoWords(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"alpha", "beta", "gamma", "知识", "库", "检索。", "end.", "why?", "wow!", "\n", "\n\n", "# Head", "## Sub",
		"- item", "1. step", "```", "| a | b |", "，", "x,", "supercalifragilisticexpialidocious", "🚀", "e\u0301"}
	for round := range 200 {
		var b strings.Builder
		for range rng.IntN(400) {
			w := vocab[rng.IntN(len(vocab))]
			if strings.HasPrefix(w, "#") || w == "```" || strings.HasPrefix(w, "- ") || strings.HasPrefix(w, "1.") || strings.HasPrefix(w, "|") {
				b.WriteString("\n")
			}
			b.WriteString(w)
			b.WriteString([]string{" ", "", "\n"}[rng.IntN(3)])
		}
		text := b.String()
		c := Chunker{TargetTokens: 5 + rng.IntN(60), OverlapTokens: rng.IntN(5)}
		for name, cut := range map[string]func(string) []Chunk{"Markdown": c.Markdown, "PlainText": c.PlainText} {
			chunks := cut(text)
			checkInvariants(t, c, chunks)
			if again := cut(text); !reflect.DeepEqual(again, chunks) {
				t.Fatalf("round %d %s: not deterministic", round, name)
			}
			all := strings.Join(contents(chunks), "\n") + "\n" + strings.Join(headings(chunks), "\n")
			body := text
			if name == "Markdown" { // a heading with nothing under it is dropped
				var kept []string
				for _, l := range strings.Split(text, "\n") {
					if !strings.HasPrefix(l, "#") {
						kept = append(kept, l)
					}
				}
				body = strings.Join(kept, "\n")
			}
			for _, term := range Terms(body) {
				if !strings.Contains(all, term) && !strings.Contains(strings.ToLower(all), term) {
					// A rune cut may split a word; its runes must still be there.
					for _, r := range term {
						if !strings.ContainsRune(strings.ToLower(all), r) {
							t.Fatalf("round %d %s (target %d): lost %q of %q", round, name, c.TargetTokens, term, text)
						}
					}
				}
			}
		}
	}
}
