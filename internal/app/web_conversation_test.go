package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

// The chat page's conversation tree in headless Chromium: regenerate,
// edit, the version switcher (‹ 2/3 ›) and rename, through the messages
// tree API.

// conversationJS is what the page shows of the conversation: each
// message as role: text [i/n].
const conversationJS = `[...document.querySelectorAll('#messages > article')].map(a => {
	const user = a.classList.contains('user');
	const text = user ? a.querySelector('.bubble').textContent : a.querySelector('.answer').innerText;
	const bar = user ? a.querySelector(':scope > .user-actions') : a.querySelector(':scope > .actions');
	const v = bar && bar.querySelector('.versions');
	const count = v && !v.hidden ? ' [' + v.querySelector('.count').textContent + ']' : '';
	return (user ? 'user: ' : 'assistant: ') + text + count;
}).join(' | ')`

func (b *browser) conversation() string {
	b.t.Helper()
	return evalJS[string](b, conversationJS)
}

// waitConversation waits until the page shows exactly that conversation
// with no answer streaming.
func (b *browser) waitConversation(what, want string) {
	b.t.Helper()
	b.waitJS(what, `(`+conversationJS+`) === `+jsString(want)+` && !document.querySelector('#send').hidden &&
		!document.querySelector('#messages article.assistant[data-status=streaming]')`)
}

// promptOf lists a provider request's user and assistant messages as
// role:content, the history the model was given.
func promptOf(r providertest.Request) []string {
	var out []string
	for _, m := range r.Body["messages"].([]any) {
		msg := m.(map[string]any)
		if role := msg["role"]; role == "user" || role == "assistant" {
			out = append(out, fmt.Sprint(role, ":", msg["content"]))
		}
	}
	return out
}

// retype empties the text box, focuses it and types text, as a user
// would.
func (b *browser) retype(selector, text string) {
	b.t.Helper()
	evalJS[bool](b, `(() => { const e = document.querySelector(`+jsString(selector)+`); e.value = ''; e.focus(); return true; })()`)
	b.do("type "+text, chromedp.KeyEvent(text))
}

func lastPrompt(h *harness) []string {
	reqs := h.provider.Requests()
	return promptOf(reqs[len(reqs)-1])
}

// Regenerate a completed and a failed answer, edit a question, and switch
// between the versions: the page shows the branch the server keeps, and
// the model is sent only the branch being answered.
func TestWebPageRegeneratesEditsAndSwitchesBranches(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	b.openPage(h)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("First answer.", 2)})
	b.ask("Question one")
	b.waitConversation("the first answer", "user: Question one | assistant: First answer.")
	b.waitJS("Edit under the question just asked", `!!document.querySelector('#messages article.user .act.edit')`)

	// Regenerate a completed answer: a second version, shown as 2/2.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Second answer.", 2)})
	b.click("Regenerate", `#messages article.assistant .act.regenerate`)
	b.waitConversation("the regenerated answer", "user: Question one | assistant: Second answer. [2/2]")
	if got := lastPrompt(h); strings.Join(got, "|") != "user:Question one" {
		t.Fatalf("regenerating sent %v", got)
	}
	b.click("previous version", `#messages article.assistant .versions .prev`)
	b.waitConversation("version 1", "user: Question one | assistant: First answer. [1/2]")
	b.click("next version", `#messages article.assistant .versions .next`)
	b.waitConversation("version 2", "user: Question one | assistant: Second answer. [2/2]")

	// A failed answer can be regenerated too.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Content("Half", 1),
		MidStreamError: &providertest.StreamError{After: 1, ErrorObject: providertest.ErrorObject{Message: "upstream broke", Type: "server_error"}}})
	b.ask("Question two")
	b.waitLast("the failed answer", `s.Status === 'failed'`)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Two, answered.", 2)})
	b.click("Regenerate the failed answer", `#messages article.assistant:last-of-type .act.regenerate`)
	b.waitConversation("the failed answer regenerated",
		"user: Question one | assistant: Second answer. [2/2] | user: Question two | assistant: Two, answered. [2/2]")
	if got := lastPrompt(h); strings.Join(got, "|") != "user:Question one|assistant:Second answer.|user:Question two" {
		t.Fatalf("regenerating the failed answer sent %v", got)
	}

	// Edit the first question: a new branch from the start; the old one stays.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Edited answer.", 2)})
	b.click("Edit", `#messages article.user .act.edit`)
	b.waitJS("the edit box", `!!document.querySelector('#messages article.user form.edit textarea')`)
	b.retype("#messages article.user form.edit textarea", "Question one, edited")
	b.do("send the edit", chromedp.KeyEvent(kb.Enter))
	b.waitConversation("the edited branch", "user: Question one, edited [2/2] | assistant: Edited answer.")
	if got := lastPrompt(h); strings.Join(got, "|") != "user:Question one, edited" {
		t.Fatalf("the edited question sent %v", got)
	}
	b.click("the old question", `#messages article.user .versions .prev`)
	b.waitConversation("the old branch, to its newest answer",
		"user: Question one [1/2] | assistant: Second answer. [2/2] | user: Question two | assistant: Two, answered. [2/2]")

	// Asking on the old branch continues it: the model gets that branch.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Three.", 1)})
	b.ask("Question three")
	b.waitLast("the answer on the old branch", `s.Status === 'completed' && s.Answer === 'Three.'`)
	if got := lastPrompt(h); strings.Join(got, "|") != "user:Question one|assistant:Second answer.|user:Question two|assistant:Two, answered.|user:Question three" {
		t.Fatalf("asking on the old branch sent %v", got)
	}
	// The question just asked can be edited at once: it follows the answer
	// before it.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Three again.", 1)})
	b.click("Edit the last question", `#messages article.user:nth-last-of-type(2) .act.edit`)
	b.retype("#messages article.user form.edit textarea", "Question three, edited")
	b.do("send the edit", chromedp.KeyEvent(kb.Enter))
	const oldBranch = "user: Question one [1/2] | assistant: Second answer. [2/2] | user: Question two | assistant: Two, answered. [2/2]"
	b.waitConversation("the last question edited", oldBranch+" | user: Question three, edited [2/2] | assistant: Three again.")
	if got := lastPrompt(h); strings.Join(got, "|") != "user:Question one|assistant:Second answer.|user:Question two|assistant:Two, answered.|user:Question three, edited" {
		t.Fatalf("the edited last question sent %v", got)
	}
	b.do("reload", chromedp.Reload())
	b.waitConversation("the branch after a reload", oldBranch+" | user: Question three, edited [2/2] | assistant: Three again.")
	b.click("the edited question", `#messages article.user .versions .next`)
	b.waitConversation("the edited branch again", "user: Question one, edited [2/2] | assistant: Edited answer.")
	b.screenshot("web-branches.png")
	b.noScriptErrors()
}

