package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
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
	outcomeInterrupted // the run was interrupted while the file was sent or stored
)

// ingester adds one file's bytes; progress is told how far it is, from 0
// to 1, and what it is doing.
type ingester interface {
	ingest(ctx context.Context, path, name string, data []byte, progress func(float64, string)) (fileOutcome, string, error)
	// limits are the largest files the service takes; 0 when not known
	// here (the server says).
	limits() inputLimits
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
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "chatpipe ingest: name at least one file or folder")
		fs.Usage()
		return ErrUsage
	}
	// Flags stop at the first path; one written after the paths would be
	// taken as a path, and the files before it stored as the flags it
	// did not get (another tenant, not shared).
	for _, a := range fs.Args() {
		if len(a) > 1 && strings.HasPrefix(a, "-") {
			fmt.Fprintf(stderr, "chatpipe ingest: %s comes after the paths; flags go before them (a file whose name starts with - is ./%s)\n", a, a)
			return ErrUsage
		}
	}
	if *server != "" {
		if u, err := url.Parse(*server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "chatpipe ingest: -server %s: want the server's URL, such as http://localhost:8080\n", *server)
			return ErrUsage
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for _, name := range []string{"tenant", "config"} {
			if set[name] {
				fmt.Fprintf(stderr, "chatpipe ingest: -%s is for a store opened here; with -server the API key decides the tenant and the server its settings\n", name)
				return ErrUsage
			}
		}
	}

	if *tenant == knowledge.SharedTenant {
		fmt.Fprintf(stderr, "chatpipe ingest: -tenant %s is the shared documents' owner, no tenant; to add shared documents use -shared (with -tenant naming who adds them)\n", knowledge.SharedTenant)
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
			max: inputLimits{text: cfg.Knowledge.MaxUploadBytes, file: cfg.Knowledge.MaxFileBytes}}
	}

	files, walkErrs, links := collectFiles(fs.Args())
	out := newReporter(stdout)
	sum := summary{links: links}
	for _, e := range walkErrs {
		sum.refuse(e.path, e.reason)
		out.line("refused    %s: %s", e.path, e.reason)
	}
	for _, l := range links {
		out.line("skipped    %s: %s", l.path, l.reason)
	}
	for i, f := range files {
		if ctx.Err() != nil {
			sum.notTried = len(files) - i
			break
		}
		outcome, detail, stop := ingestFile(ctx, in, f, out)
		if outcome == outcomeInterrupted {
			sum.interrupted = f.path
			sum.notTried = len(files) - i - 1
			if detail != "" {
				detail = ": " + detail
			}
			out.line("interrupted %s%s", f.path, detail)
			break
		}
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
		if stop != nil {
			sum.notTried = len(files) - i - 1
			sum.stopped = stop
			break
		}
	}
	sum.print(stdout)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	if sum.notTried > 0 {
		if sum.stopped.unreachable {
			return fmt.Errorf("stopped: the server cannot be reached; %d more files were not tried", sum.notTried)
		}
		return fmt.Errorf("stopped: the server would refuse the other %d files the same way", sum.notTried)
	}
	if n := len(sum.refused); n > 0 {
		return fmt.Errorf("%d of %d files refused", n, n+sum.ingested+sum.duplicates)
	}
	return nil
}

// ingestFile reads and ingests one file, drawing its progress bar; stop
// says the run should end here, and why (see stopError).
func ingestFile(ctx context.Context, in ingester, f inputFile, out *reporter) (outcome fileOutcome, detail string, stop *stopError) {
	data, refusal := readInput(f, in.limits())
	if refusal != "" {
		return outcomeRefused, refusal, nil
	}
	bar := out.bar(f.path)
	outcome, detail, err := in.ingest(ctx, f.path, f.name, data, bar.set)
	bar.done()
	if ctx.Err() != nil && outcome != outcomeIngested && outcome != outcomeDuplicate {
		// Cut short by the interrupt, not refused. A server that had
		// taken the file goes on with it (pendingError says which).
		var pending *pendingError
		if errors.As(err, &pending) {
			return outcomeInterrupted, pending.Error(), nil
		}
		return outcomeInterrupted, "", nil
	}
	if err != nil {
		stop, _ = errors.AsType[*stopError](err)
		return outcomeRefused, err.Error(), stop
	}
	return outcome, detail, nil
}

