package knowledge_test

import (
	"errors"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// ReadDocument returns the tenant's document text and hides every other
// tenant's documents behind the same not-found error as unknown ids.
func TestReadDocumentIsScopedToTheTenant(t *testing.T) {
	svc := newService(t, nil, testConfig())
	doc := ingest(t, svc, knowledge.IngestRequest{TenantID: "acme", Title: "Kettles",
		Content: "# Kettles\n\nDescale the kettle monthly with citric acid."})

	got, err := svc.ReadDocument(t.Context(), "acme", doc.ID)
	if err != nil || got.ID != doc.ID || got.Title != "Kettles" || got.Content != doc.Content {
		t.Fatalf("ReadDocument = %+v, %v", got, err)
	}
	for _, tc := range []struct{ tenant, id string }{{"beta", doc.ID}, {"", doc.ID}, {"acme", "no-such-id"}} {
		_, err := svc.ReadDocument(t.Context(), tc.tenant, tc.id)
		if !errors.Is(err, retrieval.ErrDocumentNotFound) || !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("ReadDocument(%q, %q) error = %v, want not found", tc.tenant, tc.id, err)
		}
	}
}
