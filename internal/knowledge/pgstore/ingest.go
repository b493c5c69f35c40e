package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

// The background-ingest side of the store: a processing document is a
// knowledge_documents row without content or chunks plus a knowledge_ingest
// row with its status, progress and upload (migration 0004). Only
// FinishDocument changes what a search sees, so only it advances the
// version; the others write outside write().

// longAgo is the alive_at of a released ingest: before any claim's cut-off.
var longAgo = time.Unix(0, 0).UTC()

// BeginDocument stores doc as processing, with its upload.
func (s *Store) BeginDocument(ctx context.Context, doc knowledge.Document, upload []byte) (knowledge.Document, error) {
	if doc.ID == "" {
		return knowledge.Document{}, errors.New("knowledge: begin document: empty document id")
	}
	doc.TenantID = cmp.Or(doc.TenantID, knowledge.DefaultTenant)
	doc.AddedBy = cmp.Or(doc.AddedBy, doc.TenantID)
	doc.Content, doc.ContentHash, doc.Bytes, doc.Chunks, doc.Embedded, doc.Warning = "", knowledge.PendingHash(doc.ID), 0, 0, false, ""
	doc.Status, doc.Progress, doc.Error, doc.Attempts, doc.Claim = knowledge.StatusProcessing, knowledge.Progress{}, "", 1, 1
	doc.CreatedAt = s.clock.Now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO knowledge_documents
			(id, tenant_id, title, source, media_type, content, content_hash, bytes, chunk_count, embedded, created_at, added_by, file_hash)
			VALUES ($1, $2, $3, $4, $5, '', $6, 0, 0, false, $7, $8, $9)`,
			doc.ID, doc.TenantID, doc.Title, doc.Source, doc.MediaType, doc.ContentHash, doc.CreatedAt, addedBy(doc),
			doc.FileHash); err != nil {
			if pgdb.IsUniqueViolation(err) {
				return knowledge.ErrAlreadyExists
			}
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO knowledge_ingest (document_id, status, attempts, claim, alive_at, upload)
			VALUES ($1, 'processing', 1, 1, $2, $3)`, doc.ID, doc.CreatedAt, upload)
		return err
	})
	if err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: begin document %s: %w", doc.ID, err)
	}
	return doc, nil
}