// inputFile is a file to ingest: its path and the name the service sees
// (its extension tells the type).
type inputFile struct {
	path, name string
	size       int64
}

type walkError struct{ path, reason string }

// collectFiles expands the arguments: files as given, folders into their
// regular files (recursively, hidden files and folders skipped), in
// lexical order. A folder named through a symbolic link is walked; inside
// a folder, a symbolic link to a file is followed, while one to a folder
// (it may loop) or to nothing is not, and is listed in links with why.
// Anything but a regular file or a folder (a FIFO, a device: reading it
// could block or never end) is an error.
func collectFiles(args []string) (files []inputFile, errs []walkError, links []walkError) {
	for _, arg := range args {
		info, err := os.Stat(arg)
		switch {
		case err != nil:
			errs = append(errs, walkError{arg, describePathError(err)})
			continue
		case info.Mode().IsRegular():
			files = append(files, inputFile{path: arg, name: filepath.Base(arg), size: info.Size()})
			continue
		case !info.IsDir():
			errs = append(errs, walkError{arg, notRegular})
			continue
		}
		root := arg
		if l, err := os.Lstat(arg); err == nil && l.Mode()&fs.ModeSymlink != 0 {
			root = arg + string(filepath.Separator) // WalkDir then starts at the folder the link names
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, walkError{p, describePathError(err)})
				return nil
			}
			if p == root {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch t := d.Type(); {
			case t.IsDir():
				return nil
			case t&fs.ModeSymlink != 0:
				target, err := os.Stat(p)
				switch {
				case err != nil:
					links = append(links, walkError{p, "a symbolic link to nothing readable (" + describePathError(err) + "), skipped"})
				case target.IsDir():
					links = append(links, walkError{p, "a symbolic link to a folder, not followed (name the folder itself to add it)"})
				case target.Mode().IsRegular():
					files = append(files, inputFile{path: p, name: d.Name(), size: target.Size()})
				default:
					errs = append(errs, walkError{p, notRegular})
				}
				return nil
			case !t.IsRegular():
				errs = append(errs, walkError{p, notRegular})
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
	return files, errs, links
}

// notRegular is why a FIFO, socket or device is not read.
const notRegular = "not a regular file (a FIFO, socket or device), not read"

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
	// max: knowledge.max_upload_bytes and knowledge.max_file_bytes,
	// checked before a file is read.
	max inputLimits
}

func (l *localIngester) limits() inputLimits { return l.max }

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
	links                []walkError // symbolic links not followed
	interrupted          string      // the file an interrupt cut short
	notTried             int         // files left when the run stopped (stopError) or was interrupted
	stopped              *stopError  // why it stopped, if it did
}

func (s *summary) refuse(path, reason string) { s.refused = append(s.refused, walkError{path, reason}) }

func (s *summary) print(w io.Writer) {
	fmt.Fprintf(w, "\n%d ingested, %d skipped as duplicates, %d refused", s.ingested, s.duplicates, len(s.refused))
	if len(s.links) > 0 {
		fmt.Fprintf(w, ", %d symbolic links not followed", len(s.links))
	}
	if s.interrupted != "" {
		fmt.Fprint(w, ", 1 interrupted")
	}
	if s.notTried > 0 {
		fmt.Fprintf(w, ", %d not tried", s.notTried)
		if s.stopped != nil {
			fmt.Fprintf(w, " (%s)", s.stopped.why())
		}
	}
	fmt.Fprintln(w)
	for _, r := range s.refused {
		fmt.Fprintln(w, terminalSafe(fmt.Sprintf("  refused %s: %s", r.path, r.reason)))
	}
	for _, l := range s.links {
		fmt.Fprintln(w, terminalSafe(fmt.Sprintf("  skipped %s: %s", l.path, l.reason)))
	}
}
