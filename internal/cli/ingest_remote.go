package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// remoteIngester uploads through a chatpipe server's HTTP API, as the web
// page does, and follows a background ingest to its end.
type remoteIngester struct {
	base, key string
	shared    bool
	client    *http.Client
	poll      time.Duration // between looks at a background ingest; 0 = 300 ms
}

func (r *remoteIngester) limits() inputLimits { return inputLimits{} }

// documentReply is the part of the server's document JSON used here.
type documentReply struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Chunks    int    `json:"chunks"`
	Duplicate bool   `json:"duplicate"`
	Warning   string `json:"warning"`
	Status    string `json:"status"`
	Error     string `json:"error"`
	// DuplicateOf: the ingest failed because this document has its text.
	DuplicateOf string `json:"duplicate_of"`
	Progress    *struct {
		PagesDone      int `json:"pages_done"`
		PagesTotal     int `json:"pages_total"`
		ChunksTotal    int `json:"chunks_total"`
		ChunksEmbedded int `json:"chunks_embedded"`
		ChunksWritten  int `json:"chunks_written"`
	} `json:"progress"`
	Embedded bool `json:"embedded"`
}

type errorReply struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// busyRetries bounds how often a file is sent again while the server's
// ingest queue is full.
const busyRetries = 20

func (r *remoteIngester) ingest(ctx context.Context, _, name string, data []byte, progress func(float64, string)) (fileOutcome, string, error) {
	for attempt := 0; ; attempt++ {
		resp, err := r.upload(ctx, name, data)
		if err != nil {
			return outcomeRefused, "", err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return outcomeRefused, "", fmt.Errorf("read the server's answer: %w", err)
		}
		var doc documentReply
		switch resp.StatusCode {
		case http.StatusCreated, http.StatusOK, http.StatusAccepted:
			if err := json.Unmarshal(body, &doc); err != nil {
				return outcomeRefused, "", fmt.Errorf("the server's answer is not a document: %w", err)
			}
		default:
			var e errorReply
			_ = json.Unmarshal(body, &e)
			reason := cmp.Or(e.Error.Message, fmt.Sprintf("the server answered %s", resp.Status))
			// A full ingest queue (503) or a request rate (a 429 other than
			// the failed-key limit's, a proxy's too) passes: wait as the
			// server asks and send again.
			passes := resp.StatusCode == http.StatusServiceUnavailable ||
				resp.StatusCode == http.StatusTooManyRequests && e.Error.Code != "auth_rate_limited"
			if passes && attempt < busyRetries {
				wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				progress(0, "the server is busy; waiting")
				if err := sleep(ctx, time.Duration(max(wait, 1))*time.Second); err != nil {
					return outcomeRefused, "", err
				}
				continue
			}
			if refusesEveryFile(resp.StatusCode, e.Error.Code) {
				return outcomeRefused, "", &stopError{reason: reason}
			}
			return outcomeRefused, reason, nil
		}
		switch {
		case doc.Duplicate:
			return outcomeDuplicate, fmt.Sprintf("same content as %q, %s", doc.Title, doc.ID), nil
		case resp.StatusCode == http.StatusAccepted:
			return r.follow(ctx, doc.ID, progress)
		}
		return outcomeIngested, describeReply(doc), nil
	}
}

// follow polls a background ingest until it is ready or failed.
func (r *remoteIngester) follow(ctx context.Context, id string, progress func(float64, string)) (fileOutcome, string, error) {
	for {
		if err := sleep(ctx, cmp.Or(r.poll, 300*time.Millisecond)); err != nil {
			return outcomeRefused, "", &pendingError{id}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/api/v1/knowledge/documents/"+id, nil)
		if err != nil {
			return outcomeRefused, "", err
		}
		r.authorize(req)
		resp, err := r.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return outcomeRefused, "", &pendingError{id}
			}
			return outcomeRefused, "", err
		}
		var doc documentReply
		err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			return outcomeRefused, "", fmt.Errorf("following the ingest of %s: the server answered %s", id, resp.Status)
		}
		switch doc.Status {
		case knowledge.StatusReady:
			return outcomeIngested, describeReply(doc), nil
		case knowledge.StatusFailed:
			if doc.DuplicateOf != "" { // its text was found stored once read
				return outcomeDuplicate, fmt.Sprintf("same content as document %s", doc.DuplicateOf), nil
			}
			return outcomeRefused, doc.Error, nil
		}
		if p := doc.Progress; p != nil {
			progress(progressFraction(knowledge.Progress{PagesDone: p.PagesDone, PagesTotal: p.PagesTotal, ChunksTotal: p.ChunksTotal,
				ChunksEmbedded: p.ChunksEmbedded, ChunksWritten: p.ChunksWritten}, p.ChunksEmbedded > 0))
		}
	}
}

// refusesEveryFile tells chatpipe's answers that would be the same for
// every other file: a key it does not take (401), one that may not add
// shared documents (403 forbidden), or too many attempts with a wrong key
// (429 auth_rate_limited, which every further attempt would prolong). The
// run stops there rather than spend the rest of the files on it; another
// 403 (a proxy's, say) refuses the one file.
func refusesEveryFile(status int, code string) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden && code == "forbidden" ||
		status == http.StatusTooManyRequests && code == "auth_rate_limited"
}

// pendingError is a background ingest the server goes on with after the
// run stopped following it (interrupted).
type pendingError struct{ id string }

func (e *pendingError) Error() string {
	return "the server goes on ingesting it as document " + e.id
}

// stopError is a refusal that ends the run (see refusesEveryFile), or a
// server that cannot be reached.
type stopError struct {
	reason      string
	unreachable bool
}

func (e *stopError) Error() string { return e.reason }

// why says why the files after it were not tried.
func (e *stopError) why() string {
	if e.unreachable {
		return "the server cannot be reached"
	}
	return "the server would refuse them the same way"
}

func describeReply(doc documentReply) string {
	detail := fmt.Sprintf("%d chunks, %s", doc.Chunks, doc.ID)
	if doc.Warning != "" {
		detail += "; " + doc.Warning
	}
	return detail
}

// upload sends one file as the web page does (multipart, field "file").
func (r *remoteIngester) upload(ctx context.Context, name string, data []byte) (*http.Response, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("file", name)
	if err != nil {
		return nil, err
	}
	if _, err := part.Write(data); err != nil {
		return nil, err
	}
	if r.shared {
		if err := mw.WriteField("shared", "true"); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/api/v1/knowledge/documents", &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r.authorize(req)
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
			// No server there (refused, no route, no such host): the
			// same for every other file.
			return nil, &stopError{reason: fmt.Sprintf("cannot reach the server at %s: %v", r.base, err), unreachable: true}
		}
		return nil, fmt.Errorf("upload to %s: %w", r.base, err)
	}
	return resp, nil
}

func (r *remoteIngester) authorize(req *http.Request) {
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