// Upload returns a processing document's upload.
func (s *Store) Upload(ctx context.Context, id string) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT upload FROM knowledge_ingest WHERE document_id = $1 AND status = 'processing'`, id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		err = knowledge.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge: upload of %s: %w", id, err)
	}
	return data, nil
}

// UpdateProgress records progress and a sign of life.
func (s *Store) UpdateProgress(ctx context.Context, id string, claim int64, p knowledge.Progress) error {
	return s.updateProcessing(ctx, "update progress", id, `UPDATE knowledge_ingest SET pages_done = $2, pages_total = $3,
		chunks_total = $4, chunks_embedded = $5, chunks_written = $6, alive_at = $7
		WHERE document_id = $1 AND status = 'processing' AND claim = $8`,
		p.PagesDone, p.PagesTotal, p.ChunksTotal, p.ChunksEmbedded, p.ChunksWritten, s.clock.Now(), claim)
}

// ReleaseDocument makes a processing document's ingest stale at once.
func (s *Store) ReleaseDocument(ctx context.Context, id string, claim int64) error {
	return s.updateProcessing(ctx, "release document", id,
		`UPDATE knowledge_ingest SET alive_at = $2, attempts = GREATEST(attempts - 1, 0)
		WHERE document_id = $1 AND status = 'processing' AND claim = $3`, longAgo, claim)
}

// FailDocument marks a processing document failed and drops its upload.
func (s *Store) FailDocument(ctx context.Context, id string, claim int64, reason, duplicateOf string) error {
	// The file may be sent again: it is no longer this document's (unless
	// it failed as a duplicate: the file is then known).
	// The statement's count is the failed ingest rows (0: not processing).
	return s.updateProcessing(ctx, "fail document", id, `WITH failed AS (
			UPDATE knowledge_ingest SET status = 'failed', error = $2, duplicate_of = $4, upload = NULL, alive_at = $3
			WHERE document_id = $1 AND status = 'processing' AND claim = $5 RETURNING document_id),
		cleared AS (UPDATE knowledge_documents SET file_hash = '' WHERE id IN (SELECT document_id FROM failed) AND $4 = '' RETURNING id)
		SELECT document_id FROM failed`,
		reason, s.clock.Now(), duplicateOf, claim)
}

// DeleteFailed removes the failed attempts doc replaces (see
// knowledge.Store); their ingest rows go with them (ON DELETE CASCADE).
func (s *Store) DeleteFailed(ctx context.Context, doc knowledge.Document) (int, error) {
	if doc.Source == "" && doc.Title == "" {
		return 0, nil
	}
	doc.TenantID = cmp.Or(doc.TenantID, knowledge.DefaultTenant)
	doc.AddedBy = cmp.Or(doc.AddedBy, doc.TenantID)
	tag, err := s.pool.Exec(ctx, `DELETE FROM knowledge_documents
		WHERE id IN (SELECT document_id FROM knowledge_ingest WHERE status = 'failed' AND duplicate_of = '')
		AND tenant_id = $1 AND added_by = $2 AND id <> $3 AND source = $4 AND ($4 <> '' OR title = $5)`,
		doc.TenantID, addedBy(doc), doc.ID, doc.Source, doc.Title)
	if err != nil {
		return 0, fmt.Errorf("knowledge: delete failed documents: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// updateProcessing runs one UPDATE of a processing document's ingest row
// ($1 is the id); no row changed means the document is not processing.
func (s *Store) updateProcessing(ctx context.Context, what, id, sql string, args ...any) error {
	var tag pgconn.CommandTag
	tag, err := s.pool.Exec(ctx, sql, append([]any{id}, args...)...)
	if err == nil && tag.RowsAffected() == 0 {
		err = knowledge.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("knowledge: %s %s: %w", what, id, err)
	}
	return nil
}

// FinishDocument writes a processing document's content and chunks and
// drops its ingest row (it is then ready), in one transaction that takes
// the version's row lock first, as AddDocument does: no other replica can
// add the same content between the duplicate check and the commit.
func (s *Store) FinishDocument(ctx context.Context, doc knowledge.Document, chunks []knowledge.Chunk) (knowledge.Document, error) {
	if err := knowledge.CheckNewDocument(doc, chunks); err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: finish document: %w", err)
	}
	var (
		stored knowledge.Document
		seqs   []int64
	)
	err := s.write(ctx, func(tx pgx.Tx) error {
		// The ingest row locked: a concurrent FailDocument waits, then finds
		// the document ready and changes nothing.
		var locked string
		if err := tx.QueryRow(ctx, `SELECT document_id FROM knowledge_ingest WHERE document_id = $1 AND status = 'processing'
			AND claim = $2 FOR UPDATE`, doc.ID, doc.Claim).Scan(&locked); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return knowledge.ErrNotFound
			}
			return err
		}
		d, err := scanDocument(tx.QueryRow(ctx, `SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+`
			WHERE id = $1`, doc.ID), true)
		if err != nil {
			return err
		}
		d.Title, d.Content = cmp.Or(doc.Title, d.Title), doc.Content
		stored = knowledge.WithComputed(d, chunks)
		stored.Status, stored.Progress, stored.Error, stored.Attempts, stored.Claim = knowledge.StatusReady, knowledge.Progress{}, "", 0, 0
		switch e, err := scanDocument(tx.QueryRow(ctx, `SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+`
			WHERE tenant_id = $1 AND content_hash = $2`, stored.TenantID, stored.ContentHash), true); {
		case err == nil:
			return &errDuplicate{e}
		case !errors.Is(err, knowledge.ErrNotFound):
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE knowledge_documents SET title = $2, content = $3, content_hash = $4, bytes = $5,
			chunk_count = $6, embedded = $7 WHERE id = $1`,
			stored.ID, stored.Title, stored.Content, stored.ContentHash, stored.Bytes, stored.Chunks, stored.Embedded); err != nil {
			return err
		}
		if seqs, err = insertChunks(ctx, tx, stored, chunks); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM knowledge_ingest WHERE document_id = $1`, stored.ID)
		return err
	}, func() {
		for i, c := range chunks {
			if len(c.Embedding) > 0 {
				s.vectors.Add(stored.TenantID, seqs[i], c.Embedding)
			}
		}
	})
	var dup *errDuplicate
	switch {
	case errors.As(err, &dup):
		return dup.existing, knowledge.ErrDuplicate
	case err != nil:
		return knowledge.Document{}, fmt.Errorf("knowledge: finish document %s: %w", doc.ID, err)
	}
	return stored, nil
}

// ClaimStale claims the processing documents whose ingest went quiet,
// each under a new claim; their progress starts again from nothing. SKIP
// LOCKED: two replicas claiming at once take different documents.
func (s *Store) ClaimStale(ctx context.Context, before time.Time, limit int, except []string) ([]knowledge.Document, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE knowledge_ingest SET attempts = attempts + 1, claim = claim + 1, pages_done = 0, pages_total = 0, chunks_total = 0,
			chunks_embedded = 0, chunks_written = 0, alive_at = $1
		WHERE document_id IN (SELECT document_id FROM knowledge_ingest
		                      WHERE status = 'processing' AND alive_at < $2 AND document_id <> ALL($4::text[])
		                      ORDER BY alive_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING document_id, claim`, s.clock.Now(), before, limit, append([]string{}, except...))
	if err != nil {
		return nil, fmt.Errorf("knowledge: claim stale ingests: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, pgx.RowToStructByPos[knowledge.Claimed])
	if err != nil {
		return nil, fmt.Errorf("knowledge: claim stale ingests: %w", err)
	}
	return knowledge.ClaimedDocuments(ctx, s, claimed)
}
