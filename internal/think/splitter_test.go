package think

import (
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
)

// segs records the splitter's output, merging adjacent pieces of a kind.
type segs struct{ out []seg }

type seg struct {
	thinking bool
	text     string
}

func (s *segs) add(th bool, t string) {
	if n := len(s.out); n > 0 && s.out[n-1].thinking == th {
		s.out[n-1].text += t
		return
	}
	s.out = append(s.out, seg{th, t})
}
func (s *segs) Thinking(t string) { s.add(true, t) }
func (s *segs) Answer(t string)   { s.add(false, t) }

func (s *segs) String() string {
	var b strings.Builder
	for _, x := range s.out {
		if x.thinking {
			b.WriteString("T(" + x.text + ")")
		} else {
			b.WriteString("A(" + x.text + ")")
		}
	}
	return b.String()
}

func split(chunks ...string) string {
	var sp Splitter
	var out segs
	for _, c := range chunks {
		sp.Write(c, &out)
	}
	sp.Flush(&out)
	return out.String()
}

// reference splits a whole string with plain string functions: an
// independent statement of the rules the streaming splitter must follow.
func reference(s string) string {
	var out segs
	for {
		trimmed := strings.TrimLeft(s, " \n\r\t")
		if !strings.HasPrefix(trimmed, openTag) {
			if s != "" {
				out.Answer(s)
			}
			return out.String()
		}
		if ws := s[:len(s)-len(trimmed)]; ws != "" {
			out.Answer(ws)
		}
		rest := trimmed[len(openTag):]
		end := strings.Index(rest, closeTag)
		if end < 0 {
			if rest != "" {
				out.Thinking(rest)
			}
			return out.String()
		}
		if end > 0 {
			out.Thinking(rest[:end])
		}
		s = rest[end+len(closeTag):]
	}
}

func TestSplitterCases(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hello", "A(hello)"},
		{"<think>plan</think>answer", "T(plan)A(answer)"},
		{"\n <think>plan</think>\n\nanswer", "A(\n )T(plan)A(\n\nanswer)"},
		{"<think>never closed", "T(never closed)"},
		{"answer mentions <think> tags", "A(answer mentions <think> tags)"},
		{"<think>a</think><think>b</think>c", "T(ab)A(c)"},
		{"<thin", "A(<thin)"},
		{"<think>x</thi", "T(x</thi)"},
		{"<think></think>", ""},
		{"<think>a<think>b</think>", "T(a<think>b)"},
	} {
		want := strings.ReplaceAll(tc.want, "A()", "")
		if got := split(tc.in); got != want {
			t.Errorf("split(%q) = %s, want %s", tc.in, got, want)
		}
		if got := reference(tc.in); got != want {
			t.Errorf("reference(%q) = %s, want %s", tc.in, got, want)
		}
	}
}

// Every split point of every case must give the same result as one chunk.
func TestSplitterAtEveryBytePosition(t *testing.T) {
	inputs := []string{
		"<think>step one\nstep two</think>\n\nThe answer is 42.",
		"  <think>思考中…</think>答案是四十二。",
		"<think>a</think><think>b</think>c",
		"no thinking at all </think> here",
	}
	for _, in := range inputs {
		want := reference(in)
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j++ {
				if got := split(in[:i], in[i:j], in[j:]); got != want {
					t.Fatalf("split(%q | %q | %q) = %s, want %s", in[:i], in[i:j], in[j:], got, want)
				}
			}
		}
	}
}

// FuzzSplitter: for any input cut into any chunks, the output equals the
// whole-string reference — so every byte but the recognised tags comes
// out exactly once, in order — and Blocks keeps the tags balanced.
func FuzzSplitter(f *testing.F) {
	f.Add("<think>abc</think>def", uint8(3), uint8(9))
	f.Add(" \n<think>x</th", uint8(1), uint8(2))
	f.Add("<<think>>", uint8(0), uint8(4))
	f.Fuzz(func(t *testing.T, in string, a, b uint8) {
		i, j := int(a)%(len(in)+1), int(b)%(len(in)+1)
		if i > j {
			i, j = j, i
		}
		chunks := []string{in[:i], in[i:j], in[j:]}
		if got, want := split(chunks...), reference(in); got != want {
			t.Fatalf("split(%q) = %s, want %s", chunks, got, want)
		}
		checkBalanced(t, chunks)
	})
}

type evRec struct{ evs []eventbus.Event }

func (r *evRec) Emit(ev eventbus.Event) { r.evs = append(r.evs, ev) }

func checkBalanced(t *testing.T, chunks []string) {
	t.Helper()
	rec := &evRec{}
	blocks := &Blocks{Emitter: rec, Tags: true}
	var sp Splitter
	for _, c := range chunks {
		sp.Write(c, blocks)
	}
	sp.Flush(blocks)
	blocks.Close()
	open := ""
	first := false
	var last string
	for _, ev := range rec.evs {
		switch ev.Type {
		case eventbus.TypeThinkingStart, eventbus.TypeAnswerStart:
			if open != "" {
				t.Fatalf("%s while %s open: %v", ev.Type, open, rec.evs)
			}
			open, first = string(ev.Type), true
		case eventbus.TypeThinkingDelta:
			if open != string(eventbus.TypeThinkingStart) {
				t.Fatalf("thinking delta outside a thinking block")
			}
			if first && !strings.HasPrefix(ev.Text, "<think>") {
				t.Fatalf("thinking block does not open with <think>: %q", ev.Text)
			}
			first, last = false, ev.Text
		case eventbus.TypeAnswerDelta:
			if open != string(eventbus.TypeAnswerStart) {
				t.Fatalf("answer delta outside an answer block")
			}
		case eventbus.TypeThinkingEnd:
			if open != string(eventbus.TypeThinkingStart) || last != "</think>" {
				t.Fatalf("thinking.end without a closing </think> delta (last %q)", last)
			}
			open = ""
		case eventbus.TypeAnswerEnd:
			if open != string(eventbus.TypeAnswerStart) {
				t.Fatalf("answer.end without answer.start")
			}
			open = ""
		}
	}
	if open != "" {
		t.Fatalf("block %s left open", open)
	}
}

func TestBlocksTagsAndWhitespace(t *testing.T) {
	rec := &evRec{}
	b := &Blocks{Emitter: rec, Tags: true}
	b.Thinking("\n\n")     // whitespace only: nothing opens
	b.Thinking("\nplan ")  // opens with the tag, leading newline dropped
	b.Thinking("more")     //
	b.Answer("\n\nAnswer") // closes thinking, leading whitespace dropped
	b.Answer(" done")
	b.Close()
	b.Close() // idempotent
	var got []string
	for _, ev := range rec.evs {
		got = append(got, string(ev.Type)+"("+ev.Text+")")
	}
	want := "thinking.start() thinking.delta(<think>plan ) thinking.delta(more) thinking.delta(</think>) thinking.end() " +
		"answer.start() answer.delta(Answer) answer.delta( done) answer.end()"
	if strings.Join(got, " ") != want {
		t.Fatalf("events\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestBlocksWithoutTags(t *testing.T) {
	rec := &evRec{}
	b := &Blocks{Emitter: rec}
	b.Thinking("plan")
	b.Close()
	for _, ev := range rec.evs {
		if strings.Contains(ev.Text, "think>") {
			t.Fatalf("tag emitted with Tags off: %q", ev.Text)
		}
	}
	if len(rec.evs) != 3 {
		t.Fatalf("events = %v", rec.evs)
	}
}
