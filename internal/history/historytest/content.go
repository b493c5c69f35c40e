package historytest

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
)

// unicodeText mixes scripts, emoji with modifiers and joiners, combining
// marks and characters outside the Basic Multilingual Plane.
const unicodeText = "你好，世界！这是一个测试。👋🏽 👨‍👩‍👧‍👦 🇨🇳 é (e\u0301) 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 «quotes» \"'\\ \t\n∑∫√ مرحبا שלום"

var contentTests = []test{
	{"UnicodeTextRoundTripsExactly", func(t *testing.T, s history.Store) {
		sess, err := s.CreateSession(t.Context(), history.Session{ID: "会话-🚀", Title: unicodeText, Mode: "聊天"})
		if err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		wantSession(t, "GetSession", getSession(t, s, "会话-🚀"), sess)
		u, a, err := s.StartTurn(t.Context(), sess.ID, history.Message{ID: "问-1", Content: unicodeText}, "答-1")
		if err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
		wantMessage(t, "user message", getMessage(t, s, "问-1"), u)
		f := history.Final{Status: history.StatusCompleted, Content: unicodeText + " [1]", Thinking: "思考：" + unicodeText,
			References: []eventbus.Reference{{Index: 1, ChunkID: "块-1", DocumentID: "文档-1", Title: "标题 📄", Content: unicodeText, Score: 0.5}}}
		finish(t, s, "答-1", f)
		got := getMessage(t, s, "答-1")
		a.Content, a.Thinking, a.References, a.Status, a.UpdatedAt = f.Content, f.Thinking, f.References, f.Status, got.UpdatedAt
		wantMessage(t, "assistant message", got, a)
	}},
	{"LargeContentRoundTripsExactly", func(t *testing.T, s history.Store) {
		big := largeText(1 << 20)
		createSession(t, s, "s1")
		u, a, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "u1", Content: big}, "a1")
		if err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
		wantMessage(t, "user message", getMessage(t, s, "u1"), u)
		f := history.Final{Status: history.StatusCompleted, Content: big, Thinking: big[:len(big)/2]}
		finish(t, s, "a1", f)
		got := getMessage(t, s, "a1")
		a.Content, a.Thinking, a.Status, a.UpdatedAt = f.Content, f.Thinking, f.Status, got.UpdatedAt
		wantMessage(t, "assistant message", got, a)
		msgs, err := s.RecentMessages(t.Context(), "s1", "", 0)
		if err != nil || len(msgs) != 2 || msgs[1].Content != big {
			t.Errorf("RecentMessages = %d messages, %v; want both with the full content", len(msgs), err)
		}
	}},
	{"ReferencesAndUsageRoundTripExactly", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		refs := []eventbus.Reference{
			{Index: 1, ChunkID: "c1", DocumentID: "d1", Title: "One", Content: "first passage", Score: 0.1 + 0.2},
			{Index: 2, ChunkID: "c2", DocumentID: "d1", Title: "", Content: "", Score: math.SmallestNonzeroFloat64},
			{Index: 3, ChunkID: "c3", DocumentID: "d2", Title: "Three", Content: "<b>&amp;</b>", Score: -1.5e300},
			{Index: 10, ChunkID: "c10", DocumentID: "d3", Title: "Zero", Content: "z", Score: 0},
		}
		usage := &eventbus.Usage{PromptTokens: math.MaxInt32, CompletionTokens: 1, ReasoningTokens: 0,
			TTFTMS: 1 << 40, TotalMS: 1<<40 + 1}
		cases := []struct {
			name     string
			f        history.Final
			wantRefs []eventbus.Reference
		}{
			{"references and usage", history.Final{References: refs, Usage: usage}, refs},
			{"nil references and nil usage", history.Final{}, nil},
			{"empty references read back as nil", history.Final{References: []eventbus.Reference{}}, nil},
			{"zero usage stays non-nil", history.Final{Usage: &eventbus.Usage{}}, nil},
		}
		for i, c := range cases {
			id := fmt.Sprintf("a%d", i)
			startTurn(t, s, "s1", fmt.Sprintf("u%d", i), id)
			c.f.Status = history.StatusCompleted
			finish(t, s, id, c.f)
			got := getMessage(t, s, id)
			if fmt.Sprintf("%#v", got.References) != fmt.Sprintf("%#v", c.wantRefs) {
				t.Errorf("%s: References = %#v, want %#v", c.name, got.References, c.wantRefs)
			}
			if (got.Usage == nil) != (c.f.Usage == nil) || (got.Usage != nil && *got.Usage != *c.f.Usage) {
				t.Errorf("%s: Usage = %+v, want %+v", c.name, derefAny(got.Usage), derefAny(c.f.Usage))
			}
		}
		// A user message keeps what it was given too.
		u, _, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "uu", References: refs, Usage: usage}, "aa")
		if err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
		wantMessage(t, "user message with references", getMessage(t, s, "uu"), u)
	}},
	{"TimesKeepSubsecondPrecision", func(t *testing.T, s history.Store) {
		// With at least millisecond precision the chance that all of these
		// fall on a whole second is negligible.
		createSession(t, s, "s1")
		var nonZero bool
		for i := range 5 {
			u, _ := startTurn(t, s, "s1", fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i))
			nonZero = nonZero || u.CreatedAt.Nanosecond() != 0
			if got := getMessage(t, s, u.ID); !got.CreatedAt.Equal(u.CreatedAt) {
				t.Errorf("stored CreatedAt %v, returned %v", got.CreatedAt, u.CreatedAt)
			}
		}
		if !nonZero {
			t.Error("every CreatedAt is a whole second; want at least millisecond precision")
		}
	}},
}

// largeText returns valid UTF-8 text of at least n bytes, mixing
// one- to four-byte characters and line breaks.
func largeText(n int) string {
	const chunk = "chatpipe streams answers. 流式回答。🚀 é\n"
	return strings.Repeat(chunk, n/len(chunk)+1)
}
