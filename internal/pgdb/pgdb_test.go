package pgdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConfigAppliesOptionsAndDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Config("postgres://u:pw@db.example:5433/chat", Options{MaxConns: 7, Schema: `My "Schema"`})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.ConnConfig
	if cfg.MaxConns != 7 {
		t.Errorf("MaxConns = %d, want 7", cfg.MaxConns)
	}
	if c.ConnectTimeout != defaultConnectTimeout {
		t.Errorf("ConnectTimeout = %v, want %v", c.ConnectTimeout, defaultConnectTimeout)
	}
	if got := c.RuntimeParams["application_name"]; got != "chatpipe" {
		t.Errorf("application_name = %q, want chatpipe", got)
	}
	if got, want := c.RuntimeParams["search_path"], `"My ""Schema"""`; got != want {
		t.Errorf("search_path = %s, want %s (the schema quoted, alone)", got, want)
	}
}

func TestConfigKeepsWhatTheDSNSets(t *testing.T) {
	t.Parallel()
	dsn := "host=db port=5432 dbname=chat connect_timeout=3 application_name=ops search_path=app pool_max_conns=9"
	cfg, err := Config(dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.ConnConfig
	if cfg.MaxConns != 9 || c.ConnectTimeout != 3*time.Second || c.RuntimeParams["application_name"] != "ops" ||
		c.RuntimeParams["search_path"] != "app" {
		t.Errorf("Config = max %d, timeout %v, params %v; want the DSN's 9, 3s, ops, app",
			cfg.MaxConns, c.ConnectTimeout, c.RuntimeParams)
	}
}

func TestBadDSNErrorNeverShowsIt(t *testing.T) {
	t.Parallel()
	const password = "s3cr3t-Pa55word"
	for _, dsn := range []string{
		"postgres://chatpipe:" + password + "@127.0.0.1:port/chat",
		"postgres://chatpipe:" + password + "@[::1/chat",
		"host=127.0.0.1 password='" + password + " dbname=chat",
	} {
		_, err := Config(dsn, Options{})
		if err == nil {
			t.Fatalf("Config(%q) succeeded", dsn)
		}
		if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("error quotes the DSN: %v", err)
		}
	}
}

func TestOpenFailedNamesTheServerAndScrubsThePassword(t *testing.T) {
	t.Parallel()
	cfg, err := Config("postgres://chatpipe:pw-123@db.example:5433/chat", Options{})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("server said pw-123 is wrong")
	err = OpenFailed(cfg.ConnConfig, cause)
	if got, want := err.Error(), "open db.example:5433/chat: server said xxxxx is wrong"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Error("OpenFailed does not unwrap to its cause")
	}
	v6, _ := Config("host=::1 port=5432 dbname=chat", Options{})
	if got := OpenFailed(v6.ConnConfig, cause).Error(); !strings.HasPrefix(got, "open [::1]:5432/chat: ") {
		t.Errorf("IPv6 target: %q", got)
	}
}

func TestIsUniqueViolation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "23505"}, true},
		{fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23505"}), true},
		{&pgconn.PgError{Code: "23503"}, false}, // foreign_key_violation
		{errors.New("23505"), false},
		{nil, false},
	} {
		if got := IsUniqueViolation(c.err); got != c.want {
			t.Errorf("IsUniqueViolation(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// The tests below need a server (CHATPIPE_TEST_POSTGRES_DSN); the stores'
// tests cover Migrate through Open as well.

// connect opens a pool on a schema of the test's own, which Migrate is
// to create.
func connect(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	schema := pgdbtest.NewSchema(t)
	cfg, err := Config(pgdbtest.DSN(t), Options{MaxConns: 4, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := Connect(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // before the schema is dropped
	return pool, schema
}

func steps(t *testing.T, table string, files fstest.MapFS) Steps {
	t.Helper()
	ms, err := migrations.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	return Steps{Table: table, Name: table, All: ms}
}

func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, s Steps) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return Migrate(ctx, tx, schema, s, time.Now) })
}

// TestTwoStoresMigratingOneSchemaAtOnceEachApplyTheirStepsOnce: stores
// of several replicas, starting together, share the lock.
func TestTwoStoresMigratingOneSchemaAtOnceEachApplyTheirStepsOnce(t *testing.T) {
	t.Parallel()
	pool, schema := connect(t)
	a := steps(t, "a_migrations", fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte(`CREATE TABLE a (x int);`)},
		"migrations/0002_a.sql": {Data: []byte(`INSERT INTO a VALUES (1);`)},
	})
	b := steps(t, "b_migrations", fstest.MapFS{
		"migrations/0001_b.sql": {Data: []byte(`CREATE TABLE b (x int); INSERT INTO b VALUES (1);`)},
	})
	errs := make([]error, 6)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			s := a
			if i%2 == 1 {
				s = b
			}
			errs[i] = migrate(t.Context(), pool, schema, s)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate %d: %v", i, err)
		}
	}
	for _, q := range []struct {
		sql  string
		want int
	}{
		{`SELECT count(*) FROM a`, 1},
		{`SELECT count(*) FROM b`, 1},
		{`SELECT count(*) FROM a_migrations`, 2},
		{`SELECT count(*) FROM b_migrations`, 1},
	} {
		var n int
		if err := pool.QueryRow(t.Context(), q.sql).Scan(&n); err != nil || n != q.want {
			t.Errorf("%s = %d, %v; want %d", q.sql, n, err, q.want)
		}
	}
}

func TestMigrateRefusesASchemaFromANewerBuild(t *testing.T) {
	t.Parallel()
	pool, schema := connect(t)
	s := steps(t, "x_migrations", fstest.MapFS{"migrations/0001_x.sql": {Data: []byte(`SELECT 1;`)}})
	if err := migrate(t.Context(), pool, schema, s); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(),
		`INSERT INTO x_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', now())`); err != nil {
		t.Fatal(err)
	}
	err := migrate(t.Context(), pool, schema, s)
	if err == nil || !strings.Contains(err.Error(), "x_migrations schema version 9999 is newer") {
		t.Errorf("Migrate = %v, want the schema refused as newer", err)
	}
}
