package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	docs := fs.String("docs", "", "ingest this folder's files (every type an upload takes: "+knowledge.SupportedTypes+
		") into a temporary knowledge base (title = file name without extension) and evaluate on it instead of the configured one")
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
		n, skipped, err := ingestFolder(ctx, svc, *docs, *tenant, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "ingested %d documents from %s", n, *docs)
		switch {
		case skipped == 1:
			fmt.Fprint(stdout, " (1 file skipped: see above)")
		case skipped > 1:
			fmt.Fprintf(stdout, " (%d files skipped: see above)", skipped)
		}
		fmt.Fprintln(stdout)
	}
	if err := warnUnknownLabels(ctx, svc, *tenant, qs, stderr); err != nil {
		return err
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

// ingestFolder adds every file under dir (hidden ones skipped and
// symbolic links not followed, as by chatpipe ingest) that an upload
// would take, read as an upload is (knowledge.FileRequest) and titled by
// its file name without the extension, so that the questions can name
// it. A file the service refuses is named on warn with the reason and
// counted as skipped; a failure of the store ends the evaluation.
func ingestFolder(ctx context.Context, svc *knowledge.Service, dir, tenant string, warn io.Writer) (ingested, skipped int, err error) {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		if err == nil {
			err = errors.New("not a folder")
		}
		return 0, 0, fmt.Errorf("-docs %s: %s", dir, describePathError(err))
	}
	files, walkErrs := collectFiles([]string{dir})
	skip := func(path, reason string) {
		skipped++
		fmt.Fprintf(warn, "skipped %s: %s\n", path, reason)
	}
	for _, e := range walkErrs {
		skip(e.path, e.reason)
	}
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			skip(f.path, describePathError(err))
			continue
		}
		req, err := knowledge.FileRequest(f.name, data)
		if err != nil {
			skip(f.path, refusalReason(err))
			continue
		}
		req.TenantID, req.Title = tenant, strings.TrimSuffix(f.name, filepath.Ext(f.name))
		doc, err := svc.Ingest(ctx, req)
		switch {
		case ctx.Err() != nil:
			return ingested, skipped, context.Cause(ctx)
		case errors.Is(err, knowledge.ErrDuplicate):
			skip(f.path, fmt.Sprintf("the same content as %q", knowledge.DisplayTitle(doc)))
		case knowledge.IsStoreError(err):
			return ingested, skipped, fmt.Errorf("%s: %w", f.path, err)
		case err != nil:
			skip(f.path, refusalReason(err))
		default:
			ingested++
		}
	}
	return ingested, skipped, nil
}

// warnUnknownLabels tells which expected documents of the questions name
// no document of the knowledge base (by title or id): a typo there would
// otherwise only show as a miss.
func warnUnknownLabels(ctx context.Context, svc *knowledge.Service, tenant string, qs []eval.Question, warn io.Writer) error {
	known := map[string]bool{}
	for offset := 0; ; {
		docs, total, err := svc.Documents(ctx, tenant, 500, offset)
		if err != nil {
			return err
		}
		for _, d := range docs {
			known[d.Title], known[d.ID] = true, true
		}
		offset += len(docs)
		if len(docs) == 0 || offset >= total {
			break
		}
	}
	for _, q := range qs {
		for _, w := range q.Want {
			if !known[w] {
				fmt.Fprintf(warn, "warning: line %d names %q, which is no document's title or id: that question can only miss\n", q.Line, w)
			}
		}
	}
	return nil
}
