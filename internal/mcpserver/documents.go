package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// FetchInput is fetch_document's arguments.
type FetchInput struct {
	ID     string `json:"id" jsonschema:"the document's id (knowledge_search gives it as document_id)"`
	Offset int    `json:"offset,omitempty" jsonschema:"the first character to return (default 0)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many characters to return at most (default and maximum: the server's max_result_chars)"`
}

// FetchOutput is one page of a document's text.
type FetchOutput struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Source     string `json:"source,omitempty"`
	Offset     int    `json:"offset"`
	TotalChars int    `json:"total_chars"`
	NextOffset int    `json:"next_offset,omitempty" jsonschema:"where the next page starts; absent on the last page"`
	Text       string `json:"text"`
}

var fetchTool = &mcp.Tool{
	Name:  "fetch_document",
	Title: "Read a document",
	Description: "Read a knowledge base document's text by its id, a page at a time: offset and limit count " +
		"characters; next_offset says where the next page starts.",
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
}

func (t tenantTools) fetchDocument(ctx context.Context, _ *mcp.CallToolRequest, in FetchInput) (*mcp.CallToolResult, FetchOutput, error) {
	id := strings.TrimSpace(in.ID)
	out := FetchOutput{ID: id}
	switch {
	case id == "":
		return nil, out, errors.New(`"id" is empty`)
	case in.Offset < 0 || in.Limit < 0:
		return nil, out, errors.New(`"offset" and "limit" must not be negative`)
	case in.Limit == 0 || in.Limit > t.maxChars:
		in.Limit = t.maxChars // an oversized page is cut to the bound; next_offset continues
	}
	doc, err := t.h.opts.Knowledge.Document(ctx, t.tenant, id)
	switch {
	case errors.Is(err, knowledge.ErrNotFound):
		return nil, out, fmt.Errorf("there is no document with id %q", id)
	case err != nil:
		if ctx.Err() != nil {
			return nil, out, ctx.Err()
		}
		t.h.log.Warn("reading a document for MCP failed")
		return nil, out, errors.New("the document could not be read; try again later")
	}
	out.Title, out.Source, out.Offset = doc.Title, doc.Source, in.Offset
	out.TotalChars = utf8.RuneCountInString(doc.Content)
	start := byteOffset(doc.Content, in.Offset)
	end := start + byteOffset(doc.Content[start:], in.Limit)
	out.Text = doc.Content[start:end]
	returned := utf8.RuneCountInString(out.Text)
	if in.Offset+returned < out.TotalChars {
		out.NextOffset = in.Offset + returned
	}
	head := fmt.Sprintf("Document %s: %s (characters %d-%d of %d", doc.ID, title(doc.Title), in.Offset,
		in.Offset+returned, out.TotalChars)
	if out.NextOffset > 0 {
		head += fmt.Sprintf("; more from offset %d", out.NextOffset)
	}
	return textResult(head + ")\n\n" + out.Text), out, nil
}

// byteOffset is the byte position of the n-th character of s (len(s) past
// the end).
func byteOffset(s string, n int) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

func title(t string) string {
	if t = strings.TrimSpace(t); t == "" {
		return "Untitled"
	}
	return t
}

const (
	documentsURI     = "chatpipe://documents"
	documentURI      = "chatpipe://documents/"
	maxListDocuments = 1000
)

var documentsResource = &mcp.Resource{
	URI: documentsURI, Name: "documents", Title: "Knowledge base documents", MIMEType: "application/json",
	Description: "The documents of the knowledge base (id, title, source, size, chunks), newest first; " +
		"read one as chatpipe://documents/{id}.",
}

var documentTemplate = &mcp.ResourceTemplate{
	URITemplate: documentURI + "{id}", Name: "document", Title: "A knowledge base document", MIMEType: "text/plain",
	Description: "A document's whole text.",
}

// documentEntry is one document in the list resource.
type documentEntry struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Source    string    `json:"source,omitempty"`
	MediaType string    `json:"media_type"`
	Bytes     int       `json:"bytes"`
	Chunks    int       `json:"chunks"`
	CreatedAt time.Time `json:"created_at"`
	URI       string    `json:"uri"`
}

func (t tenantTools) documentList(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	docs, total, err := t.h.opts.Knowledge.Documents(ctx, t.tenant, maxListDocuments, 0)
	if err != nil {
		return nil, errors.New("the documents could not be listed; try again later")
	}
	list := struct {
		Total     int             `json:"total"`
		Documents []documentEntry `json:"documents"`
	}{Total: total, Documents: make([]documentEntry, 0, len(docs))}
	for _, d := range docs {
		list.Documents = append(list.Documents, documentEntry{ID: d.ID, Title: d.Title, Source: d.Source,
			MediaType: d.MediaType, Bytes: d.Bytes, Chunks: d.Chunks, CreatedAt: d.CreatedAt, URI: documentURI + d.ID})
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
		{URI: documentsURI, MIMEType: "application/json", Text: string(raw)},
	}}, nil
}

func (t tenantTools) document(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id := strings.TrimPrefix(uri, documentURI)
	doc, err := t.h.opts.Knowledge.Document(ctx, t.tenant, id)
	switch {
	case errors.Is(err, knowledge.ErrNotFound):
		return nil, mcp.ResourceNotFoundError(uri)
	case err != nil:
		return nil, errors.New("the document could not be read; try again later")
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
		{URI: uri, MIMEType: "text/plain", Text: doc.Content},
	}}, nil
}
