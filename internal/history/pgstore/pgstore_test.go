package pgstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/history/historytest"
	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openSchema opens a store on schema and closes it when the test ends.
func openSchema(t testing.TB, schema string) *Store {
	t.Helper()
	s, err := Open(t.Context(), pgdbtest.DSN(t), Options{MaxConns: 4, Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pgdbtest.DSN(t)
	historytest.Run(t, func(t *testing.T) history.Store { return openSchema(t, pgdbtest.NewSchema(t)) })
}

func TestReopenKeepsDataAndSkipsAppliedMigrations(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s := openSchema(t, schema)
	if _, err := s.CreateSession(t.Context(), history.Session{ID: "s1", Title: "kept"}); err != nil {
		t.Fatal(err)
	}
	_, a, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "u1", Content: "q"}, "a1")
	if err != nil {
		t.Fatal(err)
	}
	before := appliedMigrations(t, s)
	if len(before) == 0 {
		t.Fatal("no migrations recorded")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// 0001 creates its tables without IF NOT EXISTS: running it again
	// would fail this Open.
	s = openSchema(t, schema)
	if got := appliedMigrations(t, s); !slices.Equal(got, before) {
		t.Errorf("schema_migrations after reopen = %q, want unchanged %q", got, before)
	}
	if sess, err := s.GetSession(t.Context(), "s1"); err != nil || sess.Title != "kept" {
		t.Errorf("GetSession after reopen = %+v, %v", sess, err)
	}
	if got, err := s.GetMessage(t.Context(), "a1"); err != nil || got.Status != history.StatusStreaming || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("GetMessage after reopen = %+v, %v; want %+v", got, err, a)
	}
}

// TestConcurrentOpensOfOneSchemaMigrateOnce: replicas starting together
// race neither on creating the schema nor on creating the tables in an
// existing one (the production case).
func TestConcurrentOpensOfOneSchemaMigrateOnce(t *testing.T) {
	t.Parallel()
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing schema %v", existing), func(t *testing.T) {
			t.Parallel()
			schema := pgdbtest.NewSchema(t)
			if existing {
				pgdbtest.Exec(t, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
			}
			testConcurrentOpens(t, schema)
		})
	}
}

func testConcurrentOpens(t *testing.T, schema string) {
	const replicas = 4
	dsn := pgdbtest.DSN(t)
	start := make(chan struct{})
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(t.Context(), dsn, Options{MaxConns: 2, Schema: schema})
		})
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() { s.Close() })
	}
	if t.Failed() {
		return
	}
	got := appliedMigrations(t, stores[0])
	ms, err := migrations.Load(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ms) {
		t.Errorf("schema_migrations = %q, want each of the %d migrations once", got, len(ms))
	}
	// Every replica works on the one schema.
	for i, s := range stores {
		if _, err := s.CreateSession(t.Context(), history.Session{ID: fmt.Sprintf("s%d", i)}); err != nil {
			t.Errorf("replica %d: CreateSession: %v", i, err)
		}
	}
	if ss, err := stores[0].ListSessions(t.Context(), "", 0, 0); err != nil || len(ss) != replicas {
		t.Errorf("ListSessions = %d sessions, %v; want %d", len(ss), err, replicas)
	}
}

