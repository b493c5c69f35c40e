package plugins

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/tokens"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/tools"
)

// The stages of the research mode (the report is its generate stage).
const (
	StagePlan     pipeline.EventType = "plan"
	StageResearch pipeline.EventType = "research"
)

// Agents named in the origin chain of research events.
const (
	AgentPlan = "plan" // the planner's model call
	AgentSub  = "sub"  // a sub-researcher
)

// researchKey is the ChatManage value under which the research plugins
// hand their state on.
type researchKey struct{}

// research is one research answer's state: research_plan sets the
// question and plan, research_run the findings, research_report reads
// them. Only usage is written concurrently (by the sub-researchers).
type research struct {
	question  string   // what is researched (with the answer to a clarification)
	questions []string // the plan's sub-questions
	findings  []finding

	start time.Time     // when the research began
	ttft  time.Duration // from start to the report's first token (0 = none yet)

	mu    sync.Mutex
	usage eventbus.Usage // every model call of the plan and the sub-researchers
}

// researchOf returns the request's research state, creating it.
func researchOf(cm *pipeline.ChatManage) *research {
	if st, ok := cm.Value(researchKey{}).(*research); ok {
		return st
	}
	st := &research{question: cm.SearchQuery(), start: time.Now()}
	cm.SetValue(researchKey{}, st)
	return st
}

func (st *research) addUsage(u eventbus.Usage) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.usage.PromptTokens += u.PromptTokens
	st.usage.CompletionTokens += u.CompletionTokens
	st.usage.ReasoningTokens += u.ReasoningTokens
	st.usage.Estimated = st.usage.Estimated || u.Estimated
}

// totalUsage is the usage of the whole research: every model call's
// tokens, the time since it began, and the time to the report's first
// token.
func (st *research) totalUsage() eventbus.Usage {
	st.mu.Lock()
	defer st.mu.Unlock()
	u := st.usage
	u.TotalMS = time.Since(st.start).Milliseconds()
	u.TTFTMS = st.ttft.Milliseconds()
	return u
}

// finding is what one sub-researcher found.
type finding struct {
	question string
	text     string               // its answer, citing refs as [n]
	refs     []eventbus.Reference // the passages it found, numbered 1..n
	failure  string               // why it has no findings ("" = it has)
	cut      string               // why it ended early, its text being what it wrote by then
}

// compiled is the findings carried into one numbering: the union of every
// sub-researcher's references, each finding's text renumbered against it.
type compiled struct {
	refs  []eventbus.Reference
	texts []string
}

// compile numbers the union of the findings' references (a passage found
// by several sub-researchers keeps one number) and renumbers each text's
// citations to it.
func compile(findings []finding) compiled {
	union := tools.NewReferences(nil)
	out := compiled{texts: make([]string, len(findings))}
	for i, f := range findings {
		global := union.Add(f.refs)
		to := make(map[int]int, len(global))
		for j, r := range f.refs {
			to[r.Index] = global[j].Index
		}
		out.texts[i] = citation.Renumber(f.text, func(n int) int { return to[n] })
	}
	out.refs = union.Items()
	return out
}

// compact shortens texts so that together they take at most budget
// tokens: short texts are kept whole and the rest share what is left
// equally (water filling), each cut at a word and marked as shortened.
func compact(texts []string, budget int) []string {
	out := slices.Clone(texts)
	sizes := make([]int, len(texts))
	total := 0
	for i, t := range texts {
		sizes[i] = tokens.Estimate(t)
		total += sizes[i]
	}
	if budget <= 0 || total <= budget {
		return out
	}
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return sizes[a] - sizes[b] })
	left := budget
	for k, i := range order {
		share := left / (len(order) - k)
		if sizes[i] <= share {
			left -= sizes[i]
			continue
		}
		out[i] = cutToTokens(texts[i], share) + " … (shortened)"
		left -= share
	}
	return out
}

// cutToTokens returns the longest prefix of s ending at a space that
// takes at most n tokens.
func cutToTokens(s string, n int) string {
	if n <= 0 {
		return ""
	}
	lo, hi := 0, len(s) // the answer is a byte length in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if tokens.Estimate(s[:mid]) <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	cut := s[:lo]
	if lo < len(s) {
		if sp := strings.LastIndexAny(cut, " \n"); sp > 0 {
			cut = cut[:sp]
		}
	}
	return strings.ToValidUTF8(strings.TrimSpace(cut), "")
}

// formatFindings writes the findings for a prompt or a saved summary:
// each sub-question as a heading with its (renumbered) findings, or what
// is missing.
func formatFindings(findings []finding, texts []string) string {
	var b strings.Builder
	for i, f := range findings {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "### %d. %s\n", i+1, f.question)
		switch {
		case f.failure != "":
			fmt.Fprintf(&b, "(no findings: %s)", f.failure)
		case strings.TrimSpace(texts[i]) == "":
			b.WriteString("(no findings)")
		default:
			b.WriteString(strings.TrimSpace(texts[i]))
			if f.cut != "" {
				fmt.Fprintf(&b, "\n(incomplete: %s)", f.cut)
			}
		}
	}
	return b.String()
}

