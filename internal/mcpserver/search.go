package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/tools"
)

// SearchInput is knowledge_search's arguments.
type SearchInput struct {
	Query string `json:"query" jsonschema:"what to look for: a question or keywords, in the language of the documents"`
	TopK  int    `json:"top_k,omitempty" jsonschema:"how many passages to return at most (1-20, default 5)"`
}

// Passage is one passage found, as structured content.
type Passage struct {
	Index      int     `json:"index" jsonschema:"the passage's number, to cite it as [n]"`
	DocumentID string  `json:"document_id" jsonschema:"the document it comes from (for fetch_document)"`
	ChunkID    string  `json:"chunk_id"`
	Title      string  `json:"title" jsonschema:"the document's title"`
	Heading    string  `json:"heading,omitempty" jsonschema:"the section heading the passage sits under"`
	Page       int     `json:"page,omitempty" jsonschema:"the page (or slide) it is on, for paged documents such as PDF"`
	Content    string  `json:"content"`
	Score      float64 `json:"score" jsonschema:"relevance, higher is better"`
}

// passageOf is a reference as a passage.
func passageOf(r eventbus.Reference) Passage {
	return Passage{Index: r.Index, DocumentID: r.DocumentID, ChunkID: r.ChunkID,
		Title: r.Title, Heading: r.Heading, Page: r.Page, Content: r.Content, Score: r.Score}
}

// SearchOutput is knowledge_search's structured result.
type SearchOutput struct {
	Query    string    `json:"query"`
	Passages []Passage `json:"passages"`
}

var searchTool = &mcp.Tool{
	Name:  "knowledge_search",
	Title: "Search the knowledge base",
	Description: "Search chatpipe's knowledge base. Returns ranked passages with their document's title, " +
		"section heading and relevance score; cite a passage by its number, like [1]. " +
		"Use fetch_document with a passage's document_id to read the whole document.",
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
}

const (
	defaultTopK   = 5
	maxTopK       = 20
	searchTimeout = time.Minute
)

func (t tenantTools) knowledgeSearch(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	query := strings.TrimSpace(in.Query)
	out := SearchOutput{Query: query, Passages: []Passage{}}
	switch {
	case query == "":
		return nil, out, errors.New(`"query" is empty; say what to search for`)
	case in.TopK < 0 || in.TopK > maxTopK:
		return nil, out, fmt.Errorf(`"top_k" must be between 1 and %d`, maxTopK)
	case in.TopK == 0:
		in.TopK = defaultTopK
	}
	tool, err := t.search.tool(in.TopK)
	if err != nil {
		t.h.log.Error("building the MCP knowledge search failed", zap.Error(err))
		return nil, out, errors.New("the knowledge search is misconfigured; see the server log")
	}
	ctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	refs := tools.NewReferences(nil)
	cm := &pipeline.ChatManage{TenantID: t.tenant, Mode: "mcp", Query: query,
		Emitter: eventbus.EmitterFunc(func(eventbus.Event) {}), Models: t.h.opts.Setup().Models, Knowledge: t.h.opts.Knowledge}
	args, _ := json.Marshal(map[string]string{"query": query})
	text, err := tool.Tool.Run(ctx, tools.NewEnv(cm, refs, ""), string(args))
	if err != nil {
		if ctx.Err() != nil {
			return nil, out, ctx.Err()
		}
		return nil, out, err
	}
	for _, r := range refs.Items() {
		if len(out.Passages) == in.TopK {
			break
		}
		out.Passages = append(out.Passages, passageOf(r))
	}
	return textResult(tools.Truncate(text, t.maxChars)), out, nil
}

// searchChains builds, once per configuration snapshot and top_k, the
// agent's knowledge_search tool with rerank keeping top_k passages: the
// same search → rerank → merge as the rag mode and the agent mode.
type searchChains struct {
	cfg *Settings
	mu  sync.Mutex
	by  map[int]*tools.Configured
}

func newSearchChains(cfg *Settings) *searchChains {
	return &searchChains{cfg: cfg, by: map[int]*tools.Configured{}}
}

func (s *searchChains) tool(topK int) (*tools.Configured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.by[topK]; ok {
		return c, nil
	}
	entry := map[string]any{"knowledge_search": map[string]any{"chain": []any{
		"search", map[string]any{"rerank": map[string]any{"top_k": topK, "min_keep": min(s.cfg.RerankMinKeep, topK)}}, "merge",
	}}}
	set, err := tools.Build("mcp.server.knowledge_search", "mcp", []any{entry}, tools.Common{Timeout: searchTimeout}, s.cfg.Plugins)
	if err != nil {
		return nil, err
	}
	c := set.Tools()[0]
	s.by[topK] = c
	return c, nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func ptr[T any](v T) *T { return &v }
