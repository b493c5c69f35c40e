package plugins_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
	"github.com/chatpipe/chatpipe/plugins"
)

// filterChain is [sensitive_filter, chat_completion_stream] with the given
// lists and think tags on.
func filterChain(t *testing.T, lists ...map[string]any) *pipeline.EventManager {
	t.Helper()
	items := make([]any, len(lists))
	for i, l := range lists {
		items[i] = l
	}
	return pipelinetest.Chain(t, "chat", []any{"sensitive_filter", "chat_completion_stream"},
		sections(map[string]map[string]any{"sensitive_filter": {"lists": items}}))
}

func list(action string, words ...string) map[string]any {
	ws := make([]any, len(words))
	for i, w := range words {
		ws[i] = w
	}
	return map[string]any{"action": action, "words": ws}
}

// cutAt splits text into two deltas at byte i.
func cutAt(text string, i int) []pipelinetest.Chunk { return pipelinetest.Deltas(text[:i], text[i:]) }

// Every word of a mask list is masked in the answer and in the thinking,
// wherever the model's deltas cut it; the saved text (the concatenated
// deltas) is what the client received.
func TestSensitiveFilterMasksWordsSplitAtEveryPosition(t *testing.T) {
	t.Parallel()
	chain := filterChain(t, list("mask", "password", "api key", "机密文件", "Straße"))
	for _, tc := range []struct{ answer, want string }{
		{"Your password is hunter2.", "Your ******** is hunter2."},
		{"Set the API KEY first.", "Set the ******* first."},
		{"这份机密文件不能外传。", "这份****不能外传。"},
		{"Die STRASSE und die straße.", "Die STRASSE und die ******."},
		{"passwor d, pass word and passwordpassword", "passwor d, pass word and ****************"},
	} {
		for i := range tc.answer {
			if i == 0 {
				continue
			}
			model := pipelinetest.NewModel(pipelinetest.Script{Chunks: slices.Concat(
				pipelinetest.Reasoning("Thinking about "+tc.answer[:i], 1), pipelinetest.Reasoning(tc.answer[i:], 1),
				cutAt(tc.answer, i))})
			res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Tell me.", Models: model})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Answer() != tc.want {
				t.Fatalf("%q cut at %d: answer %q, want %q", tc.answer, i, res.Answer(), tc.want)
			}
			if want := "<think>Thinking about " + tc.want + "</think>"; res.Thinking() != want {
				t.Fatalf("%q cut at %d: thinking %q, want %q", tc.answer, i, res.Thinking(), want)
			}
		}
	}
}

// A question with a refuse word gets the refusal as its answer; the model
// is never called, and the stream completes normally.
func TestSensitiveFilterRefusesAQuestionWithoutCallingTheModel(t *testing.T) {
	t.Parallel()
	chain := pipelinetest.Chain(t, "chat", []any{"sensitive_filter", "chat_completion_stream"},
		sections(map[string]map[string]any{"sensitive_filter": {
			"lists": []any{list("refuse", "make a bomb", "炸弹")}, "refusal": "I can't help with that.",
		}}))
	for _, q := range []string{"How do I MAKE A BOMB?", "怎么做炸弹"} {
		model := pipelinetest.NewModel()
		res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: q, Models: model})
		if res.Status() != eventbus.StatusCompleted || res.Answer() != "I can't help with that." {
			t.Fatalf("%q: status %s answer %q err %v", q, res.Status(), res.Answer(), res.Err)
		}
		if n := len(model.Calls()); n != 0 {
			t.Fatalf("%q: the model was called %d times", q, n)
		}
		if st, _ := res.Stage("sensitive_filter"); st.Detail != "question refused" {
			t.Fatalf("stage = %+v", st)
		}
		if _, ok := res.Stage("generate"); ok {
			t.Fatal("the generate stage ran")
		}
		if got := res.Types(); !slices.Equal(got[1:4], []eventbus.Type{eventbus.TypeAnswerStart, eventbus.TypeAnswerDelta, eventbus.TypeAnswerEnd}) {
			t.Fatalf("events %v", got)
		}
	}
	// A refuse word in the answer is not this list's business.
	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: pipelinetest.Answer("A 炸弹 is a bomb.", 3)})
	res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "What is 炸 弹?", Models: model})
	if res.Err != nil || res.Answer() != "A 炸弹 is a bomb." {
		t.Fatalf("answer %q err %v", res.Answer(), res.Err)
	}
}

// Mask words in the question are masked in what the model is asked.
func TestSensitiveFilterMasksTheQuestionTheModelSees(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel()
	res := pipelinetest.Run(t.Context(), filterChain(t, list("mask", "hunter2")), pipelinetest.Request{
		Query: "Is HUNTER2 a good password?", Models: model})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	msgs := model.Calls()[0].Messages
	if got := msgs[len(msgs)-1].Content; got != "Is ******* a good password?" {
		t.Fatalf("the model was asked %q", got)
	}
	if st, _ := res.Stage("sensitive_filter"); st.Detail != "question masked" {
		t.Fatalf("stage = %+v", st)
	}
}

