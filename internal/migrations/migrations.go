// Package migrations reads the schema steps the stores embed: files
// migrations/NNNN_description.sql, applied in NNNN order and never edited
// once applied. Applying them is each store's own (its driver, its
// transactions, its locks); this package only loads them and checks a
// database against them.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string // file name, recorded for people reading the migrations table
	SQL     string
}

// Load reads migrations/*.sql from fsys, ordered by version. A name not
// of the form NNNN_description.sql (NNNN a positive number), or two files
// with one version, is an error.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	ms := make([]Migration, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		prefix, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(body)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].Name, ms[i].Name, ms[i].Version)
		}
	}
	return ms, nil
}

// RefuseNewer fails when the database has applied a step (newest, the
// highest version it records; 0 for none) beyond the last of ms: a binary
// older than the database must not write into a schema it does not know.
// name names the schema in the message ("database", "knowledge").
func RefuseNewer(name string, newest int, ms []Migration) error {
	known := 0
	if len(ms) > 0 {
		known = ms[len(ms)-1].Version
	}
	if newest > known {
		return fmt.Errorf("%s schema version %d is newer than this build knows (%d); upgrade chatpipe", name, newest, known)
	}
	return nil
}
