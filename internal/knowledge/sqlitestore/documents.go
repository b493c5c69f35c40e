package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

// documentColumns are read FROM documentsFrom: a document with its
// ingest status (no knowledge_ingest row: ready). No column name is in
// both tables, so none needs qualifying.
const documentColumns = `id, tenant_id, title, source, media_type, content_hash, bytes, chunk_count, embedded, created_at,
	COALESCE(status, 'ready'), COALESCE(error, ''), COALESCE(attempts, 0), COALESCE(pages_done, 0), COALESCE(pages_total, 0),
	COALESCE(chunks_total, 0), COALESCE(chunks_embedded, 0), COALESCE(chunks_written, 0), COALESCE(duplicate_of, ''), COALESCE(claim, 0)`

// documentsFrom joins each document with its ingest status.
const documentsFrom = `knowledge_documents LEFT JOIN knowledge_ingest ON document_id = id`

// contentColumns follow documentColumns when a document is read whole.
const contentColumns = `content, added_by`

// AddDocument stores doc and its chunks, indexes them for keyword search
// and adds their embeddings to the in-memory vector index, all or nothing.
func (s *Store) AddDocument(ctx context.Context, doc knowledge.Document, chunks []knowledge.Chunk) (knowledge.Document, error) {
	if err := knowledge.CheckNewDocument(doc, chunks); err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: add document: %w", err)
	}
	doc.TenantID = cmp.Or(doc.TenantID, knowledge.DefaultTenant)
	doc.ContentHash = knowledge.ContentHash(doc.Content)
	doc.Bytes = len(doc.Content)
	doc.Chunks = len(chunks)
	doc.Embedded = len(chunks) > 0
	for _, c := range chunks {
		doc.Embedded = doc.Embedded && len(c.Embedding) > 0
	}
	doc.Warning = ""
	doc.Status, doc.Progress, doc.Error, doc.Attempts, doc.Claim = knowledge.StatusReady, knowledge.Progress{}, "", 0, 0
	doc.AddedBy = cmp.Or(doc.AddedBy, doc.TenantID)

	var existing knowledge.Document
	var seqs []int64
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) (int64, error) {
		switch d, err := scanDocument(tx.QueryRowContext(ctx,
			`SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+` WHERE tenant_id = ? AND content_hash = ?`,
			doc.TenantID, doc.ContentHash), true); {
		case err == nil:
			existing = d
			return 0, knowledge.ErrDuplicate
		case !errors.Is(err, knowledge.ErrNotFound):
			return 0, err
		}
		doc.CreatedAt = now
		if _, err := tx.ExecContext(ctx, `INSERT INTO knowledge_documents
			(id, tenant_id, title, source, media_type, content, content_hash, bytes, chunk_count, embedded, created_at, added_by, file_hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			doc.ID, doc.TenantID, doc.Title, doc.Source, doc.MediaType, doc.Content, doc.ContentHash, doc.Bytes,
			doc.Chunks, doc.Embedded, sqlitedb.FormatTime(now), addedBy(doc), doc.FileHash); err != nil {
			if sqlitedb.IsUniqueViolation(err) {
				return 0, knowledge.ErrAlreadyExists
			}
			return 0, err
		}
		var err error
		if seqs, err = insertChunks(ctx, tx, doc, chunks); err != nil {
			return 0, err
		}
		return bumpVersion(ctx, tx)
	}, func(version int64) { s.cacheVectors(version, doc.TenantID, seqs, chunks) })
	switch {
	case errors.Is(err, knowledge.ErrDuplicate):
		return existing, knowledge.ErrDuplicate
	case errors.Is(err, knowledge.ErrAlreadyExists):
		return knowledge.Document{}, fmt.Errorf("knowledge: add document %s: %w", doc.ID, err)
	case err != nil:
		return knowledge.Document{}, fmt.Errorf("knowledge: add document: %w", err)
	}
	return doc, nil
}

