package app_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

func TestWhyThisAnswerPanelShowsTheStagesOfARagAnswerInARealBrowser(t *testing.T) {
	b := newBrowser(t)
	h := newHarness(t, ragMode)
	h.addDocument("Starter care", sourdough)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Feed the starter twice a day [1].", 4),
		Usage: &providertest.Usage{PromptTokens: 88, CompletionTokens: 8}})
	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the modes", `document.querySelector('#mode').value === 'rag'`)
	b.ask("How often should I feed the sourdough starter?")
	b.waitLast("a completed answer", `s.Status === 'completed'`)
	b.waitJS("the button on the finished answer", `!!document.querySelector('#messages article.assistant:last-of-type > button.why')`)
	b.do("open the panel", chromedp.Click(chromedp.CSS("#messages article.assistant:last-of-type > button.why")))
	b.waitJS("the panel's stages", `!!document.querySelector('#inspector:not([hidden]) [data-section="stages"] tbody tr')`)
	type panel struct {
		Stages     []string
		Candidates []string
		Rerank     string
		Context    string
		Prompt     int
		Calls      []string
	}
	p := evalJS[panel](b, `(() => {
		const sec = name => document.querySelector('#inspector [data-section="' + name + '"]');
		const rows = name => sec(name) ? [...sec(name).querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|')) : [];
		return {
			Stages: rows('stages'), Candidates: rows('candidates'),
			Rerank: sec('rerank') ? sec('rerank').innerText : '',
			Context: sec('context') ? sec('context').innerText : '',
			Prompt: sec('prompt') ? sec('prompt').querySelectorAll('details').length : 0,
			Calls: rows('model-calls'),
		};
	})()`)
	var stages []string
	for _, r := range p.Stages {
		stages = append(stages, strings.SplitN(r, "|", 2)[0])
	}
	if got := strings.Join(stages, " "); got != "load_history rewrite search rerank merge generate" {
		t.Errorf("panel stages = %q (rows %q)", got, p.Stages)
	}
	if len(p.Candidates) == 0 || !strings.Contains(p.Candidates[0], "Starter care") {
		t.Errorf("panel candidates = %q", p.Candidates)
	}
	if !strings.Contains(p.Rerank, "kept") || !strings.Contains(p.Context, "[1] Starter care") || p.Prompt < 2 {
		t.Errorf("panel rerank %q, context %q, prompt messages %d", p.Rerank, p.Context, p.Prompt)
	}
	if len(p.Calls) != 1 || !strings.Contains(p.Calls[0], "generate|fake-model") || !strings.Contains(p.Calls[0], "88 → 8") {
		t.Errorf("panel model calls = %q", p.Calls)
	}
	b.screenshot("web-why-this-answer.png")
	b.do("close the panel", chromedp.Click(chromedp.CSS("#inspector .insp-close")))
	b.waitJS("the panel closed", `document.querySelector('#inspector').hidden`)
}
