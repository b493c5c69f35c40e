// Package pgdbtest gives tests of the PostgreSQL stores a server and a
// schema of their own. The server is CHATPIPE_TEST_POSTGRES_DSN; without
// it the tests skip.
package pgdbtest

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSN returns the server tests run against, or skips the test when none
// is configured. With one configured, an unreachable server fails.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("CHATPIPE_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CHATPIPE_TEST_POSTGRES_DSN not set: PostgreSQL tests skipped")
	}
	return dsn
}

// NewSchema names a schema of the test's own (a store's Open creates it)
// and drops it when the test ends, after the stores opened later are
// closed. Tests of every package share the server's database and drop
// their schemas while others run, so a test reads the catalogs by its own
// relations' OIDs ('table'::regclass), never through views filtered by
// name (pg_indexes, pg_stats): those may call functions on another
// schema's relation being dropped, which fails with "could not open
// relation with OID".
func NewSchema(t testing.TB) string {
	t.Helper()
	DSN(t) // skips without a server
	schema := "chatpipe_test_" + strings.ToLower(rand.Text()[:12])
	t.Cleanup(func() { Exec(t, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`) })
	return schema
}

// Exec runs one statement on its own connection.
func Exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, DSN(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