// insertChunks inserts the chunks and their keyword-index rows and returns
// their seqs, in order.
func insertChunks(ctx context.Context, tx *sql.Tx, doc knowledge.Document, chunks []knowledge.Chunk) ([]int64, error) {
	insChunk, err := tx.PrepareContext(ctx, `INSERT INTO knowledge_chunks
		(id, document_id, tenant_id, idx, heading, page, content, tokens, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`)
	if err != nil {
		return nil, err
	}
	defer insChunk.Close()
	insTerms, err := tx.PrepareContext(ctx, `INSERT INTO knowledge_fts (rowid, title, heading, body, tenant) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	defer insTerms.Close()

	title := knowledge.IndexText(knowledge.TitleText(doc.Title, doc.Content))
	seqs := make([]int64, len(chunks))
	for i, c := range chunks {
		var blob []byte
		if len(c.Embedding) > 0 {
			blob = encodeVector(c.Embedding)
		}
		if err := insChunk.QueryRowContext(ctx, c.ID, doc.ID, doc.TenantID, c.Index, c.Heading, c.Page, c.Content, c.Tokens, blob).Scan(&seqs[i]); err != nil {
			if sqlitedb.IsUniqueViolation(err) {
				return nil, fmt.Errorf("chunk %s: %w", c.ID, knowledge.ErrAlreadyExists)
			}
			return nil, fmt.Errorf("chunk %s: %w", c.ID, err)
		}
		if _, err := insTerms.ExecContext(ctx, seqs[i], title, knowledge.IndexText(c.Heading),
			knowledge.IndexText(c.Content), tenantTerm(doc.TenantID)); err != nil {
			return nil, fmt.Errorf("index chunk %s: %w", c.ID, err)
		}
	}
	return seqs, nil
}

// Document returns a document with its content.
func (s *Store) Document(ctx context.Context, id string) (knowledge.Document, error) {
	d, err := scanDocument(s.reader.QueryRowContext(ctx,
		`SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+` WHERE id = ?`, id), true)
	if err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: document %s: %w", id, err)
	}
	return d, nil
}

