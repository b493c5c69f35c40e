package llm

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

// anyClient builds any of the three clients against the fake provider.
type anyClient struct {
	name string
	new  func(t *testing.T, srv *providertest.Server) model.ToolCallingChatModel
}

var allClients = []anyClient{
	{"lean", func(t *testing.T, srv *providertest.Server) model.ToolCallingChatModel {
		return newOpenAIModel(t, openAIClients[0], srv, nil)
	}},
	{"eino", func(t *testing.T, srv *providertest.Server) model.ToolCallingChatModel {
		return newOpenAIModel(t, openAIClients[1], srv, nil)
	}},
	{"ollama", func(t *testing.T, srv *providertest.Server) model.ToolCallingChatModel {
		return newOllamaModel(t, srv, nil)
	}},
}

// These tests are not parallel: each checks that no goroutine it started
// outlives it.

func TestCancelMidStreamAbortsProviderCall(t *testing.T) {
	for _, c := range allClients {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.New(t)
			m := c.new(t, srv)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

			gate := providertest.NewGate()
			defer gate.Release()
			srv.Enqueue(providertest.Script{Chunks: providertest.Content("one two three four", 4), Hold: gate, HoldAfter: 2})
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			sr, err := m.Stream(ctx, []*schema.Message{schema.UserMessage("hi")})
			if err != nil {
				t.Fatal(err)
			}
			defer sr.Close()
			for i := 0; i < 2; i++ {
				if _, err := sr.Recv(); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
			}
			if err := gate.WaitReached(testContext(t)); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := srv.WaitAbort(testContext(t)); err != nil {
				t.Fatalf("the provider never saw the client go away: %v", err)
			}
			_, err = sr.Recv()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("after cancel Recv = %v, want context.Canceled", err)
			}
			if code, _, retryable := Describe(err, "m"); code != "canceled" || retryable {
				t.Errorf("Describe = %q retryable %v", code, retryable)
			}
		})
	}
}

func TestReaderCloseStopsTheStream(t *testing.T) {
	for _, c := range allClients {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.New(t)
			m := c.new(t, srv)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

			gate := providertest.NewGate()
			defer gate.Release()
			srv.Enqueue(providertest.Script{Chunks: providertest.Answer("a fairly long answer that keeps streaming on", 20),
				Hold: gate, HoldAfter: 1, Delay: 20 * time.Millisecond})
			sr, err := m.Stream(testContext(t), []*schema.Message{schema.UserMessage("hi")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sr.Recv(); err != nil {
				t.Fatal(err)
			}
			sr.Close() // without reading to EOF and without cancelling
			gate.Release()
			if err := srv.WaitAbort(testContext(t)); err != nil {
				t.Fatalf("the provider kept streaming to a closed reader: %v", err)
			}
		})
	}
}

func TestStreamToEOFLeavesNoGoroutine(t *testing.T) {
	for _, c := range allClients {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.New(t)
			m := c.new(t, srv)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			// Finished calls leave their connection idle in the client's pool;
			// closing the server closes it (deferred: runs before the check).
			defer srv.Close()
			for i := 0; i < 3; i++ {
				r := run(t, testContext(t), m)
				if r.err != nil || r.content() == "" {
					t.Fatalf("run %d: %q %v", i, r.content(), r.err)
				}
			}
		})
	}
}

// Recv after the end keeps returning io.EOF: a sanity check of the pipe
// contract the clients rely on.
func TestRecvAfterEOF(t *testing.T) {
	srv := providertest.New(t)
	m := newOpenAIModel(t, openAIClients[0], srv, nil)
	sr, err := m.Stream(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for {
		if _, err := sr.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	if _, err := sr.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("second Recv after end = %v", err)
	}
}
