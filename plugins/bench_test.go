package plugins_test

import (
	"context"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

// repeatModel streams the same content chunk n times, in process, so a
// benchmark measures the plugin rather than a provider.
type repeatModel struct {
	n   int
	msg *schema.Message
}

func (m repeatModel) Generate(context.Context, []*schema.Message, ...model.Option) (*schema.Message, error) {
	return m.msg, nil
}

func (m repeatModel) Stream(ctx context.Context, _ []*schema.Message, _ ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	sr, sw := schema.Pipe[*schema.Message](64)
	go func() {
		defer sw.Close()
		for range m.n {
			if ctx.Err() != nil || sw.Send(m.msg, nil) {
				return
			}
		}
	}()
	return sr, nil
}

func (m repeatModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// BenchmarkGenerateDelta measures chat_completion_stream per streamed
// content delta: think splitter, blocks and event emission, and in the
// cited case the citation filter on a delta that carries a valid marker.
// The two should cost the same allocations per delta.
func BenchmarkGenerateDelta(b *testing.B) {
	for _, tc := range []struct {
		name string
		refs []eventbus.Reference
	}{
		{"plain", nil},
		{"cited", []eventbus.Reference{{Index: 1, Title: "Doc", Content: "Passage."}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			chain := pipelinetest.Chain(b, "bench", []any{"chat_completion_stream"}, sections(nil))
			m := &chatmodel.Model{Name: "default", Provider: "bench",
				Model: repeatModel{n: b.N, msg: &schema.Message{Role: schema.Assistant, Content: " token [1]"}}}
			cm := &pipeline.ChatManage{Query: "q", References: tc.refs, Models: pipelinetest.Models{"default": m},
				Emitter: eventbus.EmitterFunc(func(eventbus.Event) {})}
			b.ReportAllocs()
			b.ResetTimer()
			if perr := chain.Execute(context.Background(), cm); perr != nil {
				b.Fatal(perr)
			}
		})
	}
}
