package knowledgetest

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/samples"
)

// ScaleCorpus is a generated bilingual knowledge base for benchmarks at
// scale (100,000 chunks and more), built the same for every store.
//
// Its vocabulary is realistic in both shape and words: the English words
// and the Han characters of the sample documents are the frequent terms,
// and derived words (a sample word with a suffix) the long tail, about
// 20,000 English terms in all, drawn with a Zipf distribution, so common
// words match a large share of the chunks as in real text. One section in
// five is Chinese. Queries are 3 to 6 words of the middle of the
// distribution, or 4 to 8 Han characters, one in five.
type ScaleCorpus struct {
	Docs    []ScaleDoc
	Queries []string
}

// ScaleDoc is one document: a title and its sections, one chunk each.
type ScaleDoc struct {
	ID, Title string
	Sections  []string
}

// NewScaleCorpus generates docs documents of sections chunks each (the
// same every time for the same arguments) and 500 queries.
func NewScaleCorpus(docs, sections int) ScaleCorpus {
	english, han := sampleVocabulary()
	rng := rand.New(rand.NewPCG(2026, 11))
	vocab := slices.Clone(english)
	for i := 0; len(vocab) < 20000; i++ {
		vocab = append(vocab, english[i%len(english)]+[]string{"ing", "er", "ology", "ment", "ise", "ward", "ful", "ness"}[i/len(english)%8]+fmt.Sprint(i/(8*len(english))))
	}
	rng.Shuffle(len(vocab), func(i, j int) { vocab[i], vocab[j] = vocab[j], vocab[i] })
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	hanZipf := rand.NewZipf(rng, 1.05, 2, uint64(len(han)-1))
	words := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[zipf.Uint64()])
			if i%14 == 13 {
				b.WriteByte('.')
			}
		}
		return b.String() + "."
	}
	chinese := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteRune(han[hanZipf.Uint64()])
			if i%24 == 23 {
				b.WriteString("。")
			}
		}
		return b.String() + "。"
	}
	var c ScaleCorpus
	for d := range docs {
		doc := ScaleDoc{ID: fmt.Sprintf("scale-%d", d), Title: words(3 + rng.IntN(4))}
		for s := range sections {
			if s%5 == 4 {
				doc.Sections = append(doc.Sections, chinese(120+rng.IntN(120)))
			} else {
				doc.Sections = append(doc.Sections, words(60+rng.IntN(60)))
			}
		}
		c.Docs = append(c.Docs, doc)
	}
	for q := range 500 {
		if q%5 == 4 {
			c.Queries = append(c.Queries, chinese(4+rng.IntN(5)))
			continue
		}
		qw := []string{"how", "do", "i"}
		for range 3 + rng.IntN(4) {
			qw = append(qw, vocab[50+rng.IntN(3000)])
		}
		c.Queries = append(c.Queries, strings.Join(qw, " ")+"?")
	}
	return c
}

// Markdown is the document as a Markdown file: its title a heading, each
// section under a heading of its own, for benchmarks that ingest through
// the chunker (a section fits one chunk).
func (d ScaleDoc) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	for i, text := range d.Sections {
		fmt.Fprintf(&b, "## Section %d\n\n%s\n\n", i+1, text)
	}
	return b.String()
}

// Chunks is the number of chunks of the corpus.
func (c ScaleCorpus) Chunks() int {
	n := 0
	for _, d := range c.Docs {
		n += len(d.Sections)
	}
	return n
}

// Load stores the corpus in tenant through the store directly (no
// chunking: each section is a chunk), with emb's embeddings when emb is
// not nil.
func (c ScaleCorpus) Load(ctx context.Context, s knowledge.Store, tenantID string, emb *HashEmbedder) error {
	for _, d := range c.Docs {
		chunks := make([]knowledge.Chunk, len(d.Sections))
		for i, text := range d.Sections {
			chunks[i] = knowledge.Chunk{ID: fmt.Sprintf("%s-%s-%d", tenantID, d.ID, i), Index: i,
				Heading: fmt.Sprintf("Section %d", i+1), Content: text, Tokens: len(text) / 4}
			if emb != nil {
				chunks[i].Embedding = Vector32(*emb, d.Title+" "+text)
			}
		}
		doc := knowledge.Document{ID: tenantID + "-" + d.ID, TenantID: tenantID, Title: d.Title,
			Content: strings.Join(d.Sections, "\n\n")}
		if _, err := s.AddDocument(ctx, doc, chunks); err != nil {
			return fmt.Errorf("load %s: %w", d.ID, err)
		}
	}
	return nil
}

// Vector32 is emb's vector of text as float32s, as stores keep them.
func Vector32(emb HashEmbedder, text string) []float32 {
	v := emb.Vector(text)
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(f)
	}
	return out
}

// sampleVocabulary returns the distinct lower-cased English words (of
// three letters or more) and Han characters of the sample documents, in
// a fixed order.
func sampleVocabulary() (english []string, han []rune) {
	seenWord, seenHan := map[string]bool{}, map[rune]bool{}
	entries, _ := fs.ReadDir(samples.FS, ".")
	for _, e := range entries {
		data, err := fs.ReadFile(samples.FS, e.Name())
		if err != nil {
			continue
		}
		text := string(data)
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
			if len(w) >= 3 && !seenWord[w] {
				seenWord[w] = true
				english = append(english, w)
			}
		}
		for _, r := range text {
			if unicode.Is(unicode.Han, r) && !seenHan[r] {
				seenHan[r] = true
				han = append(han, r)
			}
		}
	}
	slices.Sort(english)
	slices.Sort(han)
	return english, han
}