// Rename from the top bar: the title changes in the page and the list,
// and the server keeps it, as it keeps the mode chosen for the chat.
func TestWebPageRenamesAChat(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t)
	_, session := b.firstAnswer(h, "Greetings", "Hello.")
	b.click("rename", `#rename`)
	b.waitJS("the title box", `document.activeElement && document.activeElement.id === 'rename-input'`)
	b.retype("#rename-input", "Small talk")
	b.do("save the title", chromedp.KeyEvent(kb.Enter))
	b.waitJS("the new title", `document.querySelector('#title').textContent === 'Small talk' && !document.querySelector('#rename-form') &&
		document.querySelector('#sessions .session.active .open').textContent === 'Small talk'`)
	var s struct{ Title, Mode string }
	h.call("GET", "/api/v1/sessions/"+session, "", &s)
	if s.Title != "Small talk" {
		t.Fatalf("the server has the title %q", s.Title)
	}
	// Esc leaves the title as it was.
	b.click("rename", `#rename`)
	b.waitJS("the title box", `document.activeElement && document.activeElement.id === 'rename-input'`)
	b.do("type and cancel", chromedp.KeyEvent("Other title"), chromedp.KeyEvent(kb.Escape))
	b.waitJS("the title kept", `document.querySelector('#title').textContent === 'Small talk' && !document.querySelector('#rename-form')`)
	// The mode chosen for the chat is kept with it.
	evalJS[bool](b, `(() => { const m = document.querySelector('#mode'); m.value = 'rag'; m.dispatchEvent(new Event('change')); return true; })()`)
	deadline := time.Now().Add(10 * time.Second)
	for s.Mode != "rag" {
		if time.Now().After(deadline) {
			t.Fatalf("the server has the mode %q", s.Mode)
		}
		time.Sleep(20 * time.Millisecond)
		h.call("GET", "/api/v1/sessions/"+session, "", &s)
	}
	b.do("reload", chromedp.Reload())
	b.waitJS("the title and mode after a reload", `document.querySelector('#title').textContent === 'Small talk' &&
		document.querySelector('#mode').value === 'rag'`)
	b.noScriptErrors()
}

// The title the model writes for a new chat replaces the question in the
// top bar and the list without a reload; a rename is never overwritten.
func TestWebPageShowsTheGeneratedTitle(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t, withTitles)
	answersFor(h.provider, 0, reply("Feeding a sourdough starter"), providertest.Script{})
	b.openPage(h)
	b.ask("how often should i feed my starter")
	b.waitLast("the answer", `s.Status === 'completed'`)
	b.waitJS("the generated title", `document.querySelector('#title').textContent === 'Feeding a sourdough starter' &&
		document.querySelector('#sessions .session.active .open').textContent === 'Feeding a sourdough starter' &&
		document.title.startsWith('Feeding a sourdough starter')`)
	if n := len(requestsWith(h.provider, titleMarker)); n != 1 {
		t.Fatalf("%d title requests", n)
	}
	b.noScriptErrors()
}
