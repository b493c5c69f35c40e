package plugins

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("sensitive_filter", newSensitiveFilter) }

// CodeContentFiltered is the error code of an answer sensitive_filter
// stopped.
const CodeContentFiltered = "content_filtered"

// ErrContentFiltered is the cause of an answer stopped by sensitive_filter.
var ErrContentFiltered = errors.New("sensitive_filter: stop word in the answer")

// Filter list actions.
const (
	ActionMask   = "mask"   // replace each character of a match with *, everywhere
	ActionRefuse = "refuse" // a question containing a match is answered with the refusal, without the model
	ActionStop   = "stop"   // an answer (or thinking) containing a match is ended with content_filtered
)

// SensitiveFilterConfig is the `plugins.sensitive_filter` section.
type SensitiveFilterConfig struct {
	Lists []FilterList `mapstructure:"lists"`
	// Refusal is the answer to a refused question.
	Refusal string `mapstructure:"refusal"`
	// StopMessage is the message of the content_filtered error that ends
	// a stopped answer.
	StopMessage string `mapstructure:"stop_message"`
	// MaxHold bounds, in characters, what a regular expression may hold
	// back while a match could still grow (words hold back no more than
	// their own length anyway).
	MaxHold int `mapstructure:"max_hold"`
}

// FilterList is one list of words and patterns sharing an action.
type FilterList struct {
	Action string   `mapstructure:"action"` // mask | refuse | stop
	Words  []string `mapstructure:"words"`  // words and phrases, matched anywhere, ignoring case
	// File names a file with more words, one per line; blank lines and
	// lines starting with # are skipped.
	File string `mapstructure:"file"`
	// Patterns are regular expressions (RE2 syntax), matched ignoring
	// case; \b works across deltas, ^ and $ are not meaningful in a stream.
	Patterns []string `mapstructure:"patterns"`
}

// SensitiveFilter checks the question and the streamed thinking and answer
// against word lists and patterns. mask lists are masked everywhere: in
// the question the later plugins and the model see, and in the output;
// refuse lists refuse a question (the refusal is the answer, no model is
// called, the stream completes normally); stop lists end an answer whose
// thinking or text contains a match with the error content_filtered,
// keeping (and saving) the text before the match.
//
// Output is filtered where it is emitted, so what is saved is what the
// client saw. A match split across deltas is caught: the filter holds back
// only the end of the text that could still begin a match (a few
// characters for words) and releases it with the next delta, at the end
// of the block, or at the end of the answer.
type SensitiveFilter struct {
	cfg      SensitiveFilterConfig
	question *matcher // mask and refuse lists; nil when empty
	output   *matcher // mask and stop lists; nil when empty
}

func newSensitiveFilter(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := SensitiveFilterConfig{
		Refusal:     config.DefaultRefusal,
		StopMessage: config.DefaultStopMessage,
		MaxHold:     64,
	}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	if cfg.MaxHold < 1 {
		return nil, fmt.Errorf("%s.max_hold: must be at least 1", c.Key)
	}
	if strings.TrimSpace(cfg.Refusal) == "" || strings.TrimSpace(cfg.StopMessage) == "" {
		return nil, fmt.Errorf("%s: refusal and stop_message must not be empty", c.Key)
	}
	var maskWords, refuseWords, stopWords []string
	var maskPatterns, refusePatterns, stopPatterns []compiledPattern
	for i, l := range cfg.Lists {
		key := fmt.Sprintf("%s.lists[%d]", c.Key, i)
		words, err := listWords(l)
		if err != nil {
			return nil, fmt.Errorf("%s.file: %w", key, err)
		}
		if len(words) == 0 && len(l.Patterns) == 0 {
			return nil, fmt.Errorf("%s: lists no words, file or patterns", key)
		}
		var patterns []compiledPattern
		for j, pat := range l.Patterns {
			cp, err := compilePattern(pat, l.Action != ActionMask)
			if err != nil {
				return nil, fmt.Errorf("%s.patterns[%d]: %w", key, j, err)
			}
			patterns = append(patterns, cp)
		}
		switch l.Action {
		case ActionMask:
			maskWords, maskPatterns = append(maskWords, words...), append(maskPatterns, patterns...)
		case ActionRefuse:
			refuseWords, refusePatterns = append(refuseWords, words...), append(refusePatterns, patterns...)
		case ActionStop:
			stopWords, stopPatterns = append(stopWords, words...), append(stopPatterns, patterns...)
		default:
			return nil, fmt.Errorf("%s.action: %q is not one of mask, refuse, stop", key, l.Action)
		}
	}
	p := &SensitiveFilter{cfg: cfg}
	if m := newMatcher(maskWords, refuseWords, append(maskPatterns, refusePatterns...), cfg.MaxHold); !m.empty() {
		p.question = m
	}
	if m := newMatcher(maskWords, stopWords, append(maskPatterns, stopPatterns...), cfg.MaxHold); !m.empty() {
		p.output = m
	}
	return p, nil
}

