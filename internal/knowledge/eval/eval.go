// Package eval measures retrieval: it runs labelled questions through a
// ranking and reports recall@1/3/5, MRR and nDCG@10 over the distinct
// documents ranked from the returned chunks (a document takes the place
// of its best chunk). Operators run it with `chatpipe eval`; tests run it
// through the HTTP search API.
package eval

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// Question is one labelled question.
type Question struct {
	Text string
	// Want lists the documents that answer it, by title or id; any one
	// of them answers it.
	Want []string
	// Relevant is how many documents of the knowledge base the labels
	// name (a title two documents share names both; a title and the id of
	// one document name one), the size of nDCG's ideal ranking; 0 when not
	// known, in which case each distinct label counts as one document.
	Relevant int
	Line     int // line in the questions file, for error messages and misses
}

// ReadQuestions reads TSV: a question, a tab, the expected document titles
// or ids separated by "|". Blank lines and lines starting with # are
// skipped.
func ReadQuestions(r io.Reader) ([]Question, error) {
	var qs []Question
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if n == 1 {
			line = strings.TrimPrefix(line, "\uFEFF") // a byte order mark, as some editors write
		}
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("line %d: not UTF-8 text (save the file as UTF-8)", n)
		}
		if trimmed := strings.TrimSpace(line); trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		text, want, ok := strings.Cut(line, "\t")
		text = strings.TrimSpace(text)
		if !ok || text == "" {
			return nil, fmt.Errorf("line %d: want a question, a tab, and the expected documents separated by |", n)
		}
		if strings.Contains(want, "\t") {
			return nil, fmt.Errorf("line %d: more than one tab; want a question, a tab, and the expected documents separated by |", n)
		}
		q := Question{Text: text, Line: n}
		for _, w := range strings.Split(want, "|") {
			if w = strings.TrimSpace(w); w != "" {
				q.Want = append(q.Want, w)
			}
		}
		if len(q.Want) == 0 {
			return nil, fmt.Errorf("line %d: no expected document after the tab", n)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d: longer than %d bytes", n+1, maxLine)
	} else if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, errors.New("no questions")
	}
	return qs, nil
}

// maxLine bounds a line of the questions file.
const maxLine = 1 << 20

// Ranking returns the chunks found for query, best first.
type Ranking func(ctx context.Context, query string) ([]retrieval.SearchHit, error)

// Metrics are the averages over the questions; each lies in 0..1.
type Metrics struct {
	Questions int
	// RecallAt1, RecallAt3, RecallAt5: share of questions with a wanted
	// document among the first 1, 3, 5 distinct documents.
	RecallAt1, RecallAt3, RecallAt5 float64
	// MRR: mean of 1/rank of the first wanted document (0 when absent).
	MRR float64
	// NDCG10: binary-relevance nDCG over the first 10 documents, the ideal
	// ranking putting every wanted document first.
	NDCG10 float64
}

// Miss is a question whose wanted documents were not all first.
type Miss struct {
	Question Question
	Rank     int      // of the first wanted document, 0 when not returned
	Got      []string // the first documents returned (titles)
}

// Result is the outcome of one ranking over the questions.
type Result struct {
	Name string
	Metrics
	Misses []Miss // questions whose first document was not a wanted one
	// Each is every question's own figures, in the order of the
	// questions (Metrics are their averages).
	Each []Scored
}

// Scored is one question and its figures.
type Scored struct {
	Question Question
	Metrics  Metrics
}

// Run runs every question through rank and scores the documents it
// returns.
func Run(ctx context.Context, name string, qs []Question, rank Ranking) (Result, error) {
	res := Result{Name: name}
	for _, q := range qs {
		hits, err := rank(ctx, q.Text)
		if err != nil {
			return res, fmt.Errorf("%s: question on line %d: %w", name, q.Line, err)
		}
		docs := Documents(hits)
		s := Score(q, docs)
		res.Each = append(res.Each, Scored{q, s})
		if s.RecallAt1 < 1 {
			got := make([]string, 0, 5)
			for _, d := range docs[:min(5, len(docs))] {
				got = append(got, d.Title)
			}
			res.Misses = append(res.Misses, Miss{Question: q, Rank: firstRank(q.Want, docs), Got: got})
		}
	}
	res.Metrics = average(res.Each)
	return res, nil
}

// average is the mean of the questions' figures.
func average(each []Scored) Metrics {
	var sum Metrics
	for _, s := range each {
		sum.RecallAt1 += s.Metrics.RecallAt1
		sum.RecallAt3 += s.Metrics.RecallAt3
		sum.RecallAt5 += s.Metrics.RecallAt5
		sum.MRR += s.Metrics.MRR
		sum.NDCG10 += s.Metrics.NDCG10
	}
	n := float64(len(each))
	return Metrics{Questions: len(each), RecallAt1: sum.RecallAt1 / n, RecallAt3: sum.RecallAt3 / n,
		RecallAt5: sum.RecallAt5 / n, MRR: sum.MRR / n, NDCG10: sum.NDCG10 / n}
}

