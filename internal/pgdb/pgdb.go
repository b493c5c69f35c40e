// Package pgdb is what chatpipe's PostgreSQL stores (history and
// knowledge, which may share one schema) have in common: a connection
// pool opened from a DSN whose password no error ever shows, the
// migration of a store's tables under the lock both stores take, and the
// server errors they recognise.
package pgdb

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultConnectTimeout bounds a connection attempt when the DSN sets no
// connect_timeout: a server that drops packets must not hang a start.
const defaultConnectTimeout = 10 * time.Second

// Options tune a store's pool. The zero value is ready to use.
type Options struct {
	// MaxConns caps the pool (config postgres.max_conns); 0 keeps the DSN's
	// pool_max_conns or pgx's default (the larger of 4 and the CPU count).
	MaxConns int32
	// Schema, when set, holds the tables instead of the DSN's search_path:
	// it is created if missing and is the connections' only search_path
	// entry. Tests give every store its own.
	Schema string
}

// errBadDSN replaces pgx's parse errors, which quote the DSN, redacted
// only on a best-effort basis.
var errBadDSN = errors.New("postgres dsn is not a valid connection string (a postgres:// URL or key=value pairs; details withheld as they may contain the password)")

// Config parses dsn (a postgres:// URL or key=value pairs) into a pool
// configuration with opts applied, a connect timeout when the DSN has
// none, and application_name chatpipe unless the DSN names one. Its error
// never quotes the DSN.
func Config(dsn string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errBadDSN
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "chatpipe"
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	return cfg, nil
}

// Connect creates the pool and checks that the server answers.
func Connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// OpenFailed describes err, a failure to open a store on the server c
// names, for people: "open host:port/database: …", without the user, and
// with the password scrubbed from the cause too, although pgx does not put
// it there. It unwraps to err.
func OpenFailed(c *pgx.ConnConfig, err error) error {
	return &openError{target: target(c), password: c.Password, err: err}
}

type openError struct {
	target   string
	password string
	err      error
}

func (e *openError) Error() string {
	msg := e.err.Error()
	if e.password != "" {
		msg = strings.ReplaceAll(msg, e.password, "xxxxx")
	}
	return "open " + e.target + ": " + msg
}

func (e *openError) Unwrap() error { return e.err }

// target names a server for people: host:port/database, no user or
// password.
func target(c *pgx.ConnConfig) string {
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))) + "/" + c.Database
}

// IsUniqueViolation reports whether err is a primary key or UNIQUE
// constraint failure.
func IsUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
}