// appliedMigrations lists schema_migrations rows as "version name applied_at".
func appliedMigrations(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.pool.Query(t.Context(),
		`SELECT version || ' ' || name || ' ' || applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openMigrations opens a store on schema with the given migrations
// instead of the embedded ones.
func openMigrations(t *testing.T, schema string, fsys fstest.MapFS) (*Store, error) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgdbtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	return open(t.Context(), cfg, schema, fsys)
}

func TestMigrationsApplyInVersionOrderOnce(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	fsys := fstest.MapFS{
		// 10 sorts before 2 as text: order must come from the number.
		"migrations/0010_c.sql": {Data: []byte(`INSERT INTO log VALUES ('c');`)},
		"migrations/0002_b.sql": {Data: []byte(`INSERT INTO log VALUES ('b');`)},
		"migrations/0001_a.sql": {Data: []byte(`CREATE TABLE log (step text, at serial); INSERT INTO log VALUES ('a');`)},
	}
	for range 2 {
		s, err := openMigrations(t, schema, fsys)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		var steps string
		if err := s.pool.QueryRow(t.Context(), `SELECT string_agg(step, '' ORDER BY at) FROM log`).Scan(&steps); err != nil {
			t.Fatal(err)
		}
		if steps != "abc" {
			t.Errorf("steps run = %q, want abc (each once, in order)", steps)
		}
		s.Close()
	}
}

func TestFailedMigrationLeavesNoTraceAndOpenFails(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	fsys := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte(`CREATE TABLE a (x int);`)},
		"migrations/0002_b.sql": {Data: []byte(`CREATE TABLE b (x int); INSERT INTO missing VALUES (1);`)},
	}
	if s, err := openMigrations(t, schema, fsys); err == nil {
		s.Close()
		t.Fatal("open with a broken migration succeeded")
	}
	fsys["migrations/0002_b.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE b (x int);`)}
	s, err := openMigrations(t, schema, fsys)
	if err != nil {
		t.Fatalf("open after fixing the migration: %v", err)
	}
	defer s.Close()
	if got := len(appliedMigrations(t, s)); got != 2 {
		t.Errorf("%d migrations recorded, want 2", got)
	}
}

func TestOpenRefusesDatabaseFromNewerBuild(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s := openSchema(t, schema)
	if _, err := s.pool.Exec(t.Context(),
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', now())`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(t.Context(), pgdbtest.DSN(t), Options{Schema: schema})
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("err = %v, want it to say the schema is newer", err)
	}
}

// TestOpenErrorsNeverShowThePassword needs no server: nothing listens on
// port 1, and the malformed DSNs never reach the network.
func TestOpenErrorsNeverShowThePassword(t *testing.T) {
	t.Parallel()
	const password = "s3cr3t-Pa55word"
	cases := []struct{ name, dsn string }{
		{"unreachable URL", "postgres://chatpipe:" + password + "@127.0.0.1:1/chat?sslmode=disable"},
		{"unreachable URL, password in query", "postgres://chatpipe@127.0.0.1:1/chat?password=" + password},
		{"unreachable key=value", "host=127.0.0.1 port=1 user=chatpipe password=" + password + " dbname=chat"},
		{"malformed port", "postgres://chatpipe:" + password + "@127.0.0.1:port/chat"},
		{"malformed URL", "postgres://chatpipe:" + password + "@[::1/chat"},
		{"malformed key=value", "host=127.0.0.1 password='" + password + " dbname=chat"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(t.Context(), c.dsn, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			for e := err; e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), password) {
					t.Errorf("error shows the password: %v", e)
				}
			}
			if strings.Contains(c.name, "unreachable") && !strings.Contains(err.Error(), "127.0.0.1:1/chat") {
				t.Errorf("err = %v, want it to name the server 127.0.0.1:1/chat", err)
			}
		})
	}
}

func TestCloseTwiceIsHarmless(t *testing.T) {
	t.Parallel()
	s := openSchema(t, pgdbtest.NewSchema(t))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping after Close succeeded")
	}
}

// TestConcurrentFinishOnTwoReplicasHasExactlyOneWinner: a stop on one
// replica and the end of the answer on another race for the message.
func TestConcurrentFinishOnTwoReplicasHasExactlyOneWinner(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	replicas := []*Store{openSchema(t, schema), openSchema(t, schema)}
	if _, err := replicas[0].CreateSession(t.Context(), history.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	const turns, racers = 20, 6
	for turn := range turns {
		aid := fmt.Sprintf("a%d", turn)
		if _, _, err := replicas[turn%2].StartTurn(t.Context(), "s1", history.Message{ID: fmt.Sprintf("u%d", turn)}, aid); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				errs[i] = replicas[i%2].FinishMessage(t.Context(), aid,
					history.Final{Status: history.StatusStopped, Content: fmt.Sprintf("racer %d", i)})
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
			case !errors.Is(err, history.ErrAlreadyFinished):
				t.Errorf("turn %d racer %d: err = %v, want nil or ErrAlreadyFinished", turn, i, err)
			}
		}
		if winners != 1 {
			t.Errorf("turn %d: %d racers finished the message, want exactly 1", turn, winners)
		}
	}
}

