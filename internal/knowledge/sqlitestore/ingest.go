package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

// The background-ingest side of the store: a processing document is a
// knowledge_documents row without content or chunks plus a knowledge_ingest
// row with its status, progress and upload (migration 0004).

// longAgo is the alive_at of a released ingest: before any claim's cut-off.
var longAgo = sqlitedb.FormatTime(time.Unix(0, 0))

// BeginDocument stores doc as processing, with its upload.
func (s *Store) BeginDocument(ctx context.Context, doc knowledge.Document, upload []byte) (knowledge.Document, error) {
	if doc.ID == "" {
		return knowledge.Document{}, errors.New("knowledge: begin document: empty document id")
	}
	doc.TenantID = cmp.Or(doc.TenantID, knowledge.DefaultTenant)
	doc.AddedBy = cmp.Or(doc.AddedBy, doc.TenantID)
	doc.Content, doc.ContentHash, doc.Bytes, doc.Chunks, doc.Embedded, doc.Warning = "", knowledge.PendingHash(doc.ID), 0, 0, false, ""
	doc.Status, doc.Progress, doc.Error, doc.Attempts, doc.Claim = knowledge.StatusProcessing, knowledge.Progress{}, "", 1, 1
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) (int64, error) {
		doc.CreatedAt = now
		if _, err := tx.ExecContext(ctx, `INSERT INTO knowledge_documents
			(id, tenant_id, title, source, media_type, content, content_hash, bytes, chunk_count, embedded, created_at, added_by, file_hash)
			VALUES (?, ?, ?, ?, ?, '', ?, 0, 0, 0, ?, ?, ?)`,
			doc.ID, doc.TenantID, doc.Title, doc.Source, doc.MediaType, doc.ContentHash, sqlitedb.FormatTime(now), addedBy(doc),
			doc.FileHash); err != nil {
			if sqlitedb.IsUniqueViolation(err) {
				return 0, knowledge.ErrAlreadyExists
			}
			return 0, err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO knowledge_ingest (document_id, status, attempts, claim, alive_at, upload)
			VALUES (?, 'processing', 1, 1, ?, ?)`, doc.ID, sqlitedb.FormatTime(now), upload)
		return 0, err
	}, func(int64) {})
	if err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: begin document %s: %w", doc.ID, err)
	}
	return doc, nil
}

// Upload returns a processing document's upload.
func (s *Store) Upload(ctx context.Context, id string) ([]byte, error) {
	var data []byte
	err := s.reader.QueryRowContext(ctx, `SELECT upload FROM knowledge_ingest WHERE document_id = ? AND status = 'processing'`, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		err = knowledge.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge: upload of %s: %w", id, err)
	}
	return data, nil
}

// UpdateProgress records progress and a sign of life.
func (s *Store) UpdateProgress(ctx context.Context, id string, claim int64, p knowledge.Progress) error {
	return s.updateProcessing(ctx, "update progress", id, func(tx *sql.Tx, now time.Time) (sql.Result, error) {
		return tx.ExecContext(ctx, `UPDATE knowledge_ingest SET pages_done = ?, pages_total = ?, chunks_total = ?,
			chunks_embedded = ?, chunks_written = ?, alive_at = ? WHERE document_id = ? AND status = 'processing' AND claim = ?`,
			p.PagesDone, p.PagesTotal, p.ChunksTotal, p.ChunksEmbedded, p.ChunksWritten, sqlitedb.FormatTime(now), id, claim)
	})
}

// ReleaseDocument makes a processing document's ingest stale at once.
func (s *Store) ReleaseDocument(ctx context.Context, id string, claim int64) error {
	return s.updateProcessing(ctx, "release document", id, func(tx *sql.Tx, _ time.Time) (sql.Result, error) {
		return tx.ExecContext(ctx, `UPDATE knowledge_ingest SET alive_at = ?, attempts = max(attempts - 1, 0)
			WHERE document_id = ? AND status = 'processing' AND claim = ?`, longAgo, id, claim)
	})
}

// FailDocument marks a processing document failed and drops its upload.
func (s *Store) FailDocument(ctx context.Context, id string, claim int64, reason, duplicateOf string) error {
	return s.updateProcessing(ctx, "fail document", id, func(tx *sql.Tx, now time.Time) (sql.Result, error) {
		res, err := tx.ExecContext(ctx, `UPDATE knowledge_ingest SET status = 'failed', error = ?, duplicate_of = ?, upload = NULL,
			alive_at = ? WHERE document_id = ? AND status = 'processing' AND claim = ?`, reason, duplicateOf, sqlitedb.FormatTime(now), id, claim)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return res, err // not processing, or not this claim's: nothing more to change
		}
		// The file may be sent again: it is no longer this document's
		// (unless it failed as a duplicate: the file is then known).
		if duplicateOf == "" {
			if _, err := tx.ExecContext(ctx, `UPDATE knowledge_documents SET file_hash = '' WHERE id = ?`, id); err != nil {
				return nil, err
			}
		}
		return res, nil
	})
}

// DeleteFailed removes the failed attempts doc replaces (see
// knowledge.Store).
func (s *Store) DeleteFailed(ctx context.Context, doc knowledge.Document) (int, error) {
	if doc.Source == "" && doc.Title == "" {
		return 0, nil
	}
	doc.TenantID = cmp.Or(doc.TenantID, knowledge.DefaultTenant)
	doc.AddedBy = cmp.Or(doc.AddedBy, doc.TenantID)
	var n int64
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) (int64, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM knowledge_documents
			WHERE id IN (SELECT document_id FROM knowledge_ingest WHERE status = 'failed' AND duplicate_of = '')
			AND tenant_id = ? AND added_by = ? AND id <> ? AND source = ? AND (? <> '' OR title = ?)`,
			doc.TenantID, addedBy(doc), doc.ID, doc.Source, doc.Source, doc.Title)
		if err != nil {
			return 0, err
		}
		n, err = res.RowsAffected()
		return 0, err
	}, func(int64) {})
	if err != nil {
		return 0, fmt.Errorf("knowledge: delete failed documents: %w", err)
	}
	return int(n), nil
}

