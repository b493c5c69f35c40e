package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// reindexTerms rebuilds the terms column when it was built with another
// version of knowledge.Terms (see migration 0006), in one transaction
// that holds the knowledge_state row: replicas starting together wait for
// the first, then find the version current. Searches see the old terms
// until it commits. It returns how many chunks it re-indexed.
func reindexTerms(ctx context.Context, pool *pgxpool.Pool) (n int, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var version int
		if err := tx.QueryRow(ctx, `SELECT terms_version FROM knowledge_state WHERE id = 1 FOR UPDATE`).Scan(&version); err != nil {
			return err
		}
		if version == knowledge.TermsVersion {
			return nil
		}
		// Each document's title field, computed once: its lead needs only
		// the start of its text.
		titles := make(map[string]string)
		var id, title, start string
		rows, err := tx.Query(ctx, `SELECT id, title, substr(content, 1, $1) FROM knowledge_documents`, knowledge.LeadWindow)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&id, &title, &start}, func() error {
			titles[id] = indexText(knowledge.TitleText(title, start))
			return nil
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT seq, document_id, heading, content FROM knowledge_chunks ORDER BY seq`)
		if err != nil {
			return err
		}
		type entry struct {
			seq           int64
			title, others string
		}
		var entries []entry
		var (
			seq                     int64
			document, heading, body string
		)
		if _, err := pgx.ForEachRow(rows, []any{&seq, &document, &heading, &body}, func() error {
			entries = append(entries, entry{seq, titles[document], indexText(heading) + " " + indexText(body)})
			return nil
		}); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		for _, e := range entries {
			batch.Queue(`UPDATE knowledge_chunks SET terms = `+termsSQL("$2", "$3")+` WHERE seq = $1`, e.seq, e.title, e.others)
		}
		batch.Queue(`UPDATE knowledge_state SET terms_version = $1 WHERE id = 1`, knowledge.TermsVersion)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("re-index: %w", err)
		}
		n = len(entries)
		return nil
	})
	return n, err
}
