package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

var _ history.TraceStore = (*Store)(nil)

// SaveTrace implements history.TraceStore.
func (s *Store) SaveTrace(ctx context.Context, messageID string, record []byte) error {
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		var role string
		if err := s.txQueryRow(ctx, tx, `SELECT role FROM messages WHERE id = ?`, messageID).Scan(&role); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return history.ErrNotFound
			}
			return err
		}
		_, err := s.exec(ctx, tx, `INSERT INTO message_traces (message_id, record, created_at) VALUES (?, ?, ?)
			ON CONFLICT (message_id) DO UPDATE SET record = excluded.record, created_at = excluded.created_at`,
			messageID, string(record), sqlitedb.FormatTime(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: save trace of %q: %w", messageID, err)
	}
	return nil
}

// GetTrace implements history.TraceStore.
func (s *Store) GetTrace(ctx context.Context, tenantID, messageID string) ([]byte, time.Time, error) {
	if tenantID == "" {
		tenantID = history.DefaultTenant
	}
	var record, created string
	err := s.queryRow(ctx, `SELECT t.record, t.created_at FROM message_traces t
		JOIN messages m ON m.id = t.message_id JOIN sessions s ON s.id = m.session_id
		WHERE t.message_id = ? AND s.tenant_id = ?`, messageID, tenantID).Scan(&record, &created)
	if errors.Is(err, sql.ErrNoRows) {
		err = history.ErrNotFound
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("sqlitestore: get trace of %q: %w", messageID, err)
	}
	at, err := sqlitedb.ParseTime(created)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("sqlitestore: get trace of %q: %w", messageID, err)
	}
	return []byte(record), at, nil
}

// PurgeTraces implements history.TraceStore.
func (s *Store) PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) error {
		res, err := s.exec(ctx, tx, `DELETE FROM message_traces WHERE created_at < ?`, sqlitedb.FormatTime(cutoff))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: purge traces: %w", err)
	}
	return n, nil
}
