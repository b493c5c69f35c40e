package app_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// The research page in a real browser: the plan, three sub-researchers as
// collapsible nested blocks that show their live progress while they run,
// and the report with its references.
func TestWebPageRendersResearchPlanNestedSubagentsAndReport(t *testing.T) {
	b := newBrowser(t)
	f := newResearchFake()
	f.hold = providertest.NewGate()
	defer f.hold.Release()
	// The default mode, so the page picks it without racing its own start-up.
	h := researchHarness(t, f, func(c *config.Config) { c.DefaultMode = "research" })

	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#question")))
	b.waitJS("the research mode", `document.querySelector('#mode').value === 'research'`)
	b.ask("How are fruits grown?")

	// While the sub-researchers are held mid-call: the plan and three live blocks.
	b.waitJS("the plan", `(() => {
		const a = [...document.querySelectorAll('#messages article.assistant')].pop();
		return !!a && [...a.querySelectorAll('.research-plan li')].map(li => li.textContent).join('|') ===
			'How are apples grown?|How are bananas grown?|How are cherries grown?';
	})()`)
	b.waitJS("three running sub-researchers", `(() => {
		const subs = [...document.querySelectorAll('#messages article.assistant .subagent')];
		return subs.length === 3 && subs.every(s => s.dataset.status === 'started' &&
			s.querySelector('.sub-progress').textContent.includes('knowledge_search'));
	})()`)
	b.screenshot("web-research-running.png")
	f.hold.Release()

	st := b.waitLast("the report", `s.Status === 'completed'`)
	if st.Answer != f.report || len(st.Refs) != 3 || !strings.Contains(st.Refs[1].Text, "Bananas") || len(st.Cites) != 3 {
		t.Fatalf("report %q, references %+v, citation links %v", st.Answer, st.Refs, st.Cites)
	}
	type sub struct {
		Status, Question, Findings string
		Open                       bool
	}
	subs := evalJS[[]sub](b, `[...document.querySelectorAll('#messages article.assistant .subagent')].map(s => ({
		Status: s.dataset.status, Question: s.querySelector('.sub-question').textContent.trim(),
		Findings: s.querySelector('.sub-findings').textContent.trim(), Open: s.open}))`)
	if len(subs) != 3 {
		t.Fatalf("%d sub-researcher blocks", len(subs))
	}
	for i, s := range subs {
		if s.Status != "finished" || s.Question != researchFruits[i].question || !strings.HasPrefix(s.Findings, researchFruits[i].title+" finding") || s.Open {
			t.Fatalf("sub-researcher block %d = %+v", i+1, s)
		}
	}
	b.do("expand a sub-researcher", chromedp.Click(chromedp.CSS(`#messages article.assistant .subagent[data-index="2"] summary`)))
	b.waitJS("the expanded block", `document.querySelector('#messages article.assistant .subagent[data-index="2"]').open`)
	b.screenshot("web-research-report.png")
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		if m.IsException() {
			t.Errorf("console %s: %s", m.Type, m.Text)
		}
	}
}
