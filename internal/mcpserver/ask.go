package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/message"
	"github.com/chatpipe/chatpipe/internal/run"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// AskInput is ask's arguments.
type AskInput struct {
	Question string `json:"question" jsonschema:"the question to answer from the knowledge base"`
	Mode     string `json:"mode,omitempty" jsonschema:"the chat mode that answers (e.g. rag, agent); default: the server's default mode"`
}

// AskOutput is ask's structured result.
type AskOutput struct {
	Answer     string    `json:"answer" jsonschema:"the answer, citing passages as [n]"`
	Status     string    `json:"status" jsonschema:"completed, stopped or failed"`
	Mode       string    `json:"mode"`
	StreamID   string    `json:"stream_id" jsonschema:"the generation's id (its event stream is GET /api/v1/streams/{id})"`
	References []Passage `json:"references" jsonschema:"the passages cited as [n]"`
}

var askTool = &mcp.Tool{
	Name:  "ask",
	Title: "Ask the knowledge base",
	Description: "Ask a question and get an answer written from the knowledge base, citing its passages as [n], " +
		"with the passages. Progress notifications carry the answer as it is written; cancelling stops it.",
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
}

// stopWait bounds waiting for a stopped generation to save and end.
const stopWait = 10 * time.Second

// ask runs a stateless generation (like POST /api/v1/chat), forwards its
// events as progress notifications, and stops it when the client cancels.
func (t tenantTools) ask(ctx context.Context, req *mcp.CallToolRequest, in AskInput) (*mcp.CallToolResult, AskOutput, error) {
	question := strings.TrimSpace(in.Question)
	setup := t.h.opts.Setup()
	mode := cmp.Or(strings.TrimSpace(in.Mode), setup.DefaultMode)
	out := AskOutput{Mode: mode, References: []Passage{}}
	if question == "" {
		return nil, out, errors.New(`"question" is empty`)
	}
	if max := t.h.opts.Settings().MaxQuestionChars; utf8.RuneCountInString(question) > max {
		return nil, out, fmt.Errorf("the question is longer than %d characters", max)
	}
	if _, ok := setup.Chains[mode]; !ok {
		modes := slices.Sorted(maps.Keys(setup.Chains))
		return nil, out, fmt.Errorf("there is no chat mode %q (modes: %s)", mode, strings.Join(modes, ", "))
	}
	r, err := t.h.opts.Runs.StartStateless(ctx, run.StatelessRequest{TenantID: t.tenant, Mode: mode, Question: question})
	if err != nil {
		t.h.log.Warn("an MCP ask could not start", zap.Error(err))
		return nil, out, errors.New("the answer could not be started; try again later")
	}
	out.StreamID = r.StreamID
	fold, err := t.follow(ctx, req, r)
	if err != nil {
		return nil, out, err
	}
	out.Answer, out.Status = fold.Content(), fold.Status()
	for _, r := range fold.References() {
		out.References = append(out.References, passageOf(r))
	}
	if fold.Status() != eventbus.StatusCompleted {
		msg := cmp.Or(fold.ErrorMessage(), "The answer could not be completed.")
		return nil, out, errors.New(msg)
	}
	return textResult(answerText(out)), out, nil
}

// follow reads the run's stream to its end, sending progress as it goes.
// If ctx ends first (the client cancelled), the run is stopped like
// POST …/stop does, and follow waits for it to end.
func (t tenantTools) follow(ctx context.Context, req *mcp.CallToolRequest, r *run.Run) (*message.Fold, error) {
	sub, err := t.h.opts.Streams.Subscribe(context.WithoutCancel(ctx), r.StreamID, 0)
	if err != nil {
		t.h.opts.Runs.Stop(r.StreamID)
		return nil, errors.New("the answer could not be followed; try again later")
	}
	defer sub.Close()
	token := req.Params.GetProgressToken()
	fold := &message.Fold{}
	var buf []stream.Record
	for {
		recs, done, err := sub.Fetch(buf[:0])
		if err != nil {
			t.h.opts.Runs.Stop(r.StreamID)
			return nil, errors.New("the answer's stream was lost; try again")
		}
		buf = recs
		var note strings.Builder
		var last int64
		for _, rec := range recs {
			ev, err := eventbus.Decode(rec.Data)
			if err != nil {
				continue
			}
			last = ev.Seq
			progress(&note, &ev, fold.Add(&ev))
		}
		if token != nil && note.Len() > 0 {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(last), Message: note.String()})
		}
		if done {
			return fold, nil
		}
		select {
		case <-sub.Ready():
		case <-ctx.Done():
			t.h.opts.Runs.Stop(r.StreamID)
			select {
			case <-r.Done():
			case <-time.After(stopWait):
			}
			return nil, ctx.Err()
		}
	}
}

// progress notes what a progress notification should say about one
// event of the answer: the stages as they start, the answer as it is
// written.
func progress(note *strings.Builder, ev *eventbus.Event, added message.Added) {
	if ev.IsSub() {
		return // a subagent's work (research mode) is not the answer
	}
	if p, ok := ev.Payload.(eventbus.Stage); ok && p.Status == eventbus.StageStarted {
		fmt.Fprintf(note, "[%s] ", p.Name)
	}
	if !added.Thinking {
		note.WriteString(added.Text)
	}
}

// answerText is the answer followed by its sources, as a client shows it.
func answerText(out AskOutput) string {
	var b strings.Builder
	b.WriteString(out.Answer)
	if len(out.References) > 0 {
		b.WriteString("\n\nSources:")
		for _, r := range out.References {
			fmt.Fprintf(&b, "\n[%d] %s", r.Index, title(r.Title))
			if r.Heading != "" {
				b.WriteString(" — " + r.Heading)
			}
			if r.Page > 0 {
				fmt.Fprintf(&b, ", p. %d", r.Page)
			}
			fmt.Fprintf(&b, " (document %s)", r.DocumentID)
		}
	}
	return b.String()
}
