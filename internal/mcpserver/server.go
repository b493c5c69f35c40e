// Package mcpserver serves chatpipe's knowledge base over the Model
// Context Protocol at /mcp, so that any MCP client (Claude Desktop and
// Code, Cursor, VS Code, agent frameworks) can search it, read its
// documents and ask it questions. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) and its Streamable HTTP
// transport, in the stateless mode the current protocol (2026-07-28)
// requires; older protocol versions are answered too.
//
// The tools reuse chatpipe's own parts: knowledge_search runs the same
// search → rerank → merge chain as the agent's knowledge_search tool,
// fetch_document reads through the knowledge service, and ask starts a
// generation through the run manager exactly as POST /api/v1/chat does,
// streaming its progress and stopping it when the client cancels.
package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/run"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// Observer is told about every tool call (metrics).
type Observer interface {
	MCPServerCall(tool, outcome string, d time.Duration)
}

// Call outcomes, as logged and counted.
const (
	OutcomeOK        = "ok"         // the tool answered
	OutcomeToolError = "tool_error" // the tool answered with an error (bad arguments, nothing found to read…)
	OutcomeError     = "error"      // the call was refused (unknown tool, malformed request)
	OutcomeCanceled  = "canceled"   // the client cancelled
)

// Settings are what one configuration snapshot says about the endpoint.
// A published Settings is never changed: a new snapshot is a new pointer.
type Settings struct {
	// ReadOnly offers only what reads the knowledge base: no ask.
	ReadOnly bool
	// MaxResultChars bounds the text of one tool result.
	MaxResultChars int
	// MaxQuestionChars bounds ask's question.
	MaxQuestionChars int
	// Plugins are the plugin sections knowledge_search's search → rerank
	// → merge chain is built from, as the chat modes' chains are.
	Plugins map[string]map[string]any
	// RerankMinKeep is the passages rerank keeps when none reaches its
	// threshold (at most the request's top_k).
	RerankMinKeep int
}

// Options configure the MCP endpoint.
type Options struct {
	// Settings returns the current snapshot's settings; servers are
	// rebuilt when it returns another pointer.
	Settings  func() *Settings
	Setup     func() *run.Setup // the current models and chat modes
	Knowledge *knowledge.Service
	Runs      *run.Manager
	Streams   stream.Store
	Observer  Observer // nil = no metrics
	Logger    *zap.Logger
}

// Handler is the /mcp endpoint. The caller authenticates the request and
// puts the tenant in its context (auth.WithTenant).
type Handler struct {
	opts    Options
	log     *zap.Logger
	sdk     *mcp.StreamableHTTPHandler
	schemas *mcp.SchemaCache

	mu      sync.Mutex
	cfg     *Settings              // the snapshot servers were built for
	servers map[string]*mcp.Server // by tenant, for cfg
	search  *searchChains
}

// New returns the endpoint.
func New(opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	h := &Handler{opts: opts, log: opts.Logger.Named("mcp"), schemas: mcp.NewSchemaCache()}
	h.sdk = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{
		// The current protocol is stateless: each POST is a whole request,
		// so any replica can serve it and a client that cancels closes it.
		Stateless:                    true,
		PropagateRequestCancellation: true,
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.sdk.ServeHTTP(w, r)
}

// server returns the MCP server of the request's tenant for the current
// configuration. Servers are cached per snapshot: a reload (read_only,
// modes) applies to the next request.
func (h *Handler) server(r *http.Request) *mcp.Server {
	tenant, ok := auth.TenantFrom(r.Context())
	if !ok {
		tenant = auth.DefaultTenant
	}
	cfg := h.opts.Settings()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg != cfg {
		h.cfg, h.servers, h.search = cfg, map[string]*mcp.Server{}, newSearchChains(cfg)
	}
	if s, ok := h.servers[tenant]; ok {
		return s
	}
	s := h.build(cfg, tenant)
	h.servers[tenant] = s
	return s
}

const instructions = "chatpipe's knowledge base. Use knowledge_search to find passages (cite them by their number), " +
	"fetch_document to read a whole document by its id, and ask to get an answer written from the knowledge base " +
	"with its sources. The resource chatpipe://documents lists the documents."

// build makes the MCP server one tenant sees.
func (h *Handler) build(cfg *Settings, tenant string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "chatpipe", Title: "chatpipe knowledge base", Version: "1"},
		&mcp.ServerOptions{Instructions: instructions, SchemaCache: h.schemas})
	s.AddReceivingMiddleware(h.observe(tenant))
	t := tenantTools{h: h, tenant: tenant, search: h.search, maxChars: cfg.MaxResultChars}
	mcp.AddTool(s, searchTool, t.knowledgeSearch)
	mcp.AddTool(s, fetchTool, t.fetchDocument)
	if !cfg.ReadOnly {
		mcp.AddTool(s, askTool, t.ask)
	}
	s.AddResource(documentsResource, t.documentList)
	s.AddResourceTemplate(documentTemplate, t.document)
	return s
}

// observe logs and counts every tool call, also those refused before a
// tool runs (unknown tool, arguments not matching the schema).
func (h *Handler) observe(tenant string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			name := "unknown"
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
				name = p.Name
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			d := time.Since(start)
			outcome := OutcomeOK
			switch {
			case ctx.Err() != nil || errors.Is(err, context.Canceled):
				outcome = OutcomeCanceled
			case err != nil:
				outcome = OutcomeError
			default:
				if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
					outcome = OutcomeToolError
				}
			}
			if !knownTool(name) {
				name = "unknown" // a client's made-up name must not become a metric series
			}
			if h.opts.Observer != nil {
				h.opts.Observer.MCPServerCall(name, outcome, d)
			}
			fields := []zap.Field{zap.String("tool", name), zap.String("tenant", tenant),
				zap.String("outcome", outcome), zap.Duration("duration", d)}
			if err != nil {
				fields = append(fields, zap.Error(err))
			}
			h.log.Info("MCP call", fields...)
			return res, err
		}
	}
}

func knownTool(name string) bool {
	return name == searchTool.Name || name == fetchTool.Name || name == askTool.Name
}

// tenantTools are the tool handlers bound to one tenant.
type tenantTools struct {
	h        *Handler
	tenant   string
	search   *searchChains
	maxChars int
}