// formatSources lists the references as "[n] Title — heading" lines.
func formatSources(refs []eventbus.Reference) string {
	lines := make([]string, len(refs))
	for i, r := range refs {
		lines[i] = fmt.Sprintf("[%d] %s", r.Index, citation.Label(citation.Passage{Index: r.Index, Title: r.Title, Heading: r.Heading}))
	}
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, "\n")
}

// originEmitter is the emitter of a subagent (the planner's call, a
// sub-researcher): it stamps every event with the subagent's origin chain
// (its hops before any the event already has, so nested subagents add
// hops) and passes it on, and it keeps what the research needs from the
// subagent's own events — its answer text, its references, its usage,
// the tokens it streamed — and which of its blocks are open (its nested
// subagents' too), so that they are closed when it ends however it ends.
// Safe for concurrent use; each subagent's events stay in their order.
type originEmitter struct {
	out  eventbus.Emitter
	hops []eventbus.Hop
	st   *research
	// budget, when positive, is the tokens the subagent may stream; over
	// it, over is called once.
	budget int
	over   func()

	mu       sync.Mutex
	answer   strings.Builder
	refs     []eventbus.Reference
	streamed tokens.Counter
	overrun  bool
	open     eventbus.OpenBlocks // tracked before the origin is stamped
}

func newOriginEmitter(out eventbus.Emitter, st *research, hops ...eventbus.Hop) *originEmitter {
	return &originEmitter{out: out, st: st, hops: slices.Clip(hops)}
}

// Emit implements eventbus.Emitter.
func (e *originEmitter) Emit(ev eventbus.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.open.Track(&ev)
	if ev.IsSub() {
		ev.Origin = append(e.hops, ev.Origin...) // hops is clipped: this copies
	} else {
		e.keep(&ev)
		ev.Origin = e.hops
	}
	e.out.Emit(ev)
}

// keep notes what the research needs from one of the subagent's own
// events; e.mu is held.
func (e *originEmitter) keep(ev *eventbus.Event) {
	switch ev.Type {
	case eventbus.TypeAnswerDelta:
		e.answer.WriteString(ev.Text)
	case eventbus.TypeReferences:
		if r, ok := ev.Payload.(eventbus.References); ok {
			e.refs = r.Items
		}
	case eventbus.TypeUsage:
		if u, ok := ev.Payload.(eventbus.Usage); ok && e.st != nil {
			e.st.addUsage(u)
		}
	}
	if e.budget > 0 && !e.overrun {
		switch ev.Type {
		case eventbus.TypeThinkingDelta, eventbus.TypeAnswerDelta:
			e.streamed.Add(ev.Text)
		case eventbus.TypeToolCallDelta:
			if tc, ok := ev.Payload.(eventbus.ToolCall); ok {
				e.streamed.Add(tc.Arguments)
			}
		}
		if e.streamed.Tokens() > e.budget {
			e.overrun = true
			e.over()
		}
	}
}

// closeOpen ends the subagent's blocks still open (a call stopped in the
// middle of a tool call's arguments leaves that call open), by the rules
// every ending follows (a tagged thinking block gets its </think>).
func (e *originEmitter) closeOpen() {
	e.mu.Lock()
	evs := e.open.Close()
	e.mu.Unlock()
	for _, ev := range evs {
		e.Emit(ev)
	}
}

// result returns the answer text and references the subagent emitted.
func (e *originEmitter) result() (string, []eventbus.Reference) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.answer.String(), e.refs
}

// emitRootAnswer emits text as one answer block of the main answer.
func emitRootAnswer(out eventbus.Emitter, text string) {
	out.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
	out.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, text))
	out.Emit(eventbus.Event{Type: eventbus.TypeAnswerEnd})
}

// usageSink passes the report call's events on, except its usage, which
// it adds to the research's total instead, and notes when the report's
// first token came.
type usageSink struct {
	eventbus.Emitter
	st *research
}

func (u usageSink) Emit(ev eventbus.Event) {
	if p, ok := ev.Payload.(eventbus.Usage); ok && ev.Type == eventbus.TypeUsage && !ev.IsSub() {
		u.st.addUsage(p)
		return
	}
	if ev.Type.IsText() {
		u.st.mu.Lock()
		if u.st.ttft == 0 {
			u.st.ttft = max(time.Since(u.st.start), time.Nanosecond)
		}
		u.st.mu.Unlock()
	}
	u.Emitter.Emit(ev)
}
