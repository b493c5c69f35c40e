package plugins

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/terms"
	"github.com/chatpipe/chatpipe/internal/think"
	"github.com/chatpipe/chatpipe/internal/tokens"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("merge", newMerge) }

// MergeConfig is the `plugins.merge` section.
type MergeConfig struct {
	MaxContextTokens int    `mapstructure:"max_context_tokens"` // budget of the numbered context
	Fallback         string `mapstructure:"fallback"`           // when nothing is found: model | fixed
	FallbackText     string `mapstructure:"fallback_text"`      // the answer of fallback fixed
}

// Merge turns the ranked candidates into the numbered context: duplicates
// and near-duplicates dropped, neighbouring chunks of a document (on the
// same page) joined into one passage (their overlap removed), the best passages fitted to the
// token budget and numbered 1..n as ChatManage.References, announced with
// a references event before any answer token.
//
// When nothing is found it applies the fallback: fixed answers with
// fallback_text and ends the chain without calling the model; model lets
// the generate stage answer with an empty context (ChatManage.NoContext),
// saying the knowledge base does not cover the question. Either way the
// answer is never empty.
type Merge struct{ cfg MergeConfig }

func newMerge(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := MergeConfig{MaxContextTokens: 2500, Fallback: "model", FallbackText: config.DefaultFallbackText}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	cfg.Fallback = strings.ToLower(strings.TrimSpace(cfg.Fallback))
	switch {
	case cfg.MaxContextTokens < 100:
		return nil, fmt.Errorf("%s.max_context_tokens: must be at least 100", c.Key)
	case cfg.Fallback != "model" && cfg.Fallback != "fixed":
		return nil, fmt.Errorf("%s.fallback: want model or fixed, got %q", c.Key, cfg.Fallback)
	case cfg.Fallback == "fixed" && strings.TrimSpace(cfg.FallbackText) == "":
		return nil, fmt.Errorf("%s.fallback_text: required when fallback is fixed", c.Key)
	}
	return &Merge{cfg: cfg}, nil
}

// Name implements pipeline.Plugin.
func (p *Merge) Name() string { return "merge" }

// Events implements pipeline.Plugin.
func (p *Merge) Events() []pipeline.EventType { return []pipeline.EventType{pipeline.StageMerge} }

// OnEvent implements pipeline.Plugin.
func (p *Merge) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	if len(cm.SearchResults) == 0 && cm.Knowledge == nil {
		cm.SkipStage("no knowledge base configured; answering without context")
		return next()
	}
	refs, st := mergePassages(cm.SearchResults, p.cfg.MaxContextTokens)
	cm.References = refs
	items := refs
	if items == nil {
		items = []eventbus.Reference{} // "items": [] tells the client the search is over
	}
	cm.Emit(eventbus.Of(eventbus.TypeReferences, eventbus.References{Items: items}))
	if len(refs) > 0 {
		cm.StageDetail(st.String())
		return next()
	}
	if p.cfg.Fallback == "fixed" {
		cm.StageDetail("nothing found; answered with the fixed fallback text")
		blocks := think.Blocks{Emitter: cm.Emitter}
		blocks.Answer(p.cfg.FallbackText)
		blocks.Close()
		return nil // the answer is complete: the model is not called
	}
	cm.NoContext = true
	cm.StageDetail("nothing found; the model answers without context and says so")
	return next()
}

// mergeStats describes what merge did, for the stage detail.
type mergeStats struct {
	candidates, duplicates, joined, overBudget, tokens int
}

func (s mergeStats) String() string {
	var b strings.Builder
	b.WriteString(count(s.candidates, "candidate"))
	if s.duplicates > 0 {
		b.WriteString(", " + count(s.duplicates, "duplicate") + " dropped")
	}
	if s.joined > 0 {
		b.WriteString(", " + count(s.joined, "neighbouring chunk") + " joined")
	}
	if s.overBudget > 0 {
		b.WriteString(", " + count(s.overBudget, "passage") + " over the token budget left out")
	}
	fmt.Fprintf(&b, "; about %d tokens of context", s.tokens)
	return b.String()
}

// count writes n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// nearDuplicate is the term overlap (Jaccard) from which two chunks count
// as the same text, e.g. a document uploaded twice with small edits.
const nearDuplicate = 0.9

// passage is one context passage in the making: neighbouring chunks of a
// document, in document order.
type passage struct {
	chunks  []retrieval.SearchHit
	rank    int // position of its best chunk among the candidates
	content string
	score   float64
}

