package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// The built-in chat page, driven in a real headless Chromium (Debian's
// chromium package, which .ci/run installs) over the DevTools protocol.

const chromiumPath = "/usr/bin/chromium"

// artifactsDir holds the screenshots the browser test saves; its
// .gitignore keeps them out of the repository.
const artifactsDir = "testdata/artifacts"

// browser is one headless Chromium tab with a fresh profile.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// newBrowser starts Chromium, or skips the test when it is not installed
// and CHATPIPE_TEST_BROWSER is unset (CI sets it, so CI fails instead).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CHATPIPE_TEST_BROWSER") == "" {
			t.Skipf("browser test skipped: Chromium unavailable at %s (apt-get install chromium; .ci/run does it). "+
				"Set CHATPIPE_TEST_BROWSER=1 to make this a failure.", chromiumPath)
		}
		t.Fatalf("CHATPIPE_TEST_BROWSER is set but %s is missing: %v", chromiumPath, err)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel() // closes the browser and waits for it
		cancelAlloc()
		wg.Wait()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser; no timeout on this first call
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	messages := chromedp.Console(ctx)
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	})
	return b
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the expression is true in the page.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 25*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		b.fail("waiting for %s: %v", what, err)
	}
}

// fail reports what the page shows, then fails the test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
		b.t.Logf("the page shows:\n%s", text)
	}
	b.logConsole()
	b.t.Fatalf(format, args...)
}

func (b *browser) logConsole() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		b.t.Logf("console %s: %s", m.Type, m.Text)
	}
}

// answerState is what the page shows of its last assistant message.
type answerState struct {
	ID       string
	Status   string
	Answer   string
	Thinking string
	Progress string
	Badge    string
	Refs     []struct{ ID, Text string }
	Cites    []string
}

const lastAnswerJS = `(() => {
	const a = [...document.querySelectorAll('#messages article.assistant')].pop();
	if (!a) return null;
	const progress = a.querySelector('.progress');
	return {
		ID: a.dataset.id || '', Status: a.dataset.status || '',
		Answer: a.querySelector('.answer').innerText,
		Thinking: a.querySelector('.thinking').hidden ? '' : a.querySelector('.thinking-body').textContent,
		Progress: progress.hidden ? '' : progress.textContent,
		Badge: (a.querySelector('.meta .status') || {}).textContent || '',
		Refs: [...a.querySelectorAll('.refs li')].map(li => ({ID: li.id, Text: li.querySelector('summary').innerText})),
		Cites: [...a.querySelectorAll('.answer a.cite')].map(x => x.getAttribute('href')),
	};
})()`

func (b *browser) lastAnswer() answerState {
	b.t.Helper()
	return evalJS[answerState](b, lastAnswerJS)
}

// waitLast waits until the last answer satisfies the JavaScript condition
// on `s` (the object lastAnswerJS returns).
func (b *browser) waitLast(what, cond string) answerState {
	b.t.Helper()
	b.waitJS(what, `(() => { const s = `+lastAnswerJS+`; return !!s && (`+cond+`); })()`)
	return b.lastAnswer()
}

func jsString(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}