// listWords returns a list's words and its file's, trimmed, empty ones left out.
func listWords(l FilterList) ([]string, error) {
	var words []string
	for _, w := range l.Words {
		if w = strings.TrimSpace(w); w != "" {
			words = append(words, w)
		}
	}
	if l.File == "" {
		return words, nil
	}
	data, err := os.ReadFile(l.File)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if w := strings.TrimSpace(sc.Text()); w != "" && !strings.HasPrefix(w, "#") {
			words = append(words, w)
		}
	}
	return words, sc.Err()
}

// Name implements pipeline.Plugin.
func (p *SensitiveFilter) Name() string { return "sensitive_filter" }

// Events implements pipeline.Plugin.
func (p *SensitiveFilter) Events() []pipeline.EventType {
	return []pipeline.EventType{"sensitive_filter"}
}

// OnEvent implements pipeline.Plugin.
func (p *SensitiveFilter) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	if p.question == nil && p.output == nil {
		cm.SkipStage("no lists configured")
		return next()
	}
	// Before: the question.
	if p.question != nil {
		masked := false
		for _, q := range []*string{&cm.Query, &cm.RewrittenQuery} {
			text, refused := checkText(p.question, *q)
			if refused {
				cm.StageDetail("question refused")
				cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
				cm.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, p.cfg.Refusal))
				cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerEnd})
				return nil // short-circuit: no model call
			}
			masked = masked || text != *q
			*q = text
		}
		if masked {
			cm.StageDetail("question masked")
		}
	}
	if p.output == nil {
		return next()
	}

	// Around next(): the output, through a filtering emitter, on a context
	// the filter can cancel to stop the model.
	rest, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f := &outputFilter{inner: cm.Emitter, cancel: cancel,
		answer: scanner{m: p.output}, thinking: scanner{m: p.output}}
	cm.Emitter = f
	cm.SetNextContext(rest)
	perr := next()
	f.close()
	cm.Emitter = f.inner // after: restore the emitter
	if f.isStopped() {
		return &pipeline.PluginError{Code: CodeContentFiltered, Message: p.cfg.StopMessage, Err: ErrContentFiltered}
	}
	return perr
}

// checkText filters a whole text at once: the masked text, or blocked.
func checkText(m *matcher, text string) (string, bool) {
	if text == "" {
		return "", false
	}
	s := scanner{m: m}
	out, blocked := s.write(text)
	if blocked {
		return "", true
	}
	rest, blocked := s.flush()
	return out + rest, blocked
}