// TestSessionUpdatedAtNeverMovesBackwards: a turn started on a replica
// whose clock is behind still advances the session's UpdatedAt. (Its place
// among sessions touched within the clocks' skew is not guaranteed.)
func TestSessionUpdatedAtNeverMovesBackwards(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	ahead, behind := openSchema(t, schema), openSchema(t, schema)
	ahead.clock.Advance(time.Now().Add(time.Hour)) // its stamps run an hour ahead
	before, err := ahead.CreateSession(t.Context(), history.Session{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := behind.StartTurn(t.Context(), "s1", history.Message{ID: "u1"}, "a1")
	if err != nil {
		t.Fatal(err)
	}
	after, err := behind.GetSession(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !after.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("UpdatedAt after a turn on the slower replica = %v, want after %v", after.UpdatedAt, before.UpdatedAt)
	}
	if !u.CreatedAt.Before(before.UpdatedAt) {
		t.Errorf("the slower replica stamped the message %v, want its own clock (before %v)", u.CreatedAt, before.UpdatedAt)
	}
}

func TestTextPostgreSQLRejectsIsStoredWithReplacementCharacters(t *testing.T) {
	t.Parallel()
	s := openSchema(t, pgdbtest.NewSchema(t))
	const bad, want = "nul\x00 and \xff invalid", "nul\uFFFD and \uFFFD invalid"
	sess, err := s.CreateSession(t.Context(), history.Session{ID: "s1", Title: bad})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if sess.Title != want {
		t.Errorf("returned Title = %q, want %q", sess.Title, want)
	}
	u, _, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "u1", Content: bad}, "a1")
	if err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	if u.Content != want {
		t.Errorf("returned Content = %q, want %q", u.Content, want)
	}
	f := history.Final{Status: history.StatusCompleted, Content: bad, Thinking: bad, Error: bad,
		References: []eventbus.Reference{{Index: 1, Title: "ok"}, {Index: 2, Title: bad, Content: bad}}}
	if err := s.FinishMessage(t.Context(), "a1", f); err != nil {
		t.Fatalf("FinishMessage: %v", err)
	}
	if got, err := s.GetSession(t.Context(), "s1"); err != nil || got.Title != want {
		t.Errorf("GetSession = %q, %v; want title %q", got.Title, err, want)
	}
	if got, err := s.GetMessage(t.Context(), "u1"); err != nil || got.Content != want {
		t.Errorf("GetMessage(u1) = %q, %v; want content %q", got.Content, err, want)
	}
	a, err := s.GetMessage(t.Context(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Content != want || a.Thinking != want || a.Error != want || len(a.References) != 2 ||
		a.References[0].Title != "ok" || a.References[1].Title != want || a.References[1].Content != want {
		t.Errorf("GetMessage(a1) = %+v, want every text %q", a, want)
	}
	if f.References[1].Title != bad {
		t.Error("FinishMessage changed the caller's references")
	}
}

// TestMessagesFromBeforeTheTreeReadAsAChain opens a schema migrated up to
// 0001 with rows in it, then the full schema.
func TestMessagesFromBeforeTheTreeReadAsAChain(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	b, err := migrationFiles.ReadFile("migrations/0001_history.sql")
	if err != nil {
		t.Fatal(err)
	}
	s, err := openMigrations(t, schema, fstest.MapFS{"migrations/0001_history.sql": {Data: b}})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range historytest.LegacyRowsSQL() {
		if _, err := s.pool.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s.Close()
	historytest.CheckLegacyChain(t, openSchema(t, schema))
}
