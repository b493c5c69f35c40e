package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { Register("knowledge_search", newKnowledgeSearch) }

// KnowledgeSearchConfig is knowledge_search's settings.
type KnowledgeSearchConfig struct {
	// Chain is what one search runs, written as a mode's plugin list
	// (names or {name: {settings}}, laid over the plugins sections). It
	// must not answer: no plugin of it may handle the generate stage.
	Chain []any `mapstructure:"chain"`
}

// DefaultKnowledgeSearchChain is the retrieval a search runs by default:
// the rag mode's, minus rewriting (the model writes its own queries).
var DefaultKnowledgeSearchChain = []any{"search", "rerank", "merge"}

// KnowledgeSearch searches the knowledge base by running the configured
// retrieval plugins (search → rerank → merge) on a request of its own:
// the same hybrid search, reranking, deduplication and token budget as the
// rag mode, with no second implementation. The passages it finds join the
// run's references, numbered after those found before, and the model gets
// them as the numbered context the rag prompt uses.
type KnowledgeSearch struct {
	chain *pipeline.EventManager
}

func newKnowledgeSearch(c Config) (Tool, error) {
	var cfg KnowledgeSearchConfig
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	if _, set := c.Raw["chain"]; !set {
		cfg.Chain = DefaultKnowledgeSearchChain
	}
	entries := make([]pipeline.ChainEntry, 0, len(cfg.Chain))
	for i, item := range cfg.Chain {
		name, settings, err := parseEntry(item)
		if err != nil {
			return nil, fmt.Errorf("chain[%d]: %w", i, err)
		}
		entries = append(entries, pipeline.ChainEntry{Name: name, Overrides: settings})
	}
	chain, err := pipeline.BuildStages(c.Mode+".knowledge_search", entries, c.Sections)
	if ke := (*pipeline.KeyError)(nil); errors.As(err, &ke) && strings.HasPrefix(ke.Key, "plugins.") {
		return nil, err // a global plugin section is at fault, not this tool
	}
	if err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	for _, p := range chain.PluginInstances() {
		for _, evt := range p.Events() {
			if evt == pipeline.StageGenerate {
				return nil, fmt.Errorf("chain: plugin %s answers (it handles the generate stage); a search must not", p.Name())
			}
		}
	}
	return &KnowledgeSearch{chain: chain}, nil
}

// Info implements Tool.
func (t *KnowledgeSearch) Info() *schema.ToolInfo {
	return &schema.ToolInfo{
		Name: "knowledge_search",
		Desc: "Search the knowledge base for passages about a topic. Returns numbered passages; " +
			"cite them in the answer by their number in square brackets, like [1]. " +
			"Search again with other words when the passages do not answer the question.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"query": {Type: schema.String, Required: true,
				Desc: "What to look for: a standalone question or keywords, in the language of the documents."},
		}),
	}
}

// Run implements Tool.
func (t *KnowledgeSearch) Run(ctx context.Context, env *Env, arguments string) (string, error) {
	var args struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal([]byte(orEmptyObject(arguments)), &args); err != nil {
		return "", errors.New(`the arguments must be a JSON object with a "query" string`)
	}
	query := strings.TrimSpace(args.Query)
	if query == "" {
		return "", errors.New(`"query" is empty; say what to search for`)
	}
	req := env.Request
	if req.Knowledge == nil {
		return "", errors.New("no knowledge base is configured")
	}
	kb := &recordedKnowledge{Knowledge: req.Knowledge}
	sub := &pipeline.ChatManage{
		TenantID: req.TenantID, SessionID: req.SessionID, MessageID: req.MessageID,
		UserMessageID: req.UserMessageID, Mode: req.Mode, Query: query,
		Emitter:  eventbus.EmitterFunc(func(eventbus.Event) {}), // stages and references are the loop's to report
		Messages: req.Messages, Models: req.Models, Knowledge: kb, Cache: req.Cache, Logger: req.Logger,
	}
	if perr := t.chain.Execute(ctx, sub); perr != nil {
		if perr.Code == pipeline.CodeCanceled {
			return "", perr
		}
		return "", errors.New(perr.Message)
	}
	if len(sub.References) == 0 && kb.err != nil {
		return "", errors.New("the knowledge base could not be searched; try again later")
	}
	refs := env.References.Add(sub.References)
	return formatPassages(query, refs), nil
}

// formatPassages writes what the model reads: how many passages were
// found, the numbered context as the rag prompt writes it, and the
// documents they come from (for fetch_document).
func formatPassages(query string, refs []eventbus.Reference) string {
	if len(refs) == 0 {
		return fmt.Sprintf("No passage in the knowledge base matches %q.", query)
	}
	passages := make([]citation.Passage, len(refs))
	var docs strings.Builder
	for i, r := range refs {
		passages[i] = citation.Passage{Index: r.Index, Title: r.Title, Heading: r.Heading, Content: r.Content}
		if r.DocumentID != "" {
			if docs.Len() > 0 {
				docs.WriteString(", ")
			}
			docs.WriteString("[" + strconv.Itoa(r.Index) + "] " + r.DocumentID)
		}
	}
	noun := "passages"
	if len(refs) == 1 {
		noun = "passage"
	}
	out := fmt.Sprintf("%d %s found for %q. Cite a passage by its number in square brackets, like [%d].\n\n%s",
		len(refs), noun, query, refs[0].Index, citation.FormatContext(passages))
	if docs.Len() > 0 {
		out += "\n\nDocument ids: " + docs.String()
	}
	return out
}

// recordedKnowledge remembers whether a search failed: the search plugin
// degrades a failure to "nothing found", which the model should not take
// for an answer.
type recordedKnowledge struct {
	retrieval.Knowledge
	err error // written by the sub-chain, read after it returned
}

func (k *recordedKnowledge) Search(ctx context.Context, req retrieval.SearchRequest) (retrieval.SearchResponse, error) {
	resp, err := k.Knowledge.Search(ctx, req)
	if err != nil {
		k.err = err
	}
	return resp, err
}

// orEmptyObject reads no arguments as an empty object: models call
// parameterless tools with "".
func orEmptyObject(arguments string) string {
	if strings.TrimSpace(arguments) == "" {
		return "{}"
	}
	return arguments
}

var _ Tool = (*KnowledgeSearch)(nil)