func (b *browser) ask(question string) {
	b.t.Helper()
	b.do("ask "+question,
		chromedp.WaitVisible(chromedp.CSS("#send")),
		chromedp.SendKeys(chromedp.CSS("#question"), question),
		chromedp.Click(chromedp.CSS("#send")),
	)
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 is a PNG
	if err != nil {
		b.fail("screenshot: %v", err)
	}
	if err := os.MkdirAll(artifactsDir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(artifactsDir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	b.t.Logf("screenshot: %s", abs)
}

// countedWords is an answer long enough to cut anywhere, whose every word
// is different, so a repeated or missing piece shows.
func countedWords(prefix string, n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return strings.Join(words, " ")
}

// heldAnswer streams thinking, then answer in pieces, and waits at the
// gate after `shown` answer pieces; it returns the text shown by then.
func heldAnswer(thought, answer string, pieces, shown int, gate *providertest.Gate) (providertest.Script, string) {
	parts := providertest.Split(answer, pieces)
	chunks := providertest.ReasoningContent(thought, 2)
	held := len(chunks) + shown
	for _, p := range parts {
		chunks = append(chunks, providertest.Chunk{Content: p})
	}
	chunks = append(chunks, providertest.Chunk{FinishReason: "stop"})
	return providertest.Script{Chunks: chunks, Hold: gate, HoldAfter: held}, strings.TrimSpace(strings.Join(parts[:shown], ""))
}

func TestWebPageAsksStopsAndResumesInARealBrowser(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t, ragMode)
	h.addDocument("Starter care", sourdough)

	// 1. Ask: thinking, the answer and its references are rendered, and
	// the [1] marker links to reference 1.
	const thought = "The feeding section of the starter guide answers this."
	const answer = "Feed the starter twice a day with equal weights of rye flour and water [1]."
	h.provider.Enqueue(providertest.Script{Chunks: append(providertest.ReasoningContent(thought, 3), providertest.Answer(answer, 7)...)})
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the modes", `document.querySelectorAll('#mode option').length >= 3 && document.querySelector('#mode').value === 'rag'`)
	b.ask("How often should I feed the sourdough starter?")
	st := b.waitLast("a completed answer", `s.Status === 'completed'`)
	if st.Thinking != thought || st.Answer != answer {
		t.Fatalf("rendered thinking %q, answer %q", st.Thinking, st.Answer)
	}
	refID := "ref-" + st.ID + "-1"
	if len(st.Refs) == 0 || st.Refs[0].ID != refID || !strings.Contains(st.Refs[0].Text, "Starter care") ||
		len(st.Cites) != 1 || st.Cites[0] != "#"+refID {
		t.Fatalf("references %+v, citation links %v", st.Refs, st.Cites)
	}
	b.do("follow the citation", chromedp.Click(chromedp.CSS("#messages a.cite")))
	b.waitJS("the cited reference opened", `document.getElementById(`+jsString(refID)+`).querySelector('details').open`)
	b.waitJS("the new chat in the list", `[...document.querySelectorAll('#sessions .session .open')].map(e => e.textContent).join('|') === `+
		jsString("How often should I feed the sourdough starter?"))
	b.screenshot("web-chat-desktop.png")

	// 2. Upload a document to the knowledge base.
	doc := filepath.Join(t.TempDir(), "returns.md")
	if err := os.WriteFile(doc, []byte("# Returns\n\nItems can be returned within 30 days of delivery."), 0o600); err != nil {
		t.Fatal(err)
	}
	b.do("upload", chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{doc}), chromedp.Click(chromedp.CSS("#upload-btn")))
	b.waitJS("the upload", `document.querySelector('#upload-status').textContent.includes('Added “Returns”') &&
		[...document.querySelectorAll('#documents .doc span')].some(e => e.textContent === 'Returns')`)

	// 3. Stop: the progress line shows the stage while the model has not
	// answered; Stop aborts the provider call and the page says stopped.
	headers, gate := providertest.NewGate(), providertest.NewGate()
	defer headers.Release()
	defer gate.Release()
	script, shown := heldAnswer("Flour types.", "Rye flour keeps the starter lively and sour.", 8, 3, gate)
	script.HoldHeaders = headers
	h.provider.Enqueue(script)
	b.do("new chat", chromedp.Click(chromedp.CSS("#new-chat")))
	b.ask("Which flour keeps a starter lively?")
	b.waitLast("the progress line", `s.Progress === 'Writing the answer…'`)
	headers.Release()
	st = b.waitLast("the first words", `s.Answer === `+jsString(shown))
	b.do("stop", chromedp.Click(chromedp.CSS("#stop")))
	st = b.waitLast("the stopped state", `s.Status === 'stopped'`)
	if st.Badge != "Stopped" || st.Answer != shown || st.Thinking != "Flour types." {
		t.Fatalf("after stop: %+v", st)
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider call was not aborted: %v", err)
	}
	b.waitJS("the send button back", `!document.querySelector('#send').hidden && document.querySelector('#stop').hidden`)
	if msg := h.message(h.sessionByTitle("Which flour keeps a starter lively?"), st.ID); msg.Status != "stopped" || msg.Content != shown {
		t.Fatalf("saved after stop: %+v", msg)
	}

	// 4. Reload mid-answer: the page shows what it had, continues after
	// the last event it kept, and ends with exactly the answer.
	for _, cut := range []string{"reload", "network drop"} {
		t.Run(cut, func(t *testing.T) {
			b.t = t
			gate := providertest.NewGate()
			defer gate.Release()
			long := countedWords("w", 60)
			script, shown := heldAnswer("Counting the words.", long, 60, 25, gate)
			h.provider.Enqueue(script)
			b.do("new chat", chromedp.Click(chromedp.CSS("#new-chat")))
			b.ask("Count to sixty after " + cut)
			if err := gate.WaitReached(ctxTimeout(t)); err != nil {
				t.Fatal(err)
			}
			before := b.waitLast("the first words", `s.Answer === `+jsString(shown))
			resumes := h.streamRequests()
			switch cut {
			case "reload":
				b.waitJS("the snapshot", `Object.keys(localStorage).filter(k => k.startsWith('chatpipe.stream.')).length === 1`)
				b.do("reload", chromedp.Reload())
				st := b.waitLast("the answer after the reload", `s.Answer === `+jsString(shown)+` && s.Status === 'streaming'`)
				if st.ID != before.ID || st.Thinking != "Counting the words." {
					t.Fatalf("after the reload: %+v", st)
				}
			case "network drop":
				h.dropConnections()
			}
			gate.Release()
			st := b.waitLast("the completed answer", `s.Status === 'completed'`)
			if st.Answer != long || st.Thinking != "Counting the words." {
				t.Fatalf("after the %s the answer is\n%q\nwant\n%q", cut, st.Answer, long)
			}
			h.waitStreamRequests(resumes + 1)
			b.waitJS("the snapshot dropped", `Object.keys(localStorage).filter(k => k.startsWith('chatpipe.stream.')).length === 0`)
			resumedAfter := evalJS[[]string](b, `performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/api/v1/streams/'))`)
			if len(resumedAfter) == 0 || strings.HasSuffix(resumedAfter[len(resumedAfter)-1], "?after=0") {
				t.Fatalf("resume requests %v: the page should continue after the last seq it had", resumedAfter)
			}
		})
		b.t = t
	}

	// 5. The page at phone width: the side panel folds behind a menu.
	b.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.waitJS("the menu button", `getComputedStyle(document.querySelector('#menu')).display !== 'none' &&
		document.querySelector('#sidebar').getBoundingClientRect().right <= 0`)
	b.screenshot("web-chat-phone.png")
	b.do("open the menu", chromedp.Click(chromedp.CSS("#menu")))
	b.waitJS("the side panel", `document.querySelector('#sidebar').getBoundingClientRect().left >= 0`)

	// No script error and no Content-Security-Policy violation on the way.
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			b.t.Errorf("console %s: %s", m.Type, m.Text)
		}
	}
}

