package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/pgdb"
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

// errDuplicate carries the document that has the content already out of
// the transaction that found it.
type errDuplicate struct{ existing knowledge.Document }

func (e *errDuplicate) Error() string { return knowledge.ErrDuplicate.Error() }

// AddDocument stores doc and its chunks with their keyword terms and adds
// their embeddings to the in-memory vector index, all or nothing.
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

	var (
		seqs    []int64
		newDims []int
	)
	err := s.write(ctx, func(tx pgx.Tx) error {
		// Writers queue on the version's row lock, so no other replica can
		// add this content between this check and the commit.
		switch d, err := scanDocument(tx.QueryRow(ctx,
			`SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+` WHERE tenant_id = $1 AND content_hash = $2`,
			doc.TenantID, doc.ContentHash), true); {
		case err == nil:
			return &errDuplicate{d}
		case !errors.Is(err, knowledge.ErrNotFound):
			return err
		}
		doc.CreatedAt = s.clock.Now()
		if _, err := tx.Exec(ctx, `INSERT INTO knowledge_documents
			(id, tenant_id, title, source, media_type, content, content_hash, bytes, chunk_count, embedded, created_at, added_by, file_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			doc.ID, doc.TenantID, doc.Title, doc.Source, doc.MediaType, doc.Content, doc.ContentHash, doc.Bytes,
			doc.Chunks, doc.Embedded, doc.CreatedAt, addedBy(doc), doc.FileHash); err != nil {
			if pgdb.IsUniqueViolation(err) {
				return knowledge.ErrAlreadyExists
			}
			return err
		}
		var err error
		if seqs, err = insertChunks(ctx, tx, doc, chunks); err != nil {
			return err
		}
		newDims, err = s.recordDims(ctx, tx, chunks)
		return err
	}, func() {
		for i, c := range chunks {
			if len(c.Embedding) > 0 {
				s.vectors.Add(doc.TenantID, seqs[i], c.Embedding)
			}
		}
	})
	var dup *errDuplicate
	switch {
	case errors.As(err, &dup):
		return dup.existing, knowledge.ErrDuplicate
	case errors.Is(err, knowledge.ErrAlreadyExists):
		return knowledge.Document{}, fmt.Errorf("knowledge: add document %s: %w", doc.ID, err)
	case err != nil:
		return knowledge.Document{}, fmt.Errorf("knowledge: add document: %w", err)
	}
	s.dimsMu.Lock()
	for _, d := range newDims {
		s.dims[d] = true
	}
	s.dimsMu.Unlock()
	return doc, nil
}

// recordDims records, in tx, the embedding dimensions of chunks this
// store has not seen yet, and with pgvector creates their HNSW indexes
// (in the same transaction: its chunks are indexed from the start). It
// returns them, to be marked known once tx commits. Writers hold the
// version's row lock, so no other replica creates the same index at once.
func (s *Store) recordDims(ctx context.Context, tx pgx.Tx, chunks []knowledge.Chunk) ([]int, error) {
	var dims []int
	s.dimsMu.Lock()
	for _, c := range chunks {
		if d := len(c.Embedding); d > 0 && !s.dims[d] && !slices.Contains(dims, d) {
			dims = append(dims, d)
		}
	}
	s.dimsMu.Unlock()
	for _, d := range dims {
		if _, err := tx.Exec(ctx, `INSERT INTO knowledge_embedding_dims (dims) VALUES ($1) ON CONFLICT DO NOTHING`, d); err != nil {
			return nil, err
		}
		if s.pgvector {
			if _, err := s.ext.ensureIndex(ctx, tx, d); err != nil {
				return nil, err
			}
		}
	}
	return dims, nil
}

// insertChunks inserts the chunks with their terms in one round trip and
// returns their seqs, in order.
func insertChunks(ctx context.Context, tx pgx.Tx, doc knowledge.Document, chunks []knowledge.Chunk) ([]int64, error) {
	title := indexText(knowledge.TitleText(doc.Title, doc.Content))
	batch := &pgx.Batch{}
	for _, c := range chunks {
		var embedding any // NULL
		if len(c.Embedding) > 0 {
			embedding = c.Embedding
		}
		batch.Queue(`INSERT INTO knowledge_chunks
			(id, document_id, tenant_id, idx, heading, content, tokens, terms, embedding, page)
			VALUES ($1, $2, $3, $4, $5, $6, $7, `+termsSQL("$8", "$11")+`, $9, $10) RETURNING seq`,
			c.ID, doc.ID, doc.TenantID, c.Index, c.Heading, c.Content, c.Tokens,
			title, embedding, c.Page, indexText(c.Heading)+" "+indexText(c.Content))
	}
	results := tx.SendBatch(ctx, batch)
	seqs := make([]int64, len(chunks))
	for i, c := range chunks {
		if err := results.QueryRow().Scan(&seqs[i]); err != nil {
			if pgdb.IsUniqueViolation(err) {
				err = knowledge.ErrAlreadyExists
			}
			return nil, errors.Join(fmt.Errorf("chunk %s: %w", c.ID, err), results.Close())
		}
	}
	return seqs, results.Close()
}

// Document returns a document with its content.
func (s *Store) Document(ctx context.Context, id string) (knowledge.Document, error) {
	d, err := scanDocument(s.pool.QueryRow(ctx,
		`SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+` WHERE id = $1`, id), true)
	if err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: document %s: %w", id, err)
	}
	return d, nil
}

// DocumentByHash returns the tenant's document with the given content hash.
func (s *Store) DocumentByHash(ctx context.Context, tenantID, hash string) (knowledge.Document, error) {
	d, err := scanDocument(s.pool.QueryRow(ctx,
		`SELECT `+documentColumns+`, `+contentColumns+` FROM `+documentsFrom+` WHERE tenant_id = $1 AND content_hash = $2`,
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
	d, err := scanDocument(s.pool.QueryRow(ctx,
		`SELECT `+documentColumns+` FROM `+documentsFrom+` WHERE tenant_id = $1 AND file_hash = $2 AND file_hash <> ''`,
		cmp.Or(tenantID, knowledge.DefaultTenant), hash), false)
	if err != nil {
		return knowledge.Document{}, fmt.Errorf("knowledge: document with file hash %s: %w", hash, err)
	}
	return d, nil
}

// Documents lists the tenant's documents newest first, without content.
// The count and the page come from one snapshot.
func (s *Store) Documents(ctx context.Context, tenantID string, limit, offset int) ([]knowledge.Document, int, error) {
	tenantID = cmp.Or(tenantID, knowledge.DefaultTenant)
	if limit <= 0 {
		return nil, 0, errors.New("knowledge: documents: limit must be positive")
	}
	var (
		docs  []knowledge.Document
		total int
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM knowledge_documents WHERE tenant_id = $1`, tenantID).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+documentColumns+` FROM `+documentsFrom+`
			WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, tenantID, limit, max(offset, 0))
		if err != nil {
			return err
		}
		docs, err = pgx.AppendRows(docs, rows, func(row pgx.CollectableRow) (knowledge.Document, error) {
			return scanDocument(row, false)
		})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("knowledge: documents: %w", err)
	}
	return docs, total, nil
}

// Chunks returns a document's chunks in order, without embeddings.
func (s *Store) Chunks(ctx context.Context, documentID string) ([]knowledge.Chunk, error) {
	chunks, err := s.chunks(ctx, documentID)
	if err != nil {
		return nil, fmt.Errorf("knowledge: chunks of %s: %w", documentID, err)
	}
	return chunks, nil
}

func (s *Store) chunks(ctx context.Context, documentID string) ([]knowledge.Chunk, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, idx, heading, page, content, tokens FROM knowledge_chunks
		WHERE document_id = $1 ORDER BY idx`, documentID)
	if err != nil {
		return nil, err
	}
	var chunks []knowledge.Chunk
	chunks, err = pgx.AppendRows(chunks, rows, func(row pgx.CollectableRow) (knowledge.Chunk, error) {
		c := knowledge.Chunk{DocumentID: documentID}
		err := row.Scan(&c.ID, &c.Index, &c.Heading, &c.Page, &c.Content, &c.Tokens)
		return c, err
	})
	if err != nil || len(chunks) > 0 {
		return chunks, err
	}
	// No chunks: a document without any, or no document.
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM knowledge_documents WHERE id = $1)`,
		documentID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, knowledge.ErrNotFound
	}
	return nil, nil
}

// DeleteDocument removes a document; its chunks, with their terms and
// embeddings, go with it by ON DELETE CASCADE, and their vectors leave
// the in-memory index.
func (s *Store) DeleteDocument(ctx context.Context, id string) error {
	var (
		tenantID string
		seqs     []int64
	)
	err := s.write(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT tenant_id FROM knowledge_documents WHERE id = $1`, id).Scan(&tenantID)
		if errors.Is(err, pgx.ErrNoRows) {
			return knowledge.ErrNotFound
		} else if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT seq FROM knowledge_chunks WHERE document_id = $1 AND embedding IS NOT NULL`, id)
		if err != nil {
			return err
		}
		if seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM knowledge_documents WHERE id = $1`, id)
		return err
	}, func() {
		s.vectors.Remove(tenantID, seqs)
	})
	if err != nil {
		return fmt.Errorf("knowledge: delete document %s: %w", id, err)
	}
	return nil
}

