package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/history"
)

var _ history.TraceStore = (*Store)(nil)

// SaveTrace implements history.TraceStore.
func (s *Store) SaveTrace(ctx context.Context, messageID string, record []byte) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO message_traces (message_id, record, created_at)
		SELECT id, $2::jsonb, $3 FROM messages WHERE id = $1
		ON CONFLICT (message_id) DO UPDATE SET record = excluded.record, created_at = excluded.created_at`,
		messageID, string(record), s.clock.Now())
	if err == nil && tag.RowsAffected() == 0 {
		err = history.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("pgstore: save trace of %q: %w", messageID, err)
	}
	return nil
}

// GetTrace implements history.TraceStore.
func (s *Store) GetTrace(ctx context.Context, tenantID, messageID string) ([]byte, time.Time, error) {
	if tenantID == "" {
		tenantID = history.DefaultTenant
	}
	var record string
	var created time.Time
	err := s.pool.QueryRow(ctx, `SELECT t.record::text, t.created_at FROM message_traces t
		JOIN messages m ON m.id = t.message_id JOIN sessions s ON s.id = m.session_id
		WHERE t.message_id = $1 AND s.tenant_id = $2`, messageID, tenantID).Scan(&record, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		err = history.ErrNotFound
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("pgstore: get trace of %q: %w", messageID, err)
	}
	return []byte(record), created, nil
}

// PurgeTraces implements history.TraceStore.
func (s *Store) PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM message_traces WHERE created_at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("pgstore: purge traces: %w", err)
	}
	return tag.RowsAffected(), nil
}
