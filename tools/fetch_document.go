package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/retrieval"
)

func init() { Register("fetch_document", newFetchDocument) }

// FetchDocumentConfig is fetch_document's settings.
type FetchDocumentConfig struct {
	// MaxChars bounds the text returned; a longer document is cut and the
	// model is told so.
	MaxChars int `mapstructure:"max_chars"`
}

// FetchDocument returns a knowledge base document's whole text by id, for
// when a passage knowledge_search found is not enough. It reads only the
// request's tenant's documents.
type FetchDocument struct{ cfg FetchDocumentConfig }

func newFetchDocument(c Config) (Tool, error) {
	cfg := FetchDocumentConfig{MaxChars: 12000}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	if cfg.MaxChars < 100 {
		return nil, fmt.Errorf("%s.max_chars: must be at least 100", c.Key)
	}
	return &FetchDocument{cfg: cfg}, nil
}

// Info implements Tool.
func (t *FetchDocument) Info() *schema.ToolInfo {
	return &schema.ToolInfo{
		Name: "fetch_document",
		Desc: "Read a whole document of the knowledge base by its id (knowledge_search lists the ids of the " +
			"documents its passages come from). Use it when a passage is not enough.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"document_id": {Type: schema.String, Required: true, Desc: "The document's id."},
		}),
	}
}

// Run implements Tool.
func (t *FetchDocument) Run(ctx context.Context, env *Env, arguments string) (string, error) {
	var args struct {
		DocumentID string `json:"document_id"`
	}
	if err := json.Unmarshal([]byte(orEmptyObject(arguments)), &args); err != nil {
		return "", errors.New(`the arguments must be a JSON object with a "document_id" string`)
	}
	id := strings.TrimSpace(args.DocumentID)
	if id == "" {
		return "", errors.New(`"document_id" is empty`)
	}
	if env.Request.Knowledge == nil {
		return "", errors.New("no knowledge base is configured")
	}
	reader, ok := env.Request.Knowledge.(retrieval.DocumentReader)
	if !ok {
		return "", errors.New("this knowledge base cannot return whole documents")
	}
	doc, err := reader.ReadDocument(ctx, env.Request.TenantID, id)
	switch {
	case errors.Is(err, retrieval.ErrDocumentNotFound):
		return "", fmt.Errorf("there is no document with id %q", id)
	case err != nil:
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", errors.New("the document could not be read; try again later")
	}
	var b strings.Builder
	title := strings.TrimSpace(doc.Title)
	if title == "" {
		title = "Untitled"
	}
	fmt.Fprintf(&b, "Document %s: %s\n\n", doc.ID, title)
	content := doc.Content
	if n := utf8.RuneCountInString(content); n > t.cfg.MaxChars {
		cut := 0
		for range t.cfg.MaxChars {
			_, size := utf8.DecodeRuneInString(content[cut:])
			cut += size
		}
		fmt.Fprintf(&b, "%s…\n\n(The document is %d characters long; this is the first %d.)", content[:cut], n, t.cfg.MaxChars)
		return b.String(), nil
	}
	b.WriteString(content)
	return b.String(), nil
}

var _ Tool = (*FetchDocument)(nil)
