package app_test

import (
	"strings"
	"testing"
)

// A question may use other words than the document that answers it:
// through the API, a search for 修改 (to alter) finds the page that only
// says 变更 (to change), with which it shares no character, because the
// query is expanded with the words CC-CEDICT relates to its own
// (knowledge.ExpansionTerms); and the expansion weighs less than the
// question's own words, so a page saying 修改 itself comes first.
func TestSearchFindsADocumentThroughARelatedWordOnly(t *testing.T) {
	h := newHarness(t)
	changes := h.addDocument("发布说明", "每次发布的变更都记在这里，按日期排列。")
	h.addDocument("天气", "今天天气晴朗，适合出门散步。")
	query := "修改"
	for _, r := range query {
		if strings.ContainsRune("发布说明每次发布的变更都记在这里，按日期排列。", r) {
			t.Fatalf("the page shares %q with the query; the test needs a page sharing nothing", r)
		}
	}
	r := h.search(query)
	if len(r.Hits) != 1 || r.Hits[0].DocumentID != changes.ID {
		t.Fatalf("search(%s) = %+v; want the 变更 page alone", query, r.Hits)
	}

	edits := h.addDocument("修改记录", "这里列出每次修改。")
	r = h.search(query)
	if len(r.Hits) != 2 || r.Hits[0].DocumentID != edits.ID || r.Hits[1].DocumentID != changes.ID {
		t.Fatalf("search(%s) = %+v; want the page saying 修改 first, then the 变更 page", query, r.Hits)
	}
}
