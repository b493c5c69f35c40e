package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/eval"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() {
	Register(Command{Name: "eval", Summary: "measure retrieval: recall@k, MRR, nDCG of labelled questions", Run: runEval})
}

// evalTopK is how many chunks each ranking returns: enough for nDCG@10
// over distinct documents when a document has several good chunks.
const evalTopK = 50

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfgPath := FlagSet("eval", stderr)
	questions := fs.String("questions", "", "TSV file: question<TAB>expected document titles or ids separated by |")
	docs := fs.String("docs", "", "ingest this folder's .md, .txt and .html files into a temporary knowledge base "+
		"(title = file name without extension) and evaluate on it instead of the configured one")
	tenant := fs.String("tenant", knowledge.DefaultTenant, "tenant whose documents are searched")
	verbose := fs.Bool("v", false, "list every question whose first document is not an expected one")
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if *questions == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: chatpipe eval -questions FILE [-docs DIR] [-config FILE] [-v]")
		return ErrUsage
	}
	f, err := os.Open(*questions)
	if err != nil {
		return err
	}
	qs, err := eval.ReadQuestions(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *questions, err)
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *docs != "" {
		// A throwaway SQLite knowledge base with the configured chunking,
		// embedding and search settings.
		tmp, err := os.MkdirTemp("", "chatpipe-eval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		cfg.Storage.Driver = "sqlite"
		cfg.Storage.SQLite.Path = filepath.Join(tmp, "eval.db")
	}
	cfg.Knowledge.SampleDocs = false
	svc, err := app.OpenKnowledge(ctx, cfg, zap.NewNop(), nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	if *docs != "" {
		n, err := ingestFolder(ctx, svc, *docs, *tenant)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "ingested %d documents from %s\n", n, *docs)
	}
	results, err := evaluate(ctx, svc, cfg, *tenant, qs)
	if err != nil {
		return err
	}
	eval.WriteTable(stdout, results, *verbose)
	return nil
}

// evaluate runs the questions through each ranking the configuration
// offers: keyword, vector (with an embedder), hybrid, and hybrid followed
// by the configured rerank plugin.
func evaluate(ctx context.Context, svc *knowledge.Service, cfg *config.Config, tenant string, qs []eval.Question) ([]eval.Result, error) {
	search := func(kw, vec float64) eval.Ranking {
		return func(ctx context.Context, q string) ([]retrieval.SearchHit, error) {
			resp, err := svc.Search(ctx, retrieval.SearchRequest{TenantID: tenant, Query: q, TopK: evalTopK,
				KeywordWeight: kw, VectorWeight: vec})
			return resp.Hits, err
		}
	}
	type method struct {
		name string
		rank eval.Ranking
	}
	methods := []method{{"keyword", search(1, -1)}}
	if svc.Embedding() {
		methods = append(methods, method{"vector", search(-1, 1)}, method{"hybrid", search(0, 0)})
	}
	rerank, err := pipeline.BuildStages("eval", []pipeline.ChainEntry{{Name: "rerank"}}, cfg.Plugins)
	if err != nil {
		return nil, err
	}
	base := methods[len(methods)-1]
	methods = append(methods, method{base.name + "+rerank", func(ctx context.Context, q string) ([]retrieval.SearchHit, error) {
		hits, err := base.rank(ctx, q)
		if err != nil {
			return nil, err
		}
		cm := &pipeline.ChatManage{TenantID: tenant, Mode: "eval", Query: q, SearchResults: hits, Knowledge: svc,
			Emitter: eventbus.EmitterFunc(func(eventbus.Event) {})}
		if perr := rerank.Execute(ctx, cm); perr != nil {
			return nil, perr
		}
		return cm.SearchResults, nil
	}})
	results := make([]eval.Result, 0, len(methods))
	for _, m := range methods {
		r, err := eval.Run(ctx, m.name, qs, m.rank)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// ingestFolder adds every .md, .markdown, .txt, .html and .htm file under
// dir, titled by its file name without the extension.
func ingestFolder(ctx context.Context, svc *knowledge.Service, dir, tenant string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".md", ".markdown", ".txt", ".html", ".htm":
		default:
			return nil
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		title := strings.TrimSuffix(d.Name(), filepath.Ext(d.Name()))
		_, err = svc.Ingest(ctx, knowledge.IngestRequest{TenantID: tenant, Title: title, Content: string(content), Source: d.Name()})
		switch {
		case errors.Is(err, knowledge.ErrDuplicate):
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", p, err)
		}
		n++
		return nil
	})
	return n, err
}
