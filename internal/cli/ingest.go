package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/knowledge"
)

func init() {
	Register(Command{
		Name:    "ingest",
		Summary: "add files or folders (recursively) to the knowledge base",
		Run:     runIngest,
	})
}

// ingestUsage is printed with the flags.
const ingestUsage = `usage: chatpipe ingest [-config FILE] [-tenant NAME] [-shared] PATH...
       chatpipe ingest -server URL -key KEY [-shared] PATH...

Adds each file, and every file under each folder (hidden ones skipped), to
the knowledge base, showing a progress bar per file on a terminal, then a
summary: ingested, skipped as duplicates, refused and why. The service
decides what it accepts (type, size, content), as for an upload.

Without -server it opens the configured store itself (the same SQLite file
or PostgreSQL database as the server; a running server sees the new
documents at once). With -server it uploads through the HTTP API instead.
Exit status: 0 when nothing was refused, 1 when a file was refused or
failed, 2 on bad arguments.

`

// fileOutcome is what happened to one file.
type fileOutcome int

const (
	outcomeIngested fileOutcome = iota
	outcomeDuplicate
	outcomeRefused
)

// ingester adds one file's bytes; progress is told how far it is, from 0
// to 1, and what it is doing.
type ingester interface {
	ingest(ctx context.Context, path, name string, data []byte, progress func(float64, string)) (fileOutcome, string, error)
	// limit is the largest file of this name the service takes and the
	// setting that says so; 0 when not known here (the server says).
	limit(name string) (int64, string)
}

func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, configPath := FlagSet("ingest", stderr)
	tenant := fs.String("tenant", knowledge.DefaultTenant, "tenant the documents belong to (without -server)")
	shared := fs.Bool("shared", false, "add them as shared documents, read by every tenant")
	server := fs.String("server", "", "upload through the HTTP API of the chatpipe server at this URL instead of opening the store")
	key := fs.String("key", "", "API key for -server (or CHATPIPE_API_KEY)")
	fs.Usage = func() {
		fmt.Fprint(stderr, ingestUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "chatpipe ingest: name at least one file or folder")
		fs.Usage()
		return ErrUsage
	}

	var in ingester
	if *server != "" {
		transport := &http.Transport{}
		defer transport.CloseIdleConnections()
		in = &remoteIngester{base: strings.TrimRight(*server, "/"), key: cmp.Or(*key, os.Getenv("CHATPIPE_API_KEY")), shared: *shared,
			client: &http.Client{Transport: transport, Timeout: 2 * time.Minute}}
	} else {
		cfg, err := config.Load(*configPath)
		if err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		svc, err := app.OpenKnowledge(ctx, cfg, zap.NewNop(), nil)
		if err != nil {
			return err
		}
		defer svc.Close()
		owner, addedBy := *tenant, ""
		if *shared {
			owner, addedBy = knowledge.SharedTenant, *tenant
		}
		in = &localIngester{svc: svc, tenant: owner, addedBy: addedBy,
			textLimit: cfg.Knowledge.MaxUploadBytes, fileLimit: cfg.Knowledge.MaxFileBytes}
	}

	files, walkErrs := collectFiles(fs.Args())
	out := newReporter(stdout)
	sum := summary{}
	for _, e := range walkErrs {
		sum.refuse(e.path, e.reason)
		out.line("refused    %s: %s", e.path, e.reason)
	}
	for i, f := range files {
		if ctx.Err() != nil {
			break
		}
		outcome, detail, stop := ingestFile(ctx, in, f, out)
		switch outcome {
		case outcomeIngested:
			sum.ingested++
			out.line("ingested   %s (%s)", f.path, detail)
		case outcomeDuplicate:
			sum.duplicates++
			out.line("duplicate  %s (%s)", f.path, detail)
		default:
			sum.refuse(f.path, detail)
			out.line("refused    %s: %s", f.path, detail)
		}
		if stop {
			sum.notTried = len(files) - i - 1
			break
		}
	}
	sum.print(stdout)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	if sum.notTried > 0 {
		return fmt.Errorf("stopped: the server would refuse the other %d files the same way", sum.notTried)
	}
	if n := len(sum.refused); n > 0 {
		return fmt.Errorf("%d of %d files refused", n, n+sum.ingested+sum.duplicates)
	}
	return nil
}

// ingestFile reads and ingests one file, drawing its progress bar; stop
// says the run should end here (see stopError).
func ingestFile(ctx context.Context, in ingester, f inputFile, out *reporter) (outcome fileOutcome, detail string, stop bool) {
	if limit, key := in.limit(f.name); limit > 0 && f.size > limit {
		return outcomeRefused, fmt.Sprintf("The file is larger than the limit of %d bytes (%s): %d bytes.", limit, key, f.size), false
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return outcomeRefused, "cannot read: " + describePathError(err), false
	}
	bar := out.bar(f.path)
	outcome, detail, err = in.ingest(ctx, f.path, f.name, data, bar.set)
	bar.done()
	if err != nil {
		var stopErr *stopError
		return outcomeRefused, err.Error(), errors.As(err, &stopErr)
	}
	return outcome, detail, false
}

