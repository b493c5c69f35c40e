package inspect

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/chatpipe/chatpipe/eventbus"
)

// Recorder gathers a Turn while its answer runs. Its methods are safe for
// concurrent use and do nothing on a nil Recorder, so callers never check
// whether the inspector is on.
type Recorder struct {
	mu   sync.Mutex
	turn Turn
}

// NewRecorder starts the record of one answer.
func NewRecorder(messageID, mode, question, traceID string) *Recorder {
	return &Recorder{turn: Turn{MessageID: messageID, Mode: mode, Question: question, TraceID: traceID,
		Stages: []eventbus.Stage{}, ModelCalls: []ModelCall{}, ToolCalls: []ToolCall{}}}
}

func (r *Recorder) update(fn func(t *Turn)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	fn(&r.turn)
	r.mu.Unlock()
}

// Stage records a stage that ended; the rerank stage's detail becomes
// the reason of Rerank.
func (r *Recorder) Stage(s eventbus.Stage) {
	r.update(func(t *Turn) {
		t.Stages = append(t.Stages, s)
		if s.Name == "rerank" && t.Rerank != nil {
			t.Rerank.Reason = s.Detail
		}
	})
}

// Rewritten records the rewrite stage's result.
func (r *Recorder) Rewritten(original, rewritten string) {
	r.update(func(t *Turn) { t.Rewrite = &Rewrite{Original: original, Rewritten: rewritten} })
}

// Searched records retrieval's candidates.
func (r *Recorder) Searched(s Search) {
	r.update(func(t *Turn) { t.Search = &s })
}

// Reranked records what rerank kept; candidates of the search not kept
// are listed as dropped.
func (r *Recorder) Reranked(kept []Kept) {
	r.update(func(t *Turn) {
		rr := &Rerank{Kept: kept}
		if t.Search != nil {
			for _, c := range t.Search.Candidates {
				if !slices.ContainsFunc(kept, func(k Kept) bool { return k.ChunkID == c.ChunkID }) {
					rr.Dropped = append(rr.Dropped, c.ChunkID)
				}
			}
		}
		t.Rerank = rr
	})
}

// Context records numbered passages given to the model: merge's context,
// or (agents) each tool call's references, in order.
func (r *Recorder) Context(passages []eventbus.Reference) {
	r.update(func(t *Turn) { t.Context = append(t.Context, passages...) })
}

// Prompt records the messages of a model call as sent (the last one wins).
func (r *Recorder) Prompt(msgs []Message) {
	r.update(func(t *Turn) { t.Prompt = msgs })
}

// ModelCall records a finished model call.
func (r *Recorder) ModelCall(c ModelCall) {
	r.update(func(t *Turn) { t.ModelCalls = append(t.ModelCalls, c) })
}

// ToolCallEnded records a tool call whose arguments are complete.
func (r *Recorder) ToolCallEnded(id, name, arguments string) {
	r.update(func(t *Turn) {
		t.ToolCalls = append(t.ToolCalls, ToolCall{ID: id, Name: name, Arguments: arguments})
	})
}

// ToolResult records the result of the tool call id.
func (r *Recorder) ToolResult(id, output, status string) {
	r.update(func(t *Turn) {
		for i := range t.ToolCalls {
			if t.ToolCalls[i].ID == id {
				t.ToolCalls[i].Output, t.ToolCalls[i].Status = output, status
				return
			}
		}
		t.ToolCalls = append(t.ToolCalls, ToolCall{ID: id, Output: output, Status: status})
	})
}

// Snapshot returns a copy of the record so far with status set.
func (r *Recorder) Snapshot(status string) Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.turn
	t.Status = status
	return t
}

// textCaps are the lengths long texts are cut to, in turn, until the
// record fits: generous first, then tighter.
var textCaps = []int{4000, 1000, 250, 60}

// Encode returns t as JSON of at most maxBytes (0 = no bound). A record
// too big has its long texts (passages, prompt messages, tool arguments
// and output) cut, then its lists shortened, and says so in Truncated and
// TruncatedNote.
func Encode(t Turn, maxBytes int) ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil || maxBytes <= 0 || len(b) <= maxBytes {
		return b, err
	}
	for _, n := range textCaps {
		c := cut(t, n, -1)
		c.Truncated = true
		c.TruncatedNote = fmt.Sprintf("the record was larger than telemetry.inspector.max_bytes (%d bytes): texts longer than %d characters were cut", maxBytes, n)
		if b, err = json.Marshal(c); err != nil || len(b) <= maxBytes {
			return b, err
		}
	}
	for _, k := range []int{20, 5, 1, 0} {
		c := cut(t, textCaps[len(textCaps)-1], k)
		c.Truncated = true
		c.TruncatedNote = fmt.Sprintf("the record was larger than telemetry.inspector.max_bytes (%d bytes): texts were cut and lists kept to their first %d entries", maxBytes, k)
		if b, err = json.Marshal(c); err != nil || len(b) <= maxBytes {
			return b, err
		}
	}
	// Not even the skeleton fits: keep what identifies the record.
	return json.Marshal(Turn{MessageID: t.MessageID, TraceID: t.TraceID, Mode: t.Mode, Status: t.Status,
		Stages: []eventbus.Stage{}, ModelCalls: []ModelCall{}, ToolCalls: []ToolCall{}, Truncated: true,
		TruncatedNote: fmt.Sprintf("the record did not fit telemetry.inspector.max_bytes (%d bytes) even cut down; only its identity was kept", maxBytes)})
}

// cut returns a copy of t with texts cut to n runes and, when lists >= 0,
// every list cut to that many entries.
func cut(t Turn, n, lists int) Turn {
	short := func(s string) string {
		rs := []rune(s)
		if len(rs) <= n {
			return s
		}
		return string(rs[:n]) + "…"
	}
	limit := func(l int) int {
		if lists < 0 || l < lists {
			return l
		}
		return lists
	}
	t.Question = short(t.Question)
	if t.Rewrite != nil {
		t.Rewrite = &Rewrite{Original: short(t.Rewrite.Original), Rewritten: short(t.Rewrite.Rewritten)}
	}
	if t.Search != nil {
		s := *t.Search
		s.Candidates = slices.Clone(s.Candidates[:limit(len(s.Candidates))])
		for i := range s.Candidates {
			s.Candidates[i].Content = short(s.Candidates[i].Content)
		}
		t.Search = &s
	}
	if t.Rerank != nil {
		rr := *t.Rerank
		rr.Kept = rr.Kept[:limit(len(rr.Kept))]
		rr.Dropped = rr.Dropped[:limit(len(rr.Dropped))]
		t.Rerank = &rr
	}
	t.Context = slices.Clone(t.Context[:limit(len(t.Context))])
	for i := range t.Context {
		t.Context[i].Content = short(t.Context[i].Content)
	}
	t.Prompt = slices.Clone(t.Prompt[:limit(len(t.Prompt))])
	for i := range t.Prompt {
		t.Prompt[i].Content = short(t.Prompt[i].Content)
		t.Prompt[i].ToolCalls = nil
	}
	t.Stages = t.Stages[:limit(len(t.Stages))]
	t.ModelCalls = t.ModelCalls[:limit(len(t.ModelCalls))]
	t.ToolCalls = slices.Clone(t.ToolCalls[:limit(len(t.ToolCalls))])
	for i := range t.ToolCalls {
		t.ToolCalls[i].Arguments = short(t.ToolCalls[i].Arguments)
		t.ToolCalls[i].Output = short(t.ToolCalls[i].Output)
	}
	return t
}