// write runs fn in a transaction that first advances the version, taking
// the row lock of knowledge_state: the writes of every replica queue
// there, so versions follow commit order and a rolled-back write leaves
// the version as it was.
//
// After the commit, apply brings the in-memory vectors up to the new
// version, but only when they reflected the version just before it: when
// another replica wrote in between, applying this write alone would
// claim a version whose other change the copy lacks, so the copy is left
// behind and the next vector search reloads it.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error, apply func()) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var version int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `UPDATE knowledge_state SET version = version + 1 WHERE id = 1 RETURNING version`).
			Scan(&version); err != nil {
			return fmt.Errorf("bump version: %w", err)
		}
		return fn(tx)
	})
	if err != nil {
		return err
	}
	if !s.pgvector && s.vectors.Version() == version-1 {
		apply()
		s.vectors.SetVersion(version)
	}
	return nil
}

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
func scanDocument(row pgx.Row, withContent bool) (knowledge.Document, error) {
	var d knowledge.Document
	p := &d.Progress
	dest := []any{&d.ID, &d.TenantID, &d.Title, &d.Source, &d.MediaType, &d.ContentHash, &d.Bytes, &d.Chunks, &d.Embedded, &d.CreatedAt,
		&d.Status, &d.Error, &d.Attempts, &p.PagesDone, &p.PagesTotal, &p.ChunksTotal, &p.ChunksEmbedded, &p.ChunksWritten,
		&d.DuplicateOf, &d.Claim}
	if withContent {
		dest = append(dest, &d.Content, &d.AddedBy)
	}
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return d, knowledge.ErrNotFound
		}
		return d, err
	}
	d.CreatedAt = d.CreatedAt.UTC()
	if withContent {
		d.AddedBy = cmp.Or(d.AddedBy, d.TenantID)
	}
	return d, nil
}