// DocumentByHash returns the tenant's document with the given content hash.
func (s *Store) DocumentByHash(ctx context.Context, tenantID, hash string) (knowledge.Document, error) {
	d, err := scanDocument(s.reader.QueryRowContext(ctx,
		`SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+` WHERE tenant_id = ? AND content_hash = ?`,
		cmp.Or(tenantID, knowledge.DefaultTenant), hash), true)
	if err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: document with hash %s: %w", hash, err)
	}
	return d, nil
}

// DocumentByFileHash returns the tenant's processing or ready document
// with the given file hash: processing, ready, or failed as a duplicate
// (other failures give their hash up), without its content.
func (s *Store) DocumentByFileHash(ctx context.Context, tenantID, hash string) (knowledge.Document, error) {
	d, err := scanDocument(s.reader.QueryRowContext(ctx,
		`SELECT `+documentColumns+` FROM `+documentsFrom+` WHERE tenant_id = ? AND file_hash = ? AND file_hash <> ''`,
		cmp.Or(tenantID, knowledge.DefaultTenant), hash), false)
	if err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: document with file hash %s: %w", hash, err)
	}
	return d, nil
}

// Documents lists the tenant's documents newest first, without content.
func (s *Store) Documents(ctx context.Context, tenantID string, limit, offset int) ([]knowledge.Document, int, error) {
	tenantID = cmp.Or(tenantID, knowledge.DefaultTenant)
	if limit <= 0 {
		return nil, 0, errors.New("knowledge: documents: limit must be positive")
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("knowledge: documents: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM knowledge_documents WHERE tenant_id = ?`, tenantID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("knowledge: documents: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+documentColumns+` FROM `+documentsFrom+`
		WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, tenantID, limit, max(offset, 0))
	if err != nil {
		return nil, 0, fmt.Errorf("knowledge: documents: %w", err)
	}
	defer rows.Close()
	var docs []knowledge.Document
	for rows.Next() {
		d, err := scanDocument(rows, false)
		if err != nil {
			return nil, 0, fmt.Errorf("knowledge: documents: %w", err)
		}
		docs = append(docs, d)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("knowledge: documents: %w", err)
	}
	return docs, total, nil
}

// Chunks returns a document's chunks in order, without embeddings.
func (s *Store) Chunks(ctx context.Context, documentID string) ([]knowledge.Chunk, error) {
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("knowledge: chunks of %s: %w", documentID, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM knowledge_documents WHERE id = ?)`,
		documentID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("knowledge: chunks of %s: %w", documentID, err)
	}
	if !exists {
		return nil, fmt.Errorf("knowledge: chunks of %s: %w", documentID, knowledge.ErrNotFound)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, idx, heading, page, content, tokens FROM knowledge_chunks
		WHERE document_id = ? ORDER BY idx`, documentID)
	if err != nil {
		return nil, fmt.Errorf("knowledge: chunks of %s: %w", documentID, err)
	}
	defer rows.Close()
	var chunks []knowledge.Chunk
	for rows.Next() {
		c := knowledge.Chunk{DocumentID: documentID}
		if err := rows.Scan(&c.ID, &c.Index, &c.Heading, &c.Page, &c.Content, &c.Tokens); err != nil {
			return nil, fmt.Errorf("knowledge: chunks of %s: %w", documentID, err)
		}
		chunks = append(chunks, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("knowledge: chunks of %s: %w", documentID, err)
	}
	return chunks, nil
}

// DeleteDocument removes a document; its chunks, their keyword-index rows
// (by trigger) and their vectors go with it.
func (s *Store) DeleteDocument(ctx context.Context, id string) error {
	var tenantID string
	var seqs []int64
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) (int64, error) {
		err := tx.QueryRowContext(ctx, `SELECT tenant_id FROM knowledge_documents WHERE id = ?`, id).Scan(&tenantID)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, knowledge.ErrNotFound
		} else if err != nil {
			return 0, err
		}
		rows, err := tx.QueryContext(ctx, `SELECT seq FROM knowledge_chunks WHERE document_id = ? AND embedding IS NOT NULL`, id)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				rows.Close()
				return 0, err
			}
			seqs = append(seqs, seq)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM knowledge_documents WHERE id = ?`, id); err != nil {
			return 0, err
		}
		return bumpVersion(ctx, tx)
	}, func(version int64) {
		if s.vectors.Version() != version-1 {
			return // another process wrote too: the next vector search reloads the copy
		}
		s.vectors.Remove(tenantID, seqs)
		s.vectors.SetVersion(version)
	})
	if err != nil {
		return fmt.Errorf("knowledge: delete document %s: %w", id, err)
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

// addedBy is what the added_by column keeps: "" when the document's own
// tenant added it.
func addedBy(doc knowledge.Document) string {
	if doc.AddedBy == doc.TenantID {
		return ""
	}
	return doc.AddedBy
}

// scanDocument reads documentColumns, then contentColumns when
// withContent.
func scanDocument(row scanner, withContent bool) (knowledge.Document, error) {
	var d knowledge.Document
	var created string
	p := &d.Progress
	dest := []any{&d.ID, &d.TenantID, &d.Title, &d.Source, &d.MediaType, &d.ContentHash, &d.Bytes, &d.Chunks, &d.Embedded, &created,
		&d.Status, &d.Error, &d.Attempts, &p.PagesDone, &p.PagesTotal, &p.ChunksTotal, &p.ChunksEmbedded, &p.ChunksWritten,
		&d.DuplicateOf, &d.Claim}
	if withContent {
		dest = append(dest, &d.Content, &d.AddedBy)
	}
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return d, knowledge.ErrNotFound
		}
		return d, err
	}
	t, err := sqlitedb.ParseTime(created)
	if err != nil {
		return d, err
	}
	d.CreatedAt = t
	if withContent {
		d.AddedBy = cmp.Or(d.AddedBy, d.TenantID)
	}
	return d, nil
}

// cacheVectors adds the embeddings of chunks just committed (at seqs) to
// the in-process vector copy, once the write that made the store reach
// version is committed; if another process wrote in between, the copy is
// left for the next vector search to reload.
func (s *Store) cacheVectors(version int64, tenantID string, seqs []int64, chunks []knowledge.Chunk) {
	if s.vectors.Version() != version-1 {
		return
	}
	for i, c := range chunks {
		if len(c.Embedding) > 0 {
			s.vectors.Add(tenantID, seqs[i], c.Embedding)
		}
	}
	s.vectors.SetVersion(version)
}
