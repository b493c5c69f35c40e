package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
)

// encodeVector stores v as little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("embedding of %d bytes is not a float32 vector", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// reloadVectors replaces the in-memory copy with what the database holds.
func (s *Store) reloadVectors(ctx context.Context) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.reloadVectorsLocked(ctx)
}

func (s *Store) reloadVectorsLocked(ctx context.Context) error {
	// One read transaction: the version and the vectors of one snapshot.
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("load embeddings: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	version, err := readVersion(ctx, tx)
	if err != nil {
		return fmt.Errorf("load embeddings: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, tenant_id, embedding FROM knowledge_chunks
		WHERE embedding IS NOT NULL ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("load embeddings: %w", err)
	}
	defer rows.Close()
	var snap vectorindex.Snapshot
	for rows.Next() {
		var seq int64
		var tenantID string
		var blob []byte
		if err := rows.Scan(&seq, &tenantID, &blob); err != nil {
			return fmt.Errorf("load embeddings: %w", err)
		}
		v, err := decodeVector(blob)
		if err != nil {
			return fmt.Errorf("load embeddings: chunk %d: %w", seq, err)
		}
		snap.Add(tenantID, seq, v)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load embeddings: %w", err)
	}
	s.vectors.Replace(version, &snap)
	return nil
}

// syncVectors reloads the in-memory copy when another process changed
// the knowledge base since it was loaded (this process's own writes keep
// it current).
func (s *Store) syncVectors(ctx context.Context) error {
	version := func(ctx context.Context) (int64, error) { return readVersion(ctx, s.reader) }
	return s.vectors.Sync(ctx, &s.writeMu, version, s.reloadVectorsLocked)
}