// mergePassages builds the numbered references from ranked candidates.
func mergePassages(hits []retrieval.SearchHit, budget int) ([]eventbus.Reference, mergeStats) {
	st := mergeStats{candidates: len(hits)}
	kept := dedupe(hits)
	st.duplicates = len(hits) - len(kept)

	passages := joinNeighbours(kept)
	st.joined = len(kept) - len(passages)

	var refs []eventbus.Reference
	left := budget
	for _, p := range passages {
		first := p.chunks[0]
		ref := eventbus.Reference{Index: len(refs) + 1, ChunkID: first.ChunkID, DocumentID: first.DocumentID,
			Title: first.Title, Heading: first.Heading, Page: first.Page, Content: p.content, Score: p.score}
		cost := referenceTokens(ref)
		if cost > left {
			// Cut the passage to what is left, unless that is too little to help.
			room := left - referenceTokens(eventbus.Reference{Title: ref.Title, Heading: ref.Heading})
			if room < minPassageTokens {
				st.overBudget++
				continue
			}
			ref.Content = truncateTokens(ref.Content, room)
			cost = referenceTokens(ref)
		}
		left -= cost
		refs = append(refs, ref)
	}
	st.tokens = budget - left
	return refs, st
}

// minPassageTokens is the smallest cut-down passage worth sending.
const minPassageTokens = 80

// referenceTokens estimates a reference's cost in the prompt: its header
// line, content and the blank line between blocks.
func referenceTokens(r eventbus.Reference) int {
	return tokens.Estimate(r.Title) + tokens.Estimate(r.Heading) + tokens.Estimate(r.Content) + 6
}

// dedupe keeps the first (best-ranked) of chunks with the same id, with
// near-identical content, or whose content the other contains.
func dedupe(hits []retrieval.SearchHit) []retrieval.SearchHit {
	var kept []retrieval.SearchHit
	var sets []terms.Set
	seen := map[string]bool{}
next:
	for _, h := range hits {
		if h.ChunkID != "" && seen[h.ChunkID] {
			continue
		}
		content := strings.TrimSpace(h.Content)
		if content == "" {
			continue
		}
		set := terms.NewSet(content)
		for i, k := range kept {
			kc := strings.TrimSpace(k.Content)
			if strings.Contains(kc, content) || strings.Contains(content, kc) ||
				terms.Jaccard(set, sets[i]) >= nearDuplicate {
				continue next
			}
		}
		seen[h.ChunkID] = true
		kept = append(kept, h)
		sets = append(sets, set)
	}
	return kept
}

// joinNeighbours groups chunks of one document with consecutive
// ChunkIndex into one passage, in document order, and orders the passages
// by their best chunk's rank.
func joinNeighbours(hits []retrieval.SearchHit) []passage {
	byDoc := map[string][]int{} // document id -> indices into hits
	var order []string
	for i, h := range hits {
		key := h.DocumentID
		if key == "" {
			key = "\x00" + h.ChunkID // no document: never joined
		}
		if _, ok := byDoc[key]; !ok {
			order = append(order, key)
		}
		byDoc[key] = append(byDoc[key], i)
	}
	var out []passage
	for _, key := range order {
		idx := byDoc[key]
		slices.SortStableFunc(idx, func(a, b int) int { return hits[a].ChunkIndex - hits[b].ChunkIndex })
		var cur *passage
		for _, i := range idx {
			h := hits[i]
			// Neighbours on different pages stay apart: a reference names
			// the one page its passage is on.
			if cur != nil && key[0] != 0 && h.ChunkIndex == cur.chunks[len(cur.chunks)-1].ChunkIndex+1 &&
				h.Page == cur.chunks[len(cur.chunks)-1].Page {
				cur.chunks = append(cur.chunks, h)
				cur.content = joinOverlap(cur.content, h.Content)
				cur.rank = min(cur.rank, i)
				cur.score = max(cur.score, h.Score)
				continue
			}
			if cur != nil {
				out = append(out, *cur)
			}
			cur = &passage{chunks: []retrieval.SearchHit{h}, rank: i, content: strings.TrimSpace(h.Content), score: h.Score}
		}
		out = append(out, *cur)
	}
	slices.SortStableFunc(out, func(a, b passage) int { return a.rank - b.rank })
	return out
}

// minOverlap is the shortest repeated text taken for chunk overlap rather
// than coincidence.
const minOverlap = 12

// joinOverlap appends b to a, removing the text the chunker repeated at
// the end of a and the start of b.
func joinOverlap(a, b string) string {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	for k := min(len(a), len(b)); k >= minOverlap; k-- {
		if strings.HasSuffix(a, b[:k]) {
			return a + b[k:]
		}
	}
	return a + "\n" + b
}

// truncateTokens cuts s to about budget tokens, preferring to end at a
// sentence or line break in the last third, and marks the cut with "…".
func truncateTokens(s string, budget int) string {
	if tokens.Estimate(s) <= budget {
		return s
	}
	ascii, other, cut := 0, 0, 0
	for i, r := range s {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
		if (ascii+3)/4+other > budget-1 { // one token for the "…"
			break
		}
		cut = i + utf8.RuneLen(r)
	}
	head := s[:cut]
	if k := strings.LastIndexAny(head, ".!?\n。！？"); k >= 2*len(head)/3 {
		_, size := utf8.DecodeRuneInString(head[k:])
		head = head[:k+size]
	}
	return strings.TrimSpace(head) + "…"
}

var _ pipeline.Plugin = (*Merge)(nil)