// With API keys configured the page asks for one, keeps it, and sends it
// on every call, the streamed question included.
func TestWebPageAsksForTheAPIKeyAndUsesIt(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t, withTwoTenants)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Only for acme.", 2)})
	b.do("open the page", chromedp.Navigate(h.url("/")))
	b.waitJS("the request for a key", `!document.querySelector('#banner').hidden &&
		document.querySelector('#banner').textContent.includes('API key') && document.querySelector('#key-box').open`)
	b.do("enter the key",
		chromedp.SendKeys(chromedp.CSS("#key-input"), acmeKey),
		chromedp.Click(chromedp.CSS("#key-form button")))
	b.waitJS("the modes", `document.querySelectorAll('#mode option').length >= 3 && document.querySelector('#banner').hidden`)
	b.ask("Whose answer is this?")
	if st := b.waitLast("a completed answer", `s.Status === 'completed'`); st.Answer != "Only for acme." {
		t.Fatalf("answer %q", st.Answer)
	}
	h.as(acmeKey).sessionByTitle("Whose answer is this?")
	if key := evalJS[string](b, `localStorage.getItem('chatpipe.key')`); key != acmeKey {
		t.Fatalf("stored key %q", key)
	}
}

// When the stream's replay window is gone (resync_required), the page
// shows the saved message instead, once the server has finished it.
func TestWebPageReloadsTheSavedAnswerWhenTheReplayWindowIsGone(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t, func(c *config.Config) { c.Stream.MaxEvents = 5 })
	gate := providertest.NewGate()
	defer gate.Release()
	long := countedWords("r", 40)
	script, _ := heldAnswer("Thinking it over.", long, 40, 20, gate)
	h.provider.Enqueue(script)
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the modes", `document.querySelectorAll('#mode option').length >= 3`)
	b.ask("Count to forty")
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	// So small a window is gone before the page first reads: it waits for
	// the saved message, and so it does again after a reload.
	b.waitLast("an answer in progress", `s.ID !== '' && s.Status === 'streaming'`)
	b.do("reload", chromedp.Reload())
	b.waitLast("the page back", `s.Status === 'streaming'`)
	gate.Release()
	st := b.waitLast("the saved answer", `s.Status === 'completed'`)
	if st.Answer != long || st.Thinking != "Thinking it over." {
		t.Fatalf("after the resync the answer is\n%q\nwant\n%q", st.Answer, long)
	}
}

