package app_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

// The page shows a tool's output live inside its block, and drops the
// text of a model call attempt that ends uncommitted: after the provider
// stream breaks and the call is retried, only the second attempt's text
// remains, as saved.
func TestWebPageShowsToolOutputLiveAndDropsAWithdrawnAttempt(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t, agentMode(map[string]any{"tools": []any{"e2e_stream"}}), streamRetry(2))
	key := e2eKey("web")
	held := providertest.NewGate()
	defer held.Release()
	defer openE2EGate(key)
	h.provider.Enqueue(
		providertest.Script{Chunks: providertest.ToolCall(0, "call_web", "e2e_stream", `{"key":"`+key+`"}`, 2)},
		providertest.Script{Chunks: providertest.Content("Broken words that vanish", 3), Hold: held, HoldAfter: 3, Drop: true},
		providertest.Script{Chunks: providertest.Answer("The final answer.", 3)},
	)
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the modes", `document.querySelectorAll('#mode option').length >= 3`)
	b.ask("Run the tool.")

	// The tool waits for the test: its block shows the output streamed so far.
	b.waitJS("the tool's live output", `(() => {
		const t = document.querySelector('#messages article.assistant .tool-call[data-call-id="call_web"]');
		return !!t && t.dataset.status === 'running' && t.querySelector('.tool-output').textContent === `+jsString("started "+key+"\n")+`;
	})()`)
	openE2EGate(key)

	// The next model call streams, then breaks: first its text shows ...
	if err := held.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	b.waitLast("the broken attempt's text", `s.Answer === 'Broken words that vanish'`)
	held.Release()
	// ... then it is withdrawn and the retried attempt's text replaces it.
	st := b.waitLast("the completed answer", `s.Status === 'completed'`)
	if st.Answer != "The final answer." {
		t.Fatalf("the page shows %q, want only the second attempt's text", st.Answer)
	}
	blocks := evalJS[[]string](b, `[...document.querySelectorAll('#messages article.assistant .tool-call')].map(t => t.dataset.status + ':' + t.querySelector('.tool-output').textContent)`)
	if len(blocks) != 1 || blocks[0] != "completed:started "+key+"\ndone "+key {
		t.Fatalf("tool blocks %q", blocks)
	}
	if msg := h.message(h.sessionByTitle("Run the tool."), st.ID); msg.Content != "The final answer." {
		t.Fatalf("saved %+v", msg)
	}
	b.screenshot("web-agent-retry.png")
}
