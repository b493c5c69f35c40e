package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/think"
	"github.com/chatpipe/chatpipe/pipeline"
)

// llmPassageChars bounds each passage shown to the llm reranker: enough to
// judge relevance, cheap enough for one call over every candidate.
const llmPassageChars = 500

// llmScorer asks the chat model to grade every candidate 0–10 in one call
// and normalises the grades to 0..1 (grade / 10).
type llmScorer struct {
	model   string
	timeout time.Duration
}

const llmRerankPrompt = "Rate how well each numbered passage helps answer the question, " +
	"from 0 (unrelated) to 10 (answers it directly). " +
	"Reply with only a JSON array of numbers, one per passage in order, for example [7, 0, 3].\n\n" +
	"Question: %s\n\nPassages:\n%s"

func (l *llmScorer) score(ctx context.Context, cm *pipeline.ChatManage, hits []retrieval.SearchHit) ([]float64, error) {
	if cm.Models == nil {
		return nil, errors.New("llm reranker: no models configured")
	}
	m, err := cm.Models.ChatModel(l.model)
	if err != nil {
		return nil, fmt.Errorf("llm reranker: model %q is not configured", l.model)
	}
	if m.Provider == "demo" {
		return nil, errors.New("llm reranker: the offline demo model cannot grade passages")
	}
	passages := make([]citation.Passage, len(hits))
	for i, h := range hits {
		passages[i] = citation.Passage{Index: i + 1, Title: h.Title, Heading: h.Heading,
			Content: truncateRunes(h.Content, llmPassageChars)}
	}
	prompt := fmt.Sprintf(llmRerankPrompt, cm.SearchQuery(), citation.FormatContext(passages))

	callCtx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	msg, err := generateTraced(callCtx, cm, m, "rerank", []*schema.Message{schema.UserMessage(prompt)})
	switch {
	case err != nil && callCtx.Err() != nil && ctx.Err() == nil:
		return nil, fmt.Errorf("llm reranker: model %s did not answer within %s", m.Name, l.timeout)
	case err != nil:
		return nil, fmt.Errorf("llm reranker: the call to model %s failed", m.Name)
	}
	scores, ok := parseLLMScores(msg.Content, len(hits))
	if !ok {
		return nil, fmt.Errorf("llm reranker: could not read grades from model %s's reply", m.Name)
	}
	return scores, nil
}

// parseLLMScores reads the first JSON value in reply (after any <think>
// block, inside code fences or prose) that gives grades for n passages:
//
//   - an array of n numbers, the grade of each passage in order;
//   - an array of objects with a 1-based index and a score
//     ({"index":2,"score":8}, also "passage"/"id" and "relevance"/"grade");
//   - an object with such an array under "scores" or "results";
//   - when the reply is nothing but the list: an array of fewer than n
//     distinct passage numbers, read as the relevant passages best first
//     (graded 1.0 down to 0.5; the others dropped).
//
// Grades are clamped to 0..10 and divided by 10.
func parseLLMScores(reply string, n int) ([]float64, bool) {
	text := think.StripBlocks(reply)
	for i := 0; i < len(text); i++ {
		if text[i] != '[' && text[i] != '{' {
			continue
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		if err := dec.Decode(&v); err != nil {
			continue
		}
		lead, tail := strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+int(dec.InputOffset()):])
		bare := (lead == "" || lead == "```" || lead == "```json") && (tail == "" || tail == "```")
		if scores, ok := gradesFrom(v, n, bare); ok {
			return scores, true
		}
	}
	return nil, false
}

func gradesFrom(v any, n int, rankingAllowed bool) ([]float64, bool) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range []string{"scores", "results", "grades"} {
			if inner, ok := v[k]; ok {
				return gradesFrom(inner, n, rankingAllowed)
			}
		}
	case []any:
		if nums, ok := numbers(v); ok {
			if len(nums) == n {
				out := make([]float64, n)
				for i, g := range nums {
					out[i] = min(max(g, 0), 10) / 10
				}
				return out, true
			}
			if rankingAllowed {
				return ranking(nums, n)
			}
			return nil, false
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = -1
		}
		got := 0
		for _, item := range v {
			obj, ok := item.(map[string]any)
			if !ok {
				return nil, false
			}
			idx, ok1 := number(obj, "index", "passage", "id")
			g, ok2 := number(obj, "score", "relevance", "grade", "rating")
			if !ok1 || !ok2 || idx != math.Trunc(idx) || idx < 1 || int(idx) > n {
				continue
			}
			out[int(idx)-1] = min(max(g, 0), 10) / 10
			got++
		}
		return out, got > 0
	}
	return nil, false
}

// ranking reads a short list of distinct passage numbers as the relevant
// passages, best first.
func ranking(nums []float64, n int) ([]float64, bool) {
	if len(nums) == 0 || len(nums) > n {
		return nil, false
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = -1
	}
	for pos, x := range nums {
		if x != math.Trunc(x) || x < 1 || int(x) > n || out[int(x)-1] >= 0 {
			return nil, false
		}
		out[int(x)-1] = 1 - 0.5*float64(pos)/float64(len(nums))
	}
	return out, true
}

func numbers(v []any) ([]float64, bool) {
	out := make([]float64, len(v))
	for i, x := range v {
		f, ok := x.(float64)
		if !ok || math.IsNaN(f) {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

func number(obj map[string]any, keys ...string) (float64, bool) {
	for _, k := range keys {
		if f, ok := obj[k].(float64); ok {
			return f, true
		}
	}
	return 0, false
}
