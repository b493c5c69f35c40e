package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

// The chat page's tools, approvals, side-by-side answers, deletion and
// keyboard, driven in headless Chromium (see web_test.go).

// openPage opens the chat page and waits until it has its modes.
func (b *browser) openPage(h *harness) {
	b.t.Helper()
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the modes", `document.querySelectorAll('#mode option').length >= 3`)
}

// click clicks the first element the selector matches, from JavaScript
// (the element may be scrolled away or covered by a dialog's backdrop).
func (b *browser) click(what, selector string) {
	b.t.Helper()
	b.waitJS(what, `(() => { const e = document.querySelector(`+jsString(selector)+`); return !!e && !e.disabled && e.offsetParent !== null; })()`)
	evalJS[bool](b, `(() => { document.querySelector(`+jsString(selector)+`).click(); return true; })()`)
}

// toolCallJS describes the tool call of that id as the page shows it.
func toolCallJS(id string) string {
	return `(() => {
		const c = document.querySelector('#messages .tool-call[data-call-id=` + jsString(id) + `]');
		if (!c) return null;
		const shown = e => !!e && !e.hidden && e.offsetParent !== null;
		return {
			Status: c.dataset.status, Name: c.querySelector('.tool-name').textContent,
			Args: c.querySelector('.tool-args').textContent, Output: c.querySelector('.tool-output').textContent,
			Buttons: shown(c.querySelector('.approve')) && shown(c.querySelector('.deny')),
			Decision: shown(c.querySelector('.approval-decision')) ? c.querySelector('.approval-decision').textContent : '',
		};
	})()`
}

type toolCallState struct {
	Status, Name, Args, Output, Decision string
	Buttons                              bool
}

// In agent mode a tool call that needs approval shows Approve and Deny;
// the click answers through the approvals endpoint, and the call's
// arguments, decision and result stay shown (collapsible) with the answer.
func TestWebPageApprovesAndDeniesToolCallsInAgentMode(t *testing.T) {
	b := newBrowser(t)
	h := newApprovalHarness(t, "1m")
	b.openPage(h)
	if mode := evalJS[string](b, `document.querySelector('#mode').value`); mode != "agent" {
		t.Fatalf("mode %q, want agent (the default)", mode)
	}

	for i, tc := range []struct {
		call, button, status, decision, output, answer string
	}{
		{"call_web_allow", ".approve", "completed", "Approved (by you)", "done ", "The tool ran."},
		{"call_web_deny", ".deny", "denied", "Denied (by you)", "denied by user", "The tool was denied."},
	} {
		t.Run(tc.call, func(t *testing.T) {
			b.t = t
			defer func() { b.t = t }()
			key := e2eKey("web")
			openE2EGate(key)
			args := `{"key":"` + key + `"}`
			h.provider.Enqueue(
				providertest.Script{Chunks: providertest.ToolCall(0, tc.call, "e2e_wait", args, 2)},
				providertest.Script{Chunks: providertest.Answer(tc.answer, 2)},
			)
			b.ask("Run the tool, please " + tc.button)
			b.waitJS("the approval request", `(() => { const s = `+toolCallJS(tc.call)+`; return !!s && s.Buttons && s.Status === 'waiting'; })()`)
			st := evalJS[toolCallState](b, toolCallJS(tc.call))
			if st.Name != "e2e_wait" || !strings.Contains(st.Args, key) {
				t.Fatalf("approval shown as %+v", st)
			}
			b.click("the "+tc.button+" button", `#messages .tool-call[data-call-id="`+tc.call+`"] `+tc.button)
			b.waitLast("the answer after the decision", `s.Status === 'completed' && s.Answer === `+jsString(tc.answer))
			st = evalJS[toolCallState](b, toolCallJS(tc.call))
			if st.Status != tc.status || st.Buttons || st.Decision != tc.decision || !strings.HasPrefix(st.Output, tc.output) {
				t.Fatalf("after the decision the call shows %+v", st)
			}
			reqs := h.provider.Requests()
			if got := toolMessages(reqs[len(reqs)-1].Body); len(got) != 1 || !strings.HasPrefix(got[0], tc.call+"="+tc.output) {
				t.Fatalf("the model was sent %v", got)
			}
			if i == 0 {
				b.screenshot("web-tool-approval.png")
			}
		})
	}
	// Collapsed, a call still names its tool and status; opened, its result.
	open := evalJS[bool](b, `(() => {
		const d = document.querySelector('#messages .tool-call[data-call-id="call_web_allow"] details');
		d.open = false; const closed = !d.querySelector('.tool-output').checkVisibility();
		d.open = true; return closed && d.querySelector('.tool-output').checkVisibility();
	})()`)
	if !open {
		t.Fatal("a tool call's result does not fold away")
	}

	// After a reload the calls are read from the saved answers.
	b.do("reload", chromedp.Reload())
	b.waitJS("the saved calls", `(() => { const s = `+toolCallJS("call_web_deny")+`; return !!s && s.Status === 'denied'; })()`)
	for id, want := range map[string]string{"call_web_allow": "completed", "call_web_deny": "denied"} {
		st := evalJS[toolCallState](b, toolCallJS(id))
		if st.Status != want || st.Name != "e2e_wait" || !strings.Contains(st.Args, `"key"`) || st.Output == "" || st.Buttons {
			t.Errorf("saved call %s shows %+v", id, st)
		}
	}
	b.noScriptErrors()
}

