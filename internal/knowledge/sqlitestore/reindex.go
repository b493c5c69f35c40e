package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

// checkTenantTerms re-indexes every chunk when some chunk's index row
// lacks its tenant term (migration 0010): a chatpipe of before 0010 that
// was still running on the file when a newer one migrated it writes rows
// without one, which a search filtered by tenant would never find. One
// FTS5 count of the rows holding any tenant's term, at Open.
func (s *Store) checkTenantTerms(ctx context.Context) error {
	rows, err := s.writer.QueryContext(ctx, `SELECT DISTINCT tenant_id FROM knowledge_chunks`)
	if err != nil {
		return err
	}
	var tenants []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tenants = append(tenants, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(tenants) == 0 {
		return err
	}
	var chunks, tagged int
	if err := s.writer.QueryRowContext(ctx, `SELECT count(*) FROM knowledge_chunks`).Scan(&chunks); err != nil {
		return err
	}
	if err := s.writer.QueryRowContext(ctx, `SELECT count(*) FROM knowledge_fts WHERE knowledge_fts MATCH ?`,
		tenantMatch(tenants)).Scan(&tagged); err != nil {
		return err
	}
	if tagged == chunks {
		return nil
	}
	if _, err := s.writer.ExecContext(ctx, `UPDATE knowledge_state SET terms_version = 0 WHERE id = 1`); err != nil {
		return err
	}
	_, err = reindexTerms(ctx, s.writer)
	return err
}

// reindexTerms rebuilds the keyword index when it was built with another
// version of knowledge.Terms (see migration 0006), in one transaction on
// the writer: searches keep the old index until the new one commits, and
// a second process opening the same file finds the version current and
// does nothing. It returns how many chunks it re-indexed.
func reindexTerms(ctx context.Context, db *sql.DB) (n int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = sqlitedb.IgnoreDone(tx.Rollback())
		}
	}()
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT terms_version FROM knowledge_state WHERE id = 1`).Scan(&version); err != nil {
		return 0, err
	}
	if version == knowledge.TermsVersion {
		return 0, tx.Rollback()
	}
	// Each document's title field, computed once: its lead needs only the
	// start of its text.
	titles := make(map[string]string)
	docRows, err := tx.QueryContext(ctx, `SELECT id, title, substr(content, 1, ?) FROM knowledge_documents`, knowledge.LeadWindow)
	if err != nil {
		return 0, err
	}
	for docRows.Next() {
		var id, title, start string
		if err := docRows.Scan(&id, &title, &start); err != nil {
			docRows.Close()
			return 0, err
		}
		titles[id] = knowledge.IndexText(knowledge.TitleText(title, start))
	}
	docRows.Close()
	if err := docRows.Err(); err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, document_id, tenant_id, heading, content FROM knowledge_chunks ORDER BY seq`)
	if err != nil {
		return 0, err
	}
	type entry struct {
		seq                             int64
		document, tenant, heading, body string
	}
	var entries []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.seq, &e.document, &e.tenant, &e.heading, &e.body); err != nil {
			rows.Close()
			return 0, err
		}
		entries = append(entries, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM knowledge_fts`); err != nil {
		return 0, fmt.Errorf("clear the keyword index: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO knowledge_fts (rowid, title, heading, body, tenant) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	for _, e := range entries {
		if _, err := ins.ExecContext(ctx, e.seq, titles[e.document], knowledge.IndexText(e.heading),
			knowledge.IndexText(e.body), tenantTerm(e.tenant)); err != nil {
			return 0, fmt.Errorf("index chunk %d: %w", e.seq, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE knowledge_state SET terms_version = ? WHERE id = 1`, knowledge.TermsVersion); err != nil {
		return 0, err
	}
	return len(entries), tx.Commit()
}