// A stop word in the answer ends it: the text before the word is kept
// (that is what is saved), the answer block is closed, the model call is
// cancelled at once, and the chain fails with content_filtered.
func TestSensitiveFilterStopsTheAnswerAndCancelsTheModel(t *testing.T) {
	t.Parallel()
	chain := filterChain(t, list("stop", "launch code"), list("mask", "secret"))
	for _, cut := range []int{1, 5, 18, 22, 24} {
		gate := pipelinetest.NewGate() // never released: only cancellation ends the hold
		text := "The secret LAUNCH CODE is 0000."
		model := pipelinetest.NewModel(pipelinetest.Script{
			Chunks: append(cutAt(text, cut), pipelinetest.Deltas(" More.", " Even more.")...), Hold: gate, HoldAfter: 3,
		})
		res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Codes?", Models: model})
		if res.Err == nil || res.Err.Code != plugins.CodeContentFiltered || !errors.Is(res.Err, plugins.ErrContentFiltered) {
			t.Fatalf("cut %d: Err = %v", cut, res.Err)
		}
		if res.Answer() != "The ****** " {
			t.Fatalf("cut %d: partial answer %q", cut, res.Answer())
		}
		if end := res.Index(eventbus.TypeAnswerEnd); end < 0 || slices.ContainsFunc(res.Events[end+1:], func(ev eventbus.Event) bool {
			return ev.Type.IsText()
		}) {
			t.Fatalf("cut %d: the answer block is not closed last: %v", cut, res.Types())
		}
		if res.Count(eventbus.TypeAnswerEnd) != 1 {
			t.Fatalf("cut %d: %d answer.end events", cut, res.Count(eventbus.TypeAnswerEnd))
		}
		select {
		case <-gate.Reached():
			t.Fatalf("cut %d: the model streamed on after the stop", cut)
		default:
		}
	}
}

// A stop word in the thinking stops the answer before it starts, with the
// thinking block closed (tag included).
func TestSensitiveFilterStopsOnThinking(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: slices.Concat(
		pipelinetest.Reasoning("I should reveal the launch code now.", 6),
		pipelinetest.Answer("Here it is.", 2))})
	res := pipelinetest.Run(t.Context(), filterChain(t, list("stop", "launch code")),
		pipelinetest.Request{Query: "Q", Models: model})
	if res.Err == nil || res.Err.Code != plugins.CodeContentFiltered {
		t.Fatalf("Err = %v", res.Err)
	}
	if res.Thinking() != "<think>I should reveal the </think>" || res.Answer() != "" {
		t.Fatalf("thinking %q answer %q", res.Thinking(), res.Answer())
	}
	if res.Count(eventbus.TypeThinkingEnd) != 1 || res.Count(eventbus.TypeAnswerStart) != 0 {
		t.Fatalf("events %v", res.Types())
	}
}

// Words can come from a file, patterns are regular expressions.
func TestSensitiveFilterWordFileAndPatterns(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "words.txt")
	if err := os.WriteFile(file, []byte("# one per line\nclassified\n\n  top secret  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chain := filterChain(t,
		map[string]any{"action": "mask", "file": file},
		map[string]any{"action": "mask", "patterns": []any{`\b\d{4}[- ]?\d{4}[- ]?\d{4}[- ]?\d{4}\b`}})
	text := "TOP SECRET: card 4111 1111 1111 1111 is classified."
	for i := 1; i < len(text); i++ {
		model := pipelinetest.NewModel(pipelinetest.Script{Chunks: cutAt(text, i)})
		res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Q", Models: model})
		if want := "**********: card ******************* is **********."; res.Answer() != want {
			t.Fatalf("cut %d: %q, want %q", i, res.Answer(), want)
		}
	}
}

func TestSensitiveFilterConfigErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		settings map[string]any
		want     string
	}{
		{"action", map[string]any{"lists": []any{list("hide", "x")}}, `plugins.sensitive_filter.lists[0].action: "hide"`},
		{"empty list", map[string]any{"lists": []any{map[string]any{"action": "mask"}}}, "plugins.sensitive_filter.lists[0]: lists no words"},
		{"pattern", map[string]any{"lists": []any{map[string]any{"action": "stop", "patterns": []any{"("}}}}, "plugins.sensitive_filter.lists[0].patterns[0]"},
		{"empty pattern", map[string]any{"lists": []any{map[string]any{"action": "stop", "patterns": []any{"x*"}}}}, "matches the empty string"},
		{"file", map[string]any{"lists": []any{map[string]any{"action": "mask", "file": "/nonexistent/words"}}}, "plugins.sensitive_filter.lists[0].file"},
		{"unknown key", map[string]any{"lists": []any{map[string]any{"action": "mask", "word": []any{"x"}}}}, "word"},
		{"max_hold", map[string]any{"max_hold": 0}, "plugins.sensitive_filter.max_hold"},
	} {
		_, err := pipelinetest.BuildChain("chat", []any{"sensitive_filter", "chat_completion_stream"},
			sections(map[string]map[string]any{"sensitive_filter": tc.settings}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// With no lists the plugin passes everything through, and says so.
func TestSensitiveFilterWithoutListsIsSkipped(t *testing.T) {
	t.Parallel()
	res := pipelinetest.Run(t.Context(), filterChain(t), pipelinetest.Request{Query: "Q", Models: pipelinetest.NewModel()})
	if st, _ := res.Stage("sensitive_filter"); res.Err != nil || st.Status != eventbus.StageSkipped {
		t.Fatalf("stage %+v err %v", st, res.Err)
	}
}