// Questions in two kinds of script rank differently — keyword search cuts
// the scripts written without spaces (Chinese, Japanese, Korean, Thai …)
// into characters and bigrams, and the others into stemmed words — so a
// set holding both is also reported for each apart: an average over both
// can hide that one kind misses.

// Script names the kind of script a question is written in: ScriptCJK
// when it holds a character of a script written without spaces
// (knowledge.UnspacedScript), ScriptOther otherwise.
func Script(text string) string {
	if strings.ContainsFunc(text, knowledge.UnspacedScript) {
		return ScriptCJK
	}
	return ScriptOther
}

// The kinds of script Script names. "CJK" stands for every script written
// without spaces, Thai, Lao, Khmer and Myanmar included.
const (
	ScriptCJK   = "CJK"
	ScriptOther = "other"
)

// ByScript returns r's figures over the questions of each kind of script,
// CJK first, when its questions hold both kinds; nil otherwise. Each is
// named after r with the kind in brackets ("keyword [CJK]"); their misses
// are left to r.
func ByScript(r Result) []Result {
	groups := map[string][]Scored{}
	for _, s := range r.Each {
		k := Script(s.Question.Text)
		groups[k] = append(groups[k], s)
	}
	if len(groups) < 2 {
		return nil
	}
	out := make([]Result, 0, 2)
	for _, k := range []string{ScriptCJK, ScriptOther} {
		out = append(out, Result{Name: r.Name + " [" + k + "]", Metrics: average(groups[k]), Each: groups[k]})
	}
	return out
}

// Document is a document as ranked from chunks.
type Document struct{ ID, Title string }

// Documents ranks the distinct documents of hits by their best (first)
// chunk.
func Documents(hits []retrieval.SearchHit) []Document {
	seen := make(map[string]bool, len(hits))
	var docs []Document
	for _, h := range hits {
		if !seen[h.DocumentID] {
			seen[h.DocumentID] = true
			docs = append(docs, Document{ID: h.DocumentID, Title: h.Title})
		}
	}
	return docs
}

// Score scores one ranking of distinct documents against the question's
// wanted ones. Each wanted document counts once in nDCG, and the ideal
// ranking holds q.Relevant of them (or one per distinct label), at least
// as many as the ranking found, so nDCG never passes 1.
func Score(q Question, docs []Document) Metrics {
	want := q.Want
	m := Metrics{Questions: 1}
	if r := firstRank(want, docs); r > 0 {
		m.MRR = 1 / float64(r)
		m.RecallAt1 = b2f(r <= 1)
		m.RecallAt3 = b2f(r <= 3)
		m.RecallAt5 = b2f(r <= 5)
	}
	relevant := q.Relevant
	if relevant <= 0 {
		relevant = len(distinct(want))
	}
	found := 0
	var dcg, ideal float64
	for i, d := range docs {
		if wanted(want, d) {
			found++
			if i < 10 {
				dcg += 1 / math.Log2(float64(i+2))
			}
		}
	}
	for i := range min(max(relevant, found), 10) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	if ideal > 0 {
		m.NDCG10 = dcg / ideal
	}
	return m
}

// firstRank is the 1-based rank of the first wanted document, 0 if none.
func firstRank(want []string, docs []Document) int {
	for i, d := range docs {
		if wanted(want, d) {
			return i + 1
		}
	}
	return 0
}

// distinct is ss without repeats.
func distinct(ss []string) map[string]bool {
	out := make(map[string]bool, len(ss))
	for _, s := range ss {
		out[s] = true
	}
	return out
}

func wanted(want []string, d Document) bool {
	for _, w := range want {
		if w == d.Title || w == d.ID {
			return true
		}
	}
	return false
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WriteTable writes one line of metrics per result, then, when the
// questions are written in both kinds of script (ByScript), one per
// result and kind, and with verbose each result's misses.
func WriteTable(w io.Writer, results []Result, verbose bool) {
	rows := slices.Clone(results)
	for _, r := range results {
		rows = append(rows, ByScript(r)...)
	}
	width := 15
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r.Name))
	}
	fmt.Fprintf(w, "%-*s %9s %5s %5s %5s %5s %7s\n", width, "method", "questions", "R@1", "R@3", "R@5", "MRR", "nDCG@10")
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s %9d %5.3f %5.3f %5.3f %5.3f %7.3f\n", width, r.Name, r.Questions,
			r.RecallAt1, r.RecallAt3, r.RecallAt5, r.MRR, r.NDCG10)
	}
	if len(rows) > len(results) {
		fmt.Fprintln(w, "[CJK]: the questions in a script written without spaces (Chinese, Japanese, Korean, Thai …); [other]: the rest.")
	}
	if !verbose {
		return
	}
	for _, r := range results {
		if len(r.Misses) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d question(s) without a wanted document first\n", r.Name, len(r.Misses))
		for _, m := range r.Misses {
			rank := "not found"
			if m.Rank > 0 {
				rank = fmt.Sprintf("rank %d", m.Rank)
			}
			got := cmp.Or(strings.Join(m.Got, ", "), "nothing")
			fmt.Fprintf(w, "  line %d: %q want %s (%s), got %s\n", m.Question.Line, m.Question.Text,
				strings.Join(m.Question.Want, "|"), rank, got)
		}
	}
}
