package pipeline

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/telemetry"
)

// EventManager runs one chat mode's chain: every (plugin, stage) pair in
// the order of the mode's plugin list, each handing on through next().
type EventManager struct {
	mode  string
	links []link
}

type link struct {
	plugin Plugin
	event  EventType
}

type stageState struct {
	status string
	detail string
	// What closing the stage needs: kept here rather than in run's frame.
	link   link
	start  time.Time
	span   trace.Span
	closed bool
}

// NewEventManager builds the chain for mode from plugins in order. It
// fails when no plugin handles the generate stage.
func NewEventManager(mode string, plugins []Plugin) (*EventManager, error) {
	m := newChain(mode, plugins)
	generates := false
	for _, l := range m.links {
		generates = generates || l.event == StageGenerate
	}
	if !generates {
		return nil, fmt.Errorf("mode %q: no plugin handles the %q stage (add chat_completion_stream)", mode, StageGenerate)
	}
	return m, nil
}

// newChain links every (plugin, stage) pair of plugins in order.
func newChain(mode string, plugins []Plugin) *EventManager {
	m := &EventManager{mode: mode}
	for _, p := range plugins {
		for _, evt := range p.Events() {
			m.links = append(m.links, link{p, evt})
		}
	}
	return m
}

// Mode is the chat mode this chain serves.
func (m *EventManager) Mode() string { return m.mode }

// Plugins lists the chain's plugin names in order (a plugin handling
// several stages appears once per stage).
func (m *EventManager) Plugins() []string {
	names := make([]string, len(m.links))
	for i, l := range m.links {
		names[i] = l.plugin.Name()
	}
	return names
}

// PluginInstances lists the chain's plugins, each once, in order.
func (m *EventManager) PluginInstances() []Plugin {
	var out []Plugin
	for i, l := range m.links {
		if i == 0 || m.links[i-1].plugin != l.plugin {
			out = append(out, l.plugin)
		}
	}
	return out
}

// Execute runs the chain for one request. Each stage emits a stage event
// when it starts and when it hands on (or returns), so a frontend can show
// progress. Cancellation between stages ends the chain.
func (m *EventManager) Execute(ctx context.Context, cm *ChatManage) *PluginError {
	return m.run(ctx, cm, 0)
}

func (m *EventManager) run(ctx context.Context, cm *ChatManage, i int) *PluginError {
	if i == len(m.links) {
		return nil
	}
	if perr := Canceled(ctx); perr != nil {
		return perr
	}
	l := m.links[i]
	st := &stageState{status: eventbus.StageFinished, link: l, start: time.Now()}
	cm.stage = st
	pluginCtx := startStage(ctx, cm, st)
	called := false
	next := func() *PluginError {
		if called {
			return &PluginError{Plugin: l.plugin.Name(), Stage: l.event, Code: CodeInternal,
				Message: "The request could not be completed.", Err: ErrNextCalledTwice}
		}
		called = true
		m.closeStage(cm, st, false)
		nextCtx := ctx
		if cm.nextCtx != nil { // derived from pluginCtx: the rest of the chain nests under this stage
			nextCtx, cm.nextCtx = cm.nextCtx, nil
		}
		return m.run(nextCtx, cm, i+1)
	}
	perr := l.plugin.OnEvent(pluginCtx, l.event, cm, next)
	cm.nextCtx = nil // set but not used: it must not leak to another plugin
	if perr != nil {
		if perr.Plugin == "" {
			perr.Plugin = l.plugin.Name()
		}
		if perr.Stage == "" {
			perr.Stage = l.event
		}
	}
	cm.stage = st
	if perr != nil && perr.Code == CodeCanceled && !st.closed {
		st.detail = "cancelled"
	}
	m.closeStage(cm, st, perr != nil && perr.Code != CodeCanceled)
	return perr
}

// startStage starts a stage's span and emits its start. It and
// closeStage are apart from run, whose frame every stage adds to the stack
// the generation goroutine rests on while the model streams (see
// handler.streamTail).
func startStage(ctx context.Context, cm *ChatManage, st *stageState) context.Context {
	// The stage's span ends when the stage does (next() or return); the
	// rest of the chain runs on ctx, so stages are siblings in the trace.
	pluginCtx, span := telemetry.Start(ctx, "stage "+string(st.link.event))
	st.span = span
	cm.Emit(eventbus.Of(eventbus.TypeStage, eventbus.Stage{Name: string(st.link.event), Plugin: st.link.plugin.Name(),
		Status: eventbus.StageStarted}))
	return pluginCtx
}

// closeStage emits the stage's end and ends its span, once.
func (m *EventManager) closeStage(cm *ChatManage, st *stageState, failed bool) {
	if st.closed {
		return
	}
	st.closed = true
	status := st.status
	if failed {
		status = eventbus.StageFailed
	}
	cm.Emit(eventbus.Of(eventbus.TypeStage, eventbus.Stage{
		Name: string(st.link.event), Plugin: st.link.plugin.Name(), Status: status, ElapsedMS: time.Since(st.start).Milliseconds(),
		Detail: st.detail,
	}))
	endStageSpan(st.span, m.mode, st.link, status, st.detail)
}

// endStageSpan ends a stage's span with what the stage event says.
func endStageSpan(span trace.Span, mode string, l link, status, detail string) {
	if span.IsRecording() {
		span.SetAttributes(telemetry.ChatpipeMode.String(mode), telemetry.ChatpipePlugin.String(l.plugin.Name()),
			telemetry.ChatpipeStage.String(string(l.event)), telemetry.ChatpipeStageStatus.String(status))
		if detail != "" {
			span.SetAttributes(telemetry.ChatpipeStageDetail.String(detail))
		}
		if status == eventbus.StageFailed {
			span.SetStatus(codes.Error, "stage failed")
		}
	}
	span.End()
}