// inputFile is a file to ingest: its path and the name the service sees
// (its extension tells the type).
type inputFile struct {
	path, name string
	size       int64
}

type walkError struct{ path, reason string }

// collectFiles expands the arguments: files as given, folders into their
// regular files (recursively, hidden files and folders skipped, symbolic
// links not followed), in lexical order.
func collectFiles(args []string) ([]inputFile, []walkError) {
	var files []inputFile
	var errs []walkError
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			errs = append(errs, walkError{arg, describePathError(err)})
			continue
		}
		if !info.IsDir() {
			files = append(files, inputFile{path: arg, name: filepath.Base(arg), size: info.Size()})
			continue
		}
		_ = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, walkError{p, describePathError(err)})
				return nil
			}
			if p != arg && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				errs = append(errs, walkError{p, describePathError(err)})
				return nil
			}
			files = append(files, inputFile{path: p, name: d.Name(), size: info.Size()})
			return nil
		})
	}
	return files, errs
}

func describePathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// localIngester ingests through the knowledge service, in this process,
// reading each file as an upload of it would be read
// (knowledge.FileRequest).
type localIngester struct {
	svc     *knowledge.Service
	tenant  string
	addedBy string
	// textLimit and fileLimit: knowledge.max_upload_bytes and
	// knowledge.max_file_bytes, checked before a file is read.
	textLimit, fileLimit int64
}

func (l *localIngester) limit(name string) (int64, string) {
	if knowledge.IsFile(name) {
		return l.fileLimit, "knowledge.max_file_bytes"
	}
	return l.textLimit, "knowledge.max_upload_bytes"
}

func (l *localIngester) ingest(ctx context.Context, _, name string, data []byte, progress func(float64, string)) (fileOutcome, string, error) {
	req, err := knowledge.FileRequest(name, data)
	if err != nil {
		return outcomeRefused, refusalReason(err), nil
	}
	req.TenantID, req.AddedBy = l.tenant, l.addedBy
	req.Progress = func(p knowledge.Progress) { progress(progressFraction(p, l.svc.Embedding())) }
	doc, err := l.svc.Ingest(ctx, req)
	switch {
	case errors.Is(err, knowledge.ErrDuplicate):
		return outcomeDuplicate, fmt.Sprintf("same content as %q, %s", knowledge.DisplayTitle(doc), doc.ID), nil
	case err != nil:
		return outcomeRefused, refusalReason(err), nil
	}
	detail := fmt.Sprintf("%d chunks, %s", doc.Chunks, doc.ID)
	if doc.Warning != "" {
		detail += "; " + doc.Warning
	}
	return outcomeIngested, detail, nil
}

// refusalReason is the service's error as the sentence a failed upload
// shows.
func refusalReason(err error) string { return knowledge.Reason(err) }

// progressFraction maps a Progress to 0..1 and says what is being done:
// parsing pages up to 40 %, embedding up to 95 % (when embedding), then
// writing.
func progressFraction(p knowledge.Progress, embedding bool) (float64, string) {
	switch {
	case p.ChunksWritten > 0:
		return 1, "written"
	case p.ChunksTotal > 0 && embedding:
		return 0.4 + 0.55*float64(p.ChunksEmbedded)/float64(p.ChunksTotal),
			fmt.Sprintf("embedding %d/%d chunks", p.ChunksEmbedded, p.ChunksTotal)
	case p.ChunksTotal > 0:
		return 0.5, fmt.Sprintf("writing %d chunks", p.ChunksTotal)
	case p.PagesTotal > 0:
		return 0.4 * float64(p.PagesDone) / float64(p.PagesTotal), fmt.Sprintf("page %d/%d", p.PagesDone, p.PagesTotal)
	}
	return 0, "reading"
}

// summary counts the outcomes.
type summary struct {
	ingested, duplicates int
	refused              []walkError
	notTried             int // files left when the run stopped (stopError)
}

func (s *summary) refuse(path, reason string) { s.refused = append(s.refused, walkError{path, reason}) }

func (s *summary) print(w io.Writer) {
	fmt.Fprintf(w, "\n%d ingested, %d skipped as duplicates, %d refused", s.ingested, s.duplicates, len(s.refused))
	if s.notTried > 0 {
		fmt.Fprintf(w, ", %d not tried (the server would refuse them the same way)", s.notTried)
	}
	fmt.Fprintln(w)
	for _, r := range s.refused {
		fmt.Fprintf(w, "  refused %s: %s\n", r.path, r.reason)
	}
}
