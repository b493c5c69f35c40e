package plugins

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/tokens"
)

func refIDs(refs []eventbus.Reference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.ChunkID)
	}
	return out
}

func TestMergeDropsDuplicatesAndNearDuplicates(t *testing.T) {
	t.Parallel()
	hits := []retrieval.SearchHit{
		{ChunkID: "a", DocumentID: "d1", Content: "Resume a stream by reconnecting with the Last-Event-ID header; the server replays what was missed."},
		{ChunkID: "a", DocumentID: "d1", Content: "Resume a stream by reconnecting with the Last-Event-ID header; the server replays what was missed."},
		{ChunkID: "b", DocumentID: "d2", Content: "Resume a stream by reconnecting with the Last-Event-ID header, the server replays what was missed!"},
		{ChunkID: "c", DocumentID: "d3", Content: "the Last-Event-ID header"},
		{ChunkID: "d", DocumentID: "d4", Content: "Stop a generation with POST /stop."},
		{ChunkID: "e", DocumentID: "d5", Content: "   "},
	}
	refs, st := mergePassages(hits, 2000)
	if want := []string{"a", "d"}; !reflect.DeepEqual(refIDs(refs), want) {
		t.Errorf("kept %v, want %v", refIDs(refs), want)
	}
	if st.duplicates != 4 {
		t.Errorf("duplicates = %d, want 4", st.duplicates)
	}
}

func TestMergeJoinsNeighbouringChunksWithoutTheirOverlap(t *testing.T) {
	t.Parallel()
	hits := []retrieval.SearchHit{
		{ChunkID: "doc-3", DocumentID: "doc", Title: "Guide", Heading: "Resume", ChunkIndex: 3, Score: 0.9,
			Content: "reconnect with the Last-Event-ID header. The server replays the missed events."},
		{ChunkID: "other-0", DocumentID: "other", Title: "Other", ChunkIndex: 0, Score: 0.8, Content: "Unrelated passage about plugins."},
		{ChunkID: "doc-2", DocumentID: "doc", Title: "Guide", Heading: "Streams", ChunkIndex: 2, Score: 0.7,
			Content: "Every event has a seq. To resume, reconnect with the Last-Event-ID header."},
		{ChunkID: "doc-5", DocumentID: "doc", Title: "Guide", ChunkIndex: 5, Score: 0.6, Content: "A later, separate section."},
	}
	refs, st := mergePassages(hits, 2000)
	want := []eventbus.Reference{
		{Index: 1, ChunkID: "doc-2", DocumentID: "doc", Title: "Guide", Heading: "Streams", Score: 0.9,
			Content: "Every event has a seq. To resume, reconnect with the Last-Event-ID header. The server replays the missed events."},
		{Index: 2, ChunkID: "other-0", DocumentID: "other", Title: "Other", Score: 0.8, Content: "Unrelated passage about plugins."},
		{Index: 3, ChunkID: "doc-5", DocumentID: "doc", Title: "Guide", Score: 0.6, Content: "A later, separate section."},
	}
	if !reflect.DeepEqual(refs, want) {
		t.Errorf("references\n got %+v\nwant %+v", refs, want)
	}
	if st.joined != 1 {
		t.Errorf("joined = %d, want 1", st.joined)
	}
}

func TestJoinOverlap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, want string }{
		{"one two three four five", "three four five six seven", "one two three four five six seven"},
		{"no shared text here", "completely different", "no shared text here\ncompletely different"},
		{"短的重叠不算", "不算", "短的重叠不算\n不算"},
		{"流的恢复：客户端使用请求头重新连接", "客户端使用请求头重新连接，即可恢复流。", "流的恢复：客户端使用请求头重新连接，即可恢复流。"},
	} {
		if got := joinOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("joinOverlap(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestMergeFitsTheTokenBudgetAndNumbersFromOne(t *testing.T) {
	t.Parallel()
	var hits []retrieval.SearchHit
	for i, id := range []string{"a", "b", "c", "d"} {
		var content strings.Builder // about 480 tokens of words of its own
		for k := range 260 {
			fmt.Fprintf(&content, "%s%d w. ", id, k)
		}
		hits = append(hits, retrieval.SearchHit{ChunkID: id, DocumentID: id, Title: "Doc " + id, Score: 1 - float64(i)/10,
			Content: content.String()})
	}
	const budget = 1100
	refs, st := mergePassages(hits, budget)
	total := 0
	for i, r := range refs {
		if r.Index != i+1 {
			t.Errorf("reference %d has index %d", i, r.Index)
		}
		total += referenceTokens(r)
	}
	if total > budget {
		t.Errorf("context costs %d tokens, over the budget %d", total, budget)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(refIDs(refs), want) {
		t.Errorf("kept %v, want the best-ranked %v", refIDs(refs), want)
	}
	if last := refs[len(refs)-1].Content; !strings.HasSuffix(last, "…") || tokens.Estimate(last) >= tokens.Estimate(hits[2].Content) {
		t.Errorf("the last passage should be cut to the budget, got %d tokens", tokens.Estimate(last))
	}
	if st.overBudget != 1 {
		t.Errorf("overBudget = %d, want 1", st.overBudget)
	}
}
