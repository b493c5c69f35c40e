// Package plugintest is the former home of the plugin test kit, now the
// public package github.com/chatpipe/chatpipe/pipeline/pipelinetest. It
// keeps the old names working for code written against it.
//
// Deprecated: use pipelinetest; for the fake provider, pass
// providertest.Server.BaseURL() to pipelinetest.OpenAI.
package plugintest

import (
	"testing"

	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

// The test kit's types, under their old names.
type (
	Request       = pipelinetest.Request
	Result        = pipelinetest.Result
	Recorder      = pipelinetest.Recorder
	Models        = pipelinetest.Models
	KnowledgeFunc = pipelinetest.KnowledgeFunc
)

// The test kit's functions, under their old names.
var (
	Chain      = pipelinetest.Chain
	BuildChain = pipelinetest.BuildChain
	Run        = pipelinetest.Run
	Demo       = pipelinetest.Demo
)

// OpenAI is chatpipe's OpenAI-compatible client talking to the fake
// provider srv.
func OpenAI(t testing.TB, srv *providertest.Server) *pipeline.ChatModel {
	t.Helper()
	return pipelinetest.OpenAI(t, srv.BaseURL())
}
