// Package sqlitedb opens the SQLite file chatpipe's embedded stores keep
// their tables in (pure Go, no cgo; the history and knowledge stores may
// share one file), and holds the conventions both follow: how times are
// stored and which errors they recognise.
package sqlitedb

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// timeLayout is fixed width, so stored times sort as text.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// FormatTime is t as the stores keep times: UTC text, fixed width at
// microseconds, so that times sort as text.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// ParseTime reads a time FormatTime wrote.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

// IsUniqueViolation reports whether err is a primary key or UNIQUE
// constraint failure.
func IsUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// IgnoreDone drops the error of rolling back a transaction that already
// ended.
func IgnoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