// The Markdown renderer, run in the browser: hostile input never becomes
// markup, and what models write renders as expected.
func TestWebPageMarkdownIsSafe(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the renderer", `typeof ChatpipeMarkdown === 'object'`)

	hostile := []string{
		`<script>window.pwned = 1</script>`,
		`<img src=x onerror="window.pwned = 1">`,
		`[click](javascript:window.pwned=1)`,
		`[click](JaVaScRiPt:alert)`,
		"[click](java\tscript:alert)",
		`[x](data:text/html,<script>alert(1)</script>)`,
		`[x](vbscript:msgbox)`,
		"```\n</code></pre><img src=x onerror=alert(1)>\n```",
		"`<b onmouseover=alert(1)>`",
		`**<svg onload=alert(1)>**`,
		`[a"><img src=x onerror=alert(1)>](https://ok.example)`,
		`https://ok.example/"onmouseover="alert(1)`,
		`# <iframe src="https://evil.example">`,
		"- <style>body{display:none}</style>\n- [1] [2]",
	}
	raw, _ := json.Marshal(hostile)
	bad := evalJS[[]string](b, `(() => {
		const out = [];
		for (const src of `+string(raw)+`) {
			const div = document.createElement('div');
			div.innerHTML = ChatpipeMarkdown.render(src, {refCount: 1, refPrefix: 'ref-x'});
			const tags = div.querySelectorAll('script,img,iframe,svg,style,object,embed,form,input,b');
			const attrs = [...div.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on') || n === 'style' || n === 'src');
			const hrefs = [...div.querySelectorAll('a')].map(a => a.getAttribute('href')).filter(h => !/^(https?:|mailto:|#|\/)/i.test(h));
			if (tags.length || attrs.length || hrefs.length) out.push(src + ' => ' + div.innerHTML);
		}
		return out;
	})()`)
	if len(bad) > 0 || evalJS[bool](b, `window.pwned === 1`) {
		t.Fatalf("unsafe output:\n%s", strings.Join(bad, "\n"))
	}

	got := evalJS[string](b, `ChatpipeMarkdown.render("## Steps\n\n1. Mix **rye** and *water*\n2. Wait [1]\n   - nested\n\n`+
		"```go\\nfmt.Println(\\\"<hi>\\\")\\n```"+`\n\nSee [docs](https://example.com/a?b=1&c=2) or `+"`go test`"+`.", {refCount: 1, refPrefix: 'r'})`)
	want := `<h2>Steps</h2><ol><li>Mix <strong>rye</strong> and <em>water</em></li><li>Wait <a class="cite" href="#r-1" data-ref="1">[1]</a>` +
		`<ul><li>nested</li></ul></li></ol><pre><code class="language-go">fmt.Println(&quot;&lt;hi&gt;&quot;)</code></pre>` +
		`<p>See <a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a> or <code>go test</code>.</p>`
	if got != want {
		t.Fatalf("rendered\n%s\nwant\n%s", got, want)
	}
}

