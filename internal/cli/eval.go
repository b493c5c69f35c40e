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
	"go.uber.org/zap/zapcore"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/eval"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/plugins"
)

func init() {
	Register(Command{Name: "eval", Summary: "measure retrieval: recall@k, MRR, nDCG of labelled questions", Run: runEval})
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfgPath := FlagSet("eval", stderr)
	questions := fs.String("questions", "", "TSV file: question<TAB>expected document titles or ids separated by |")
	docs := fs.String("docs", "", "ingest this folder's files (every type an upload takes: "+knowledge.SupportedTypes+
		") into a temporary knowledge base (title = file name without extension) and evaluate on it instead of the configured one")
	tenant := fs.String("tenant", knowledge.DefaultTenant, "tenant whose documents are searched")
	verbose := fs.Bool("v", false, "list every question whose first document is not an expected one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *questions == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: chatpipe eval -questions FILE [-docs DIR] [-tenant ID] [-config FILE] [-v]")
		fs.PrintDefaults()
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
	if err := cfg.Validate(); err != nil {
		return err
	}
	// The rerank stage is built before any folder is ingested, so that a
	// wrong setting is told at once.
	rerank, err := pipeline.BuildStages("eval", []pipeline.ChainEntry{{Name: "rerank"}}, cfg.Plugins)
	if err != nil {
		return err
	}
	var searchCfg plugins.SearchConfig
	if err := pipeline.DecodeSection("plugins.search", cfg.Plugins["search"], &searchCfg); err != nil {
		return err
	}
	if *docs == "" && cfg.Storage.Driver != "postgres" {
		// Opening a store creates it: a mistyped path would be measured as
		// an empty knowledge base.
		if _, err := os.Stat(cfg.Storage.SQLite.Path); err != nil {
			return fmt.Errorf("no knowledge base at %s (storage.sqlite.path): %s; to evaluate a folder of documents, use -docs", cfg.Storage.SQLite.Path, describePathError(err))
		}
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
		n, skipped, err := ingestFolder(ctx, svc, *docs, *tenant,
			inputLimits{text: cfg.Knowledge.MaxUploadBytes, file: cfg.Knowledge.MaxFileBytes}, stderr)
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
	if err := resolveLabels(ctx, svc, *tenant, qs, stderr); err != nil {
		return err
	}
	degraded := map[string]bool{}
	results, err := evaluate(ctx, svc, rerank, searchCfg.TopK, *tenant, qs, func(method, why string) {
		if !degraded[method+why] {
			degraded[method+why] = true
			fmt.Fprintf(stderr, "warning: %s: %s; its figures do not measure it\n", method, strings.TrimSuffix(why, "."))
		}
	})
	if err != nil {
		return err
	}
	eval.WriteTable(stdout, results, *verbose)
	return nil
}

// evaluate runs the questions through each ranking the configuration
// offers: keyword, vector (with an embedder), hybrid, and hybrid followed
// by the rerank stage. Each search asks for topK candidates (0: the
// knowledge.search setting), as the rag chain's search stage does, since
// the first places depend on it. A search that left a part out (the
// embedding endpoint failed) or a rerank that fell back is told to
// degraded, once per method and reason.
func evaluate(ctx context.Context, svc *knowledge.Service, rerank *pipeline.EventManager, topK int, tenant string,
	qs []eval.Question, degraded func(method, why string)) ([]eval.Result, error) {
	search := func(name string, kw, vec float64) eval.Ranking {
		return func(ctx context.Context, q string) ([]retrieval.SearchHit, error) {
			resp, err := svc.Search(ctx, retrieval.SearchRequest{TenantID: tenant, Query: q, TopK: topK,
				KeywordWeight: kw, VectorWeight: vec})
			if err == nil && resp.Degraded != "" {
				degraded(name, resp.Degraded)
			}
			return resp.Hits, err
		}
	}
	type method struct {
		name string
		rank eval.Ranking
	}
	methods := []method{{"keyword", search("keyword", 1, -1)}}
	if svc.Embedding() {
		methods = append(methods, method{"vector", search("vector", -1, 1)}, method{"hybrid", search("hybrid", 0, 0)})
	}
	base := methods[len(methods)-1]
	name := base.name + "+rerank"
	// What the rerank stage warns of (a reranker that failed, its fused
	// order kept instead) is a degraded measurement.
	var warned strings.Builder
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg"}),
		zapcore.AddSync(&warned), zap.WarnLevel))
	methods = append(methods, method{name, func(ctx context.Context, q string) ([]retrieval.SearchHit, error) {
		hits, err := base.rank(ctx, q)
		if err != nil {
			return nil, err
		}
		warned.Reset()
		cm := &pipeline.ChatManage{TenantID: tenant, Mode: "eval", Query: q, SearchResults: hits, Knowledge: svc,
			Emitter: eventbus.EmitterFunc(func(eventbus.Event) {}), Logger: log}
		if perr := rerank.Execute(ctx, cm); perr != nil {
			return nil, perr
		}
		if why, _, _ := strings.Cut(warned.String(), "\n"); why != "" {
			degraded(name, why)
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

// ingestFolder adds every file under dir (hidden ones skipped, symbolic
// links to folders not followed, as by chatpipe ingest) that an upload
// would take, read as an upload is (knowledge.FileRequest) and titled by
// its file name without the extension, so that the questions can name
// it. A file the service refuses is named on warn with the reason and
// counted as skipped; a failure of the store ends the evaluation.
func ingestFolder(ctx context.Context, svc *knowledge.Service, dir, tenant string, limits inputLimits, warn io.Writer) (ingested, skipped int, err error) {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		if err == nil {
			err = errors.New("not a folder")
		}
		return 0, 0, fmt.Errorf("-docs %s: %s", dir, describePathError(err))
	}
	files, walkErrs, links := collectFiles([]string{dir})
	skip := func(path, reason string) {
		skipped++
		fmt.Fprintln(warn, terminalSafe(fmt.Sprintf("skipped %s: %s", path, reason)))
	}
	for _, e := range append(walkErrs, links...) {
		skip(e.path, e.reason)
	}
	for _, f := range files {
		data, refusal := readInput(f, limits)
		if refusal != "" {
			skip(f.path, refusal)
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

// resolveLabels sets each question's Relevant, the number of documents
// of the knowledge base its labels name (by title or id), and tells which
// labels name none (a typo there would otherwise only show as a miss)
// and which titles several documents share (either answers). A knowledge
// base with no documents is an error: every figure would be 0.
func resolveLabels(ctx context.Context, svc *knowledge.Service, tenant string, qs []eval.Question, warn io.Writer) error {
	named := map[string][]string{} // a title or id → the documents it names
	for offset := 0; ; {
		docs, total, err := svc.Documents(ctx, tenant, 500, offset)
		if err != nil {
			return err
		}
		for _, d := range docs {
			named[d.ID] = append(named[d.ID], d.ID)
			if d.Title != d.ID {
				named[d.Title] = append(named[d.Title], d.ID)
			}
		}
		offset += len(docs)
		if len(docs) == 0 || offset >= total {
			break
		}
	}
	if len(named) == 0 {
		return fmt.Errorf("the knowledge base of tenant %q has no documents: nothing to evaluate", tenant)
	}
	told := map[string]bool{}
	for i, q := range qs {
		relevant := map[string]bool{}
		var unknown []string
		for _, w := range q.Want {
			ids := named[w]
			switch {
			case len(ids) == 0:
				unknown = append(unknown, w)
			case len(ids) > 1 && !told[w]:
				told[w] = true
				fmt.Fprintf(warn, "warning: %d documents are titled %q (line %d): each of them counts as an expected document; name one by its id to keep to it\n", len(ids), w, q.Line)
			}
			for _, id := range ids {
				relevant[id] = true
			}
		}
		for _, w := range unknown {
			if len(relevant) == 0 {
				fmt.Fprintf(warn, "warning: line %d names %q, which is no document's title or id: that question can only miss\n", q.Line, w)
			} else {
				fmt.Fprintf(warn, "warning: line %d names %q, which is no document's title or id: only the line's other labels count\n", q.Line, w)
			}
		}
		qs[i].Relevant = len(relevant)
	}
	return nil
}