// firstAnswer opens the page, asks the question of a new chat, waits
// until the answer is completed, and returns it with the chat's id.
func (b *browser) firstAnswer(h *harness, question, answer string) (answerState, string) {
	b.t.Helper()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer(answer, 2)})
	b.openPage(h)
	b.ask(question)
	st := b.waitLast("the answer", `s.Status === 'completed'`)
	return st, h.sessionByTitle(question)
}

// noScriptErrors fails on a script error or a CSP violation in the console.
func (b *browser) noScriptErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			b.t.Errorf("console %s: %s", m.Type, m.Text)
		}
	}
}

// paneJS lists the side-by-side panes of the last answer.
const panesJS = `(() => {
	const hosts = [...document.querySelectorAll('#messages article.sbs-host')];
	const host = hosts.pop();
	if (!host) return [];
	return [...host.querySelectorAll('.sbs-pane')].map(p => ({
		Model: p.dataset.model, Shown: p.offsetParent !== null,
		Status: p.querySelector('article.assistant').dataset.status,
		Answer: p.querySelector('.answer').innerText,
	}));
})()`

type paneState struct {
	Model, Status, Answer string
	Shown                 bool
}

// Two models chosen under "Compare" answer side by side, in columns (tabs
// at phone width); saved, they are versions of the answer (‹ 1/2 ›), each
// naming its model.
func TestWebPageShowsSideBySideAnswers(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t, withOtherModel)
	scriptsByModel(h, map[string]providertest.Script{
		"fake-model":  {Chunks: providertest.Answer("Answer from default.", 3)},
		"other-model": {Chunks: providertest.Answer("Answer from other.", 3)},
	})
	b.openPage(h)
	b.do("open Compare", chromedp.Click(chromedp.CSS("#compare-label")))
	b.click("the default model", `#compare-models input[value="default"]`)
	b.click("the other model", `#compare-models input[value="other"]`)
	b.waitJS("the label", `document.querySelector('#compare-label').textContent === 'Compare 2 models'`)
	b.ask("Which is better?")
	check := func(when string, names []string, wantShown ...bool) {
		t.Helper()
		b.waitJS(when, `(() => { const p = `+panesJS+`; return p.length === 2 && p.every(x => x.Status === 'completed'); })()`)
		panes := evalJS[[]paneState](b, panesJS)
		want := []paneState{{names[0], "completed", "Answer from default.", wantShown[0]}, {names[1], "completed", "Answer from other.", wantShown[1]}}
		for i := range want {
			if panes[i] != want[i] {
				t.Fatalf("%s: panes %+v, want %+v", when, panes, want)
			}
		}
	}
	models := []string{"default", "other"}
	check("two answers side by side", models, true, true)
	b.screenshot("web-side-by-side.png")
	session := h.sessionByTitle("Which is better?")
	if msgs := h.messages(session); len(msgs) != 3 {
		t.Fatalf("saved %d messages", len(msgs))
	}
	b.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	check("tabs at phone width", models, true, false)
	b.click("the other tab", `#messages .sbs-tab:nth-child(2)`)
	check("the other tab", models, false, true)

	// Saved, the answers are versions of one answer (‹ 1/2 ›), each naming
	// its model.
	b.do("reload", chromedp.Reload())
	const answer = `#messages article.assistant`
	shownVersion := func(what string) (model, text string) {
		t.Helper()
		b.waitJS(what, `!!document.querySelector('`+answer+`[data-status=completed] .actions .model') &&
			!document.querySelector('`+answer+` .versions').hidden`)
		return evalJS[string](b, `document.querySelector('`+answer+` .actions .model').textContent`),
			evalJS[string](b, `document.querySelector('`+answer+` .answer').innerText`)
	}
	versions := map[string]string{}
	model, text := shownVersion("a saved version")
	versions[model] = text
	b.click("the other version", answer+` .versions button:not(:disabled)`)
	b.waitJS("the other version", `document.querySelector('`+answer+` .actions .model').textContent !== `+jsString(model))
	model, text = shownVersion("the other version")
	versions[model] = text
	if versions["default"] != "Answer from default." || versions["other"] != "Answer from other." {
		t.Fatalf("saved versions %v", versions)
	}
	b.noScriptErrors()
}

