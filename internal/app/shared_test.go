package app_test

import (
	"net/http"
	"testing"
	"testing/fstest"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// withSharedManager gives acme's key the right to manage shared
// documents; beta's key has not.
func withSharedManager(c *config.Config) {
	c.Auth.Keys = []config.AuthKey{
		{Tenant: "acme", Key: acmeKey, ManageShared: true},
		{Tenant: "beta", KeySHA256: auth.Hash(betaKey)},
	}
}

func (h *harness) documents() []handler.DocumentJSON {
	h.t.Helper()
	var out struct {
		Documents []handler.DocumentJSON
		Total     int
	}
	if code := h.call("GET", "/api/v1/knowledge/documents", "", &out); code != http.StatusOK || out.Total != len(out.Documents) {
		h.t.Fatalf("list documents: %d, %d of %d", code, len(out.Documents), out.Total)
	}
	return out.Documents
}

func findDoc(docs []handler.DocumentJSON, id string) (handler.DocumentJSON, bool) {
	for _, d := range docs {
		if d.ID == id {
			return d, true
		}
	}
	return handler.DocumentJSON{}, false
}

func TestSharedDocumentsAreReadByEveryTenantAndManagedOnlyByAllowedKeys(t *testing.T) {
	h := newHarness(t, withSharedManager, ragMode)
	acme, beta := h.as(acmeKey), h.as(betaKey)

	code, shared := acme.upload("Holiday policy", "# Holiday policy\n\nEvery employee has twenty-five vacation days a year.", true)
	if code != http.StatusCreated || !shared.Shared {
		t.Fatalf("shared upload by a manager: %d %+v", code, shared)
	}
	if code, d := beta.upload("Sneaky", "# Sneaky\n\nbeta wants to share this", true); code != http.StatusForbidden {
		t.Fatalf("shared upload by a key without manage_shared: %d %+v; want 403", code, d)
	}
	private := acme.addDocument("Acme roadmap", "# Acme roadmap\n\nThe vacation robot ships in spring.")

	for name, c := range map[string]*harness{"acme": acme, "beta": beta} {
		docs := c.documents()
		if d, ok := findDoc(docs, shared.ID); !ok || !d.Shared {
			t.Errorf("%s's list: shared document missing or not marked shared: %+v", name, docs)
		}
		if d := c.document(shared.ID); d.AddedBy != "acme" || !d.Shared || d.Content == "" {
			t.Errorf("%s reads the shared document as %+v", name, d)
		}
		hits := c.search("vacation days").Hits
		if len(hits) == 0 || hits[0].DocumentID != shared.ID {
			t.Errorf("%s's search: %+v; want the shared document first", name, hits)
		}
	}
	// acme's own document stays acme's.
	if _, ok := findDoc(beta.documents(), private.ID); ok {
		t.Error("beta lists acme's private document")
	}
	if code := beta.call("GET", "/api/v1/knowledge/documents/"+private.ID, "", nil); code != http.StatusNotFound {
		t.Errorf("beta GET acme's private document: %d, want 404", code)
	}
	for _, hit := range beta.search("vacation robot").Hits {
		if hit.DocumentID == private.ID {
			t.Errorf("beta's search found acme's private document: %+v", hit)
		}
	}

	// A rag answer for beta cites the shared document.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Twenty-five days [1].", 3)})
	session := beta.createSession()
	evs := beta.ask(session, "How many vacation days do employees get?").all()
	refsAt := indexOf(evs, eventbus.TypeReferences)
	if refsAt < 0 {
		t.Fatalf("no references: %v", types(evs))
	}
	if refs := evs[refsAt].Payload.(eventbus.References).Items; len(refs) == 0 || refs[0].DocumentID != shared.ID {
		t.Fatalf("beta's references = %+v; want the shared document", refs)
	}

	// Only a manager deletes it.
	if code := beta.call("DELETE", "/api/v1/knowledge/documents/"+shared.ID, "", nil); code != http.StatusForbidden {
		t.Fatalf("beta deletes the shared document: %d, want 403", code)
	}
	if code := acme.call("DELETE", "/api/v1/knowledge/documents/"+shared.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("acme deletes the shared document: %d, want 204", code)
	}
	if code := beta.call("GET", "/api/v1/knowledge/documents/"+shared.ID, "", nil); code != http.StatusNotFound {
		t.Errorf("the deleted shared document: %d, want 404", code)
	}
}

func TestSampleDocumentsAreSharedWhenAPIKeysAreOn(t *testing.T) {
	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	withTwoTenants(cfg)
	fsys := fstest.MapFS{"guide.md": {Data: []byte("# Quokka guide\n\nQuokkas live on Rottnest Island.")}}
	h := startHarnessWith(t, provider, cfg, app.Options{Samples: fsys})
	for _, key := range []string{acmeKey, betaKey} {
		c := h.as(key)
		docs := c.documents()
		if len(docs) != 1 || !docs[0].Shared || docs[0].Title != "Quokka guide" {
			t.Errorf("documents = %+v; want the shared sample", docs)
		}
		if hits := c.search("quokkas island").Hits; len(hits) != 1 {
			t.Errorf("search = %+v; want the sample", hits)
		}
		// No key in this config manages shared documents.
		if code := c.call("DELETE", "/api/v1/knowledge/documents/"+docs[0].ID, "", nil); code != http.StatusForbidden {
			t.Errorf("delete a sample: %d, want 403", code)
		}
	}
}
