package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/think"
)

// Titles configure the title a session gets after its first question.
type Titles struct {
	Enabled  bool
	Model    string // a model entry; "" = no model: the trimmed question
	Prompt   string // {question} is the question
	MaxChars int
	Timeout  time.Duration
}

// Title sources in session.updated.
const (
	titleGenerated = "generated"
	titleFallback  = "fallback"
)

// titleAfterFirstToken arranges for the session's title to be written
// once the run's first token (thinking or answer) has gone out, so that
// the title call never competes with the time to first token; a run that
// ends before any token starts it at its end (fire).
func (m *Manager) titleAfterFirstToken(r *Run, g *guard, t Titles, models chatmodel.Source, sessionID, question string) {
	var once sync.Once
	r.startTitle = func() { once.Do(func() { m.startTitle(r.bg, t, models, sessionID, question) }) }
	// Block starts come once per block, right before its first delta:
	// nothing runs per token. Starting a job publishes nothing on the bus.
	g.bus.Subscribe(func(*eventbus.Event) { r.startTitle() }, eventbus.TypeThinkingStart, eventbus.TypeAnswerStart)
}

// startTitle gives the session a title off the token path, while its
// first answer streams: the model's, or the question trimmed when the
// model is the demo one or fails. The title never replaces one the user
// set (SetGeneratedTitle refuses it), and session.updated announces it on
// the stream when it arrives before the stream ends.
func (m *Manager) startTitle(bg *background, t Titles, models chatmodel.Source, sessionID, question string) {
	bg.Go("title", func(ctx context.Context) ([]eventbus.Event, error) {
		title, source, cause := generateTitle(ctx, t, models, question)
		if ctx.Err() != nil {
			return nil, ctx.Err() // shutting down: the next read shows the old title
		}
		saveCtx, cancel := context.WithTimeout(ctx, saveTimeout)
		defer cancel()
		applied, err := m.opts.History.SetGeneratedTitle(saveCtx, sessionID, title)
		if err != nil && !errors.Is(err, history.ErrNotFound) {
			return nil, errors.Join(cause, fmt.Errorf("save title: %w", err))
		}
		if !applied {
			return nil, cause // the user named the session meanwhile, or deleted it
		}
		return []eventbus.Event{eventbus.Of(eventbus.TypeSessionUpdated, eventbus.SessionUpdated{
			SessionID: sessionID, Title: title, TitleSource: source})}, cause
	})
}

// generateTitle asks t's model for a title. It always returns one: on
// the demo model, no model or a failure (then cause says why) the
// question, trimmed.
func generateTitle(ctx context.Context, t Titles, models chatmodel.Source, question string) (title, source string, cause error) {
	fallback := trimTitle(question, t.MaxChars)
	if t.Model == "" {
		return fallback, titleFallback, nil
	}
	m, err := models.ChatModel(t.Model)
	if err != nil {
		return fallback, titleFallback, err
	}
	if m.Provider == "demo" {
		return fallback, titleFallback, nil
	}
	callCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	prompt := strings.ReplaceAll(t.Prompt, "{question}", question)
	reply, err := m.Model.Generate(callCtx, []*schema.Message{schema.UserMessage(prompt)}, m.Options...)
	if err != nil {
		return fallback, titleFallback, fmt.Errorf("title model %q: %w", m.Name, err)
	}
	if title = cleanTitle(reply.Content, t.MaxChars); title == "" {
		return fallback, titleFallback, fmt.Errorf("title model %q gave no title", m.Name)
	}
	return title, titleGenerated, nil
}

// cleanTitle reads a model's title tolerantly: reasoning dropped, the
// first line with text, without a "Title:" label, markdown marks, quotes
// or a final period.
func cleanTitle(reply string, maxChars int) string {
	for line := range strings.SplitSeq(think.StripBlocks(reply), "\n") {
		line = strings.Trim(strings.TrimSpace(line), "#*_`>- ")
		if label, rest, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(label), "title") {
			line = rest
		}
		for before := ""; before != line; { // quotes and a final period, in any order
			before = line
			line = strings.TrimRight(strings.TrimSpace(strings.Trim(strings.TrimSpace(line), `"'“”‘’「」『』*`)), ".。")
		}
		if line != "" {
			return trimTitle(line, maxChars)
		}
	}
	return ""
}

// trimTitle makes text one line of at most maxChars characters, cut at a
// word where there is one, with "…" marking the cut.
func trimTitle(text string, maxChars int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= maxChars {
		return text
	}
	cut, n := 0, 0
	for i := range text {
		if n == maxChars-1 {
			cut = i
			break
		}
		n++
	}
	head := text[:cut]
	// Back to the last space, unless that loses most of the title (a
	// language written without spaces, or one very long word).
	if i := strings.LastIndexFunc(head, unicode.IsSpace); i > len(head)/2 {
		head = head[:i]
	}
	return strings.TrimRightFunc(head, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) + "…"
}