// Deleting a chat asks first: Cancel keeps it, Delete removes it.
func TestWebPageConfirmsBeforeDeletingAChat(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	_, session := b.firstAnswer(h, "A chat to delete", "Kept.")

	b.click("the delete button", `#sessions .session .del`)
	b.waitJS("the confirmation", `document.querySelector('#confirm').open &&
		document.querySelector('#confirm-text').textContent.includes('A chat to delete')`)
	b.click("Cancel", `#confirm-cancel`)
	b.waitJS("the dialog closed", `!document.querySelector('#confirm').open`)
	if code := h.call("GET", "/api/v1/sessions/"+session, "", nil); code != http.StatusOK {
		t.Fatalf("cancelled, the chat reads %d", code)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#sessions .session').length`); n != 1 {
		t.Fatalf("%d chats listed after Cancel", n)
	}

	b.click("the delete button", `#sessions .session .del`)
	b.waitJS("the confirmation", `document.querySelector('#confirm').open`)
	b.click("Delete", `#confirm-ok`)
	b.waitJS("the chat gone", `document.querySelectorAll('#sessions .session').length === 0 && document.querySelector('#title').textContent === 'New chat'`)
	if code := h.call("GET", "/api/v1/sessions/"+session, "", nil); code != http.StatusNotFound {
		t.Fatalf("deleted, the chat reads %d", code)
	}
	b.noScriptErrors()
}

// Keyboard: Shift+Enter is a new line, Enter sends, Esc stops; Copy puts
// the answer on the clipboard.
func TestWebPageKeyboardAndCopy(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	gate := providertest.NewGate()
	defer gate.Release()
	script, shown := heldAnswer("Hmm.", "First words then a long rest of the answer.", 8, 3, gate)
	h.provider.Enqueue(script)
	b.openPage(h)
	b.do("type two lines",
		chromedp.Focus(chromedp.CSS("#question")),
		chromedp.KeyEvent("line one"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.KeyEvent("line two"),
	)
	if v := evalJS[string](b, `document.querySelector('#question').value`); v != "line one\nline two" {
		t.Fatalf("after Shift+Enter the box holds %q", v)
	}
	b.do("Enter", chromedp.KeyEvent(kb.Enter))
	b.waitLast("the first words", `s.Answer === `+jsString(shown))
	if got := evalJS[string](b, `document.querySelector('#messages article.user .bubble').textContent`); got != "line one\nline two" {
		t.Fatalf("sent %q", got)
	}
	b.do("Esc", chromedp.KeyEvent(kb.Escape))
	st := b.waitLast("the stopped answer", `s.Status === 'stopped'`)
	if st.Answer != shown {
		t.Fatalf("stopped answer %q", st.Answer)
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("Esc did not abort the provider call: %v", err)
	}

	// Copy (the test grants no clipboard permission, so the page falls
	// back to a selection copy; reading it back needs the permission).
	b.click("Copy", `#messages article.assistant .act.copy`)
	b.waitJS("copied", `document.querySelector('#messages article.assistant .act.copy').textContent === 'Copied'`)
	b.noScriptErrors()
}

// waitFeedback waits until the API returns that feedback for the message.
func (h *harness) waitFeedback(session, id, rating, reason, comment string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var r, re, c string
		if f := h.feedbackOf(session, id); f != nil {
			r, re, c = f.Rating, f.Reason, f.Comment
		}
		if r == rating && re == reason && c == comment {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("feedback %q %q %q, want %q %q %q", r, re, c, rating, reason, comment)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Thumbs up or down with an optional reason and comment: the page saves
// it through the feedback API, shows it again after a reload, and the
// same thumb again removes it.
func TestWebPageGivesFeedbackOnAnAnswer(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	st, session := b.firstAnswer(h, "What is the answer?", "Forty-two.")
	const bar = `#messages article.assistant .actions `

	b.click("thumbs up", bar+`.thumb.up`)
	b.waitJS("the thumb pressed", `!!document.querySelector('`+bar+`.thumb.up.on') && !!document.querySelector('`+bar+`.feedback-form')`)
	h.waitFeedback(session, st.ID, "up", "", "")
	b.do("comment", chromedp.SendKeys(chromedp.CSS(bar+".feedback-comment"), "Spot on"))
	b.click("send", bar+`.feedback-form button[type=submit]`)
	b.waitJS("thanks", `!!document.querySelector('`+bar+`.feedback-thanks')`)
	h.waitFeedback(session, st.ID, "up", "", "Spot on")

	b.click("thumbs down", bar+`.thumb.down`)
	b.waitJS("the other thumb pressed", `!!document.querySelector('`+bar+`.thumb.down.on') && !document.querySelector('`+bar+`.thumb.up.on')`)
	h.waitFeedback(session, st.ID, "down", "", "")
	b.do("reason and comment",
		chromedp.SetValue(chromedp.CSS(bar+".feedback-reason"), "incorrect"),
		chromedp.SendKeys(chromedp.CSS(bar+".feedback-comment"), "It is 41."))
	b.click("send", bar+`.feedback-form button[type=submit]`)
	h.waitFeedback(session, st.ID, "down", "incorrect", "It is 41.")

	b.do("reload", chromedp.Reload())
	b.waitJS("the saved rating shown", `!!document.querySelector('`+bar+`.thumb.down.on')`)
	b.click("thumbs down again", bar+`.thumb.down`)
	b.waitJS("no thumb pressed", `!!document.querySelector('`+bar+`.thumb.up') && !document.querySelector('`+bar+`.thumb.on')`)
	h.waitFeedback(session, st.ID, "", "", "")
	b.noScriptErrors()
}