// updateProcessing runs one UPDATE of a processing document's ingest row;
// no row changed means the document is not processing: ErrNotFound.
func (s *Store) updateProcessing(ctx context.Context, what, id string, update func(tx *sql.Tx, now time.Time) (sql.Result, error)) error {
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) (int64, error) {
		res, err := update(tx, now)
		if err != nil {
			return 0, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n == 0 {
			return 0, knowledge.ErrNotFound
		}
		return 0, nil
	}, func(int64) {})
	if err != nil {
		return fmt.Errorf("knowledge: %s %s: %w", what, id, err)
	}
	return nil
}

// FinishDocument writes a processing document's content and chunks and
// drops its ingest row (it is then ready), in one transaction.
func (s *Store) FinishDocument(ctx context.Context, doc knowledge.Document, chunks []knowledge.Chunk) (knowledge.Document, error) {
	if err := knowledge.CheckNewDocument(doc, chunks); err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: finish document: %w", err)
	}
	var (
		stored, existing knowledge.Document
		seqs             []int64
	)
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) (int64, error) {
		d, err := scanDocument(tx.QueryRowContext(ctx, `SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+`
			WHERE id = ? AND status = 'processing' AND claim = ?`, doc.ID, doc.Claim), true)
		if err != nil {
			return 0, err
		}
		d.Title, d.Content = cmp.Or(doc.Title, d.Title), doc.Content
		stored = knowledge.WithComputed(d, chunks)
		stored.Status, stored.Progress, stored.Error, stored.Attempts, stored.Claim = knowledge.StatusReady, knowledge.Progress{}, "", 0, 0
		switch e, err := scanDocument(tx.QueryRowContext(ctx, `SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+`
			WHERE tenant_id = ? AND content_hash = ?`, stored.TenantID, stored.ContentHash), true); {
		case err == nil:
			existing = e
			return 0, knowledge.ErrDuplicate
		case !errors.Is(err, knowledge.ErrNotFound):
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE knowledge_documents SET title = ?, content = ?, content_hash = ?, bytes = ?,
			chunk_count = ?, embedded = ? WHERE id = ?`,
			stored.Title, stored.Content, stored.ContentHash, stored.Bytes, stored.Chunks, stored.Embedded, stored.ID); err != nil {
			return 0, err
		}
		if seqs, err = insertChunks(ctx, tx, stored, chunks); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM knowledge_ingest WHERE document_id = ?`, stored.ID); err != nil {
			return 0, err
		}
		return bumpVersion(ctx, tx)
	}, func(version int64) { s.cacheVectors(version, stored.TenantID, seqs, chunks) })
	switch {
	case errors.Is(err, knowledge.ErrDuplicate):
		return existing, knowledge.ErrDuplicate
	case err != nil:
		return knowledge.Document{}, fmt.Errorf("knowledge: finish document %s: %w", doc.ID, err)
	}
	return stored, nil
}

// ClaimStale claims the processing documents whose ingest went quiet,
// each under a new claim; their progress starts again from nothing.
func (s *Store) ClaimStale(ctx context.Context, before time.Time, limit int, except []string) ([]knowledge.Document, error) {
	if limit <= 0 {
		return nil, nil
	}
	exceptJSON, err := json.Marshal(append([]string{}, except...))
	if err != nil {
		return nil, err
	}
	var claimed []knowledge.Claimed
	err = s.write(ctx, func(tx *sql.Tx, now time.Time) (int64, error) {
		rows, err := tx.QueryContext(ctx, `UPDATE knowledge_ingest SET attempts = attempts + 1, claim = claim + 1, pages_done = 0, pages_total = 0, chunks_total = 0,
			chunks_embedded = 0, chunks_written = 0, alive_at = ?
			WHERE document_id IN (SELECT document_id FROM knowledge_ingest
			                      WHERE status = 'processing' AND alive_at < ?
			                        AND document_id NOT IN (SELECT value FROM json_each(?))
			                      ORDER BY alive_at LIMIT ?)
			RETURNING document_id, claim`, sqlitedb.FormatTime(now), sqlitedb.FormatTime(before), string(exceptJSON), limit)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		for rows.Next() {
			var c knowledge.Claimed
			if err := rows.Scan(&c.ID, &c.Claim); err != nil {
				return 0, err
			}
			claimed = append(claimed, c)
		}
		return 0, rows.Err()
	}, func(int64) {})
	if err != nil {
		return nil, fmt.Errorf("knowledge: claim stale ingests: %w", err)
	}
	return knowledge.ClaimedDocuments(ctx, s, claimed)
}