// sessionByTitle finds the id of the caller's session with that title.
func (h *harness) sessionByTitle(title string) string {
	h.t.Helper()
	var list struct{ Sessions []struct{ ID, Title string } }
	h.call("GET", "/api/v1/sessions", "", &list)
	for _, s := range list.Sessions {
		if s.Title == title {
			return s.ID
		}
	}
	h.t.Fatalf("no session titled %q", title)
	return ""
}

// waitStreamRequests waits until the access log has n finished requests
// to the resume route: the page resumed through it.
func (h *harness) waitStreamRequests(n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.streamRequests() < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("the page never resumed through /api/v1/streams/{id}: %d requests, want %d", h.streamRequests(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamRequests counts the finished requests to the resume route, from
// the server's access log.
func (h *harness) streamRequests() int {
	n := 0
	for _, e := range h.logs.All() {
		if e.Message == "request" && e.ContextMap()["route"] == "/api/v1/streams/:id" {
			n++
		}
	}
	return n
}

// An answer of thousands of nested quotes used to exhaust the renderer's
// stack, and that answer and every later one never rendered. Nesting is
// now bounded (deeper levels show as text), so both answers render.
func TestWebPageRendersDeeplyNestedQuotesAndLaterAnswers(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	deep := strings.Repeat("> ", 8000) + "bottom of the well"
	h.provider.Enqueue(
		providertest.Script{Chunks: providertest.Content(deep, 4)},
		providertest.Script{Chunks: providertest.Content("A **normal** answer.", 2)},
	)
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.ask("dig")
	st := b.waitLast("the deep answer", `s.Status === 'completed'`)
	if !strings.Contains(st.Answer, "bottom of the well") {
		t.Fatalf("the deeply nested answer shows %q", st.Answer[:min(len(st.Answer), 200)])
	}
	depth := evalJS[int](b, `(() => {
		const a = [...document.querySelectorAll('#messages article.assistant')].pop();
		let d = 0, el = a.querySelector('.answer blockquote');
		while (el) { d++; el = el.querySelector(':scope > blockquote'); }
		return d;
	})()`)
	if depth < 2 || depth > 64 {
		t.Fatalf("rendered %d nested blockquotes", depth)
	}
	b.ask("and now?")
	b.waitLast("the next answer rendered", `s.Status === 'completed' && s.Answer.includes('A normal answer.')`)
	if n := evalJS[int](b, `document.querySelectorAll('#messages article.assistant .answer strong').length`); n != 1 {
		t.Fatalf("the later answer's markup did not render: %d <strong>", n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		if m.IsException() || strings.Contains(m.Text, "Maximum call stack") {
			t.Errorf("console %s: %s", m.Type, m.Text)
		}
	}
}

// A link whose target is a code span is text and code, not a link whose
// href is the code's HTML.
func TestWebPageMarkdownLinkToInlineCodeIsNotALink(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the renderer", `typeof ChatpipeMarkdown === 'object'`)
	got := evalJS[string](b, `ChatpipeMarkdown.render("See [the flag](`+"`--verbose`"+`) and [`+"`go test`"+`](https://go.dev).")`)
	want := `<p>See [the flag](<code>--verbose</code>) and ` +
		`<a href="https://go.dev" target="_blank" rel="noopener noreferrer"><code>go test</code></a>.</p>`
	if got != want {
		t.Fatalf("rendered\n%s\nwant\n%s", got, want)
	}
}