// outputFilter is the emitter sensitive_filter puts in front of the rest
// of the chain: it filters thinking and answer deltas and, once a stop
// word is found, closes the open blocks, cancels the rest of the chain and
// drops its further output. Think tags (eventbus.ThinkOpenTag and
// ThinkCloseTag) pass the filter untouched.
type outputFilter struct {
	inner  eventbus.Emitter
	cancel context.CancelCauseFunc

	mu            sync.Mutex
	answer        scanner
	thinking      scanner
	thinkingFirst bool                // the next thinking delta is the block's first
	open          eventbus.OpenBlocks // the blocks of what was passed on
	stopped       bool
}

// Emit implements eventbus.Emitter.
func (f *outputFilter) Emit(ev eventbus.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		f.afterStop(ev)
		return
	}
	switch ev.Type {
	case eventbus.TypeAnswerDelta:
		f.flush(&f.thinking, eventbus.TypeThinkingDelta)
		f.write(&f.answer, ev, "", ev.Text)
	case eventbus.TypeThinkingDelta:
		f.flush(&f.answer, eventbus.TypeAnswerDelta)
		switch {
		case ev.Text == eventbus.ThinkCloseTag:
			f.flush(&f.thinking, eventbus.TypeThinkingDelta)
			f.passThrough(ev)
		case f.thinkingFirst && strings.HasPrefix(ev.Text, eventbus.ThinkOpenTag):
			f.thinkingFirst = false
			f.write(&f.thinking, ev, eventbus.ThinkOpenTag, ev.Text[len(eventbus.ThinkOpenTag):])
		default:
			f.thinkingFirst = false
			f.write(&f.thinking, ev, "", ev.Text)
		}
	default:
		f.flush(&f.thinking, eventbus.TypeThinkingDelta)
		f.flush(&f.answer, eventbus.TypeAnswerDelta)
		if f.stopped {
			f.afterStop(ev)
			return
		}
		if ev.Type == eventbus.TypeThinkingStart {
			f.thinkingFirst = true
		}
		f.passThrough(ev)
	}
}

// write filters text of a delta through s, emitting what may be released
// (after prefix) and stopping on a stop word.
func (f *outputFilter) write(s *scanner, ev eventbus.Event, prefix, text string) {
	out, blocked := s.write(text)
	if out = prefix + out; out != "" {
		ev.Text = out
		f.passThrough(ev)
	}
	if blocked {
		f.stop()
	}
}

// flush releases what s holds as a delta of type t.
func (f *outputFilter) flush(s *scanner, t eventbus.Type) {
	if f.stopped {
		return
	}
	out, blocked := s.flush()
	if out != "" {
		f.passThrough(eventbus.Delta(t, out))
	}
	if blocked {
		f.stop()
	}
}

// passThrough emits ev, noting the blocks it opens or closes.
func (f *outputFilter) passThrough(ev eventbus.Event) {
	f.open.Track(&ev)
	f.inner.Emit(ev)
}

// stop ends the output: the open blocks are closed as the client expects
// them (the tool calls too: their further events are dropped), and the
// rest of the chain is cancelled.
func (f *outputFilter) stop() {
	f.stopped = true
	for _, ev := range f.open.Close() {
		f.inner.Emit(ev)
	}
	f.cancel(ErrContentFiltered)
}

// afterStop drops the output of a stopped answer (text blocks, tool
// calls) and lets the rest (stages, usage) through.
func (f *outputFilter) afterStop(ev eventbus.Event) {
	switch {
	case ev.Type.IsText(), ev.Type == eventbus.TypeToolCallStart, ev.Type == eventbus.TypeToolCallDelta,
		ev.Type == eventbus.TypeToolCallEnd, ev.Type == eventbus.TypeToolResult:
		return
	}
	f.inner.Emit(ev)
}

// close releases what is still held once the rest of the chain returned.
func (f *outputFilter) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flush(&f.thinking, eventbus.TypeThinkingDelta)
	f.flush(&f.answer, eventbus.TypeAnswerDelta)
}

func (f *outputFilter) isStopped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}

var (
	_ pipeline.Plugin  = (*SensitiveFilter)(nil)
	_ eventbus.Emitter = (*outputFilter)(nil)
)
