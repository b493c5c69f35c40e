package inspect_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/inspect"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func bigTurn(passages, size int) inspect.Turn {
	r := inspect.NewRecorder("m1", "rag", "question?", "")
	var cands []inspect.Candidate
	var refs []eventbus.Reference
	for i := range passages {
		text := strings.Repeat("passage text ", size/13+1)
		cands = append(cands, inspect.Candidate{ChunkID: "c" + string(rune('a'+i%26)), Content: text, FusedScore: 1})
		refs = append(refs, eventbus.Reference{Index: i + 1, Content: text})
	}
	r.Searched(inspect.Search{Query: "q", Candidates: cands})
	r.Reranked([]inspect.Kept{{ChunkID: "ca", Score: 1}})
	r.Context(refs)
	r.Prompt([]inspect.Message{{Role: "user", Content: strings.Repeat("prompt ", size/7+1)}})
	r.Stage(eventbus.Stage{Name: "generate", Plugin: "chat_completion_stream", Status: "finished"})
	r.ModelCall(inspect.ModelCall{Purpose: "generate", Model: "m", Status: "completed"})
	return r.Snapshot("completed")
}

func TestEncodeKeepsRecordsWithinTheBoundAndSaysWhatWasCut(t *testing.T) {
	for _, tc := range []struct {
		name               string
		passages, size     int
		max                int
		truncated, partial bool // partial: stages and calls survive
	}{
		{"fits", 2, 100, 64 << 10, false, true},
		{"long texts cut", 20, 5000, 16 << 10, true, true},
		{"lists shortened", 400, 200, 4096, true, true},
		{"only the identity", 400, 200, 300, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := inspect.Encode(bigTurn(tc.passages, tc.size), tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > tc.max {
				t.Fatalf("%d bytes, bound %d", len(b), tc.max)
			}
			var got inspect.Turn
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got.Truncated != tc.truncated || (tc.truncated && !strings.Contains(got.TruncatedNote, "max_bytes")) {
				t.Errorf("truncated %v note %q, want truncated %v", got.Truncated, got.TruncatedNote, tc.truncated)
			}
			if got.MessageID != "m1" || (tc.partial && (len(got.Stages) != 1 || len(got.ModelCalls) != 1)) {
				t.Errorf("record lost what identifies it: %s", b)
			}
		})
	}
}

func TestRerankListsTheCandidatesItDroppedAndItsReason(t *testing.T) {
	r := inspect.NewRecorder("m1", "rag", "q", "")
	r.Searched(inspect.Search{Candidates: []inspect.Candidate{{ChunkID: "a"}, {ChunkID: "b"}, {ChunkID: "c"}}})
	r.Reranked([]inspect.Kept{{ChunkID: "b", Score: 0.9}})
	r.Stage(eventbus.Stage{Name: "rerank", Status: "finished", Detail: "score: kept 1 of 3"})
	rr := r.Snapshot("completed").Rerank
	if rr == nil || strings.Join(rr.Dropped, ",") != "a,c" || rr.Reason != "score: kept 1 of 3" {
		t.Fatalf("rerank = %+v", rr)
	}
	var nilRec *inspect.Recorder
	nilRec.Reranked(nil) // off: does nothing
}
