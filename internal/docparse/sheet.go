package docparse

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"
)

// sheetInMemoryBytes is the largest sheet XML read in memory (excelize's
// own default).
const sheetInMemoryBytes = 16 << 20

// parseXLSX reads every sheet in workbook order with excelize (the
// maintained pure-Go Excel library): the first non-empty row of a sheet
// is its header, the other rows its text, one section per sheet named
// after it. Cells are read as displayed (formatted values, formulas'
// cached results).
func parseXLSX(ctx context.Context, data []byte, opts Options) (*Document, error) {
	// Our own check first: it names the problem better than excelize.
	p, err := openPackage(data, opts)
	if err != nil {
		return nil, err
	}
	// excelize holds every part of a workbook in memory, media and
	// embedded objects too, which reading cells never needs (a 250 KB
	// workbook "holding" a 240 MB image of zeros took 750 MB): it is
	// given the XML parts and the parts the workbook reads cells from
	// (sheets, shared strings, styles), whatever their names, alone.
	cells, err := p.cellParts()
	if err != nil && !errors.Is(err, ErrTooLarge) {
		// Relationships we cannot read (an encoding other than UTF-8)
		// excelize may: the XML parts alone, sheets named as usual.
		cells, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	keep := func(name string) bool { return isXMLPart(name) || cells[name] }
	// excelize reads parts without checking them (a cut or corrupt part
	// would read as a shorter sheet), so each is unpacked through our
	// checked reader first, into nothing: one more pass, no memory.
	for _, name := range p.names {
		if !keep(name) {
			continue
		}
		if err := p.verify(name); err != nil {
			return nil, err
		}
	}
	if data, err = p.only(data, keep); err != nil {
		return nil, err
	}
	// A sheet larger than sheetInMemoryBytes is unpacked to a temporary
	// file that excelize streams rows from, not held in memory; the
	// folder goes with the parse, whatever excelize leaves there.
	tmp, err := os.MkdirTemp("", "chatpipe-xlsx-")
	if err != nil {
		return nil, fmt.Errorf("docparse: temporary folder for a workbook: %w", err)
	}
	defer os.RemoveAll(tmp)
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit:    opts.maxUncompressed(),
		UnzipXMLSizeLimit: min(sheetInMemoryBytes, opts.maxUncompressed()),
		TmpDir:            tmp,
		// Excel shows its built-in short date (formats 14 and 22) in the
		// reader's regional format, with the year in full in the common
		// ones; excelize's fallback is m/d/yy, so 2024 and 1924 would both
		// read as "24" and a search for the year would not find the row.
		// ISO dates keep the year whole and read alike in every language.
		ShortDatePattern: "yyyy-mm-dd",
	})
	if f != nil {
		defer f.Close()
	}
	if err != nil {
		return nil, failf(ErrCorrupt, "the file is damaged: the workbook cannot be read (%v)", err)
	}
	sheets := f.GetSheetList()
	doc := &Document{Title: p.coreTitle()}
	budget := opts.budget()
	for i, name := range sheets {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		rows, err := f.Rows(name)
		if err != nil {
			return nil, failf(ErrCorrupt, "the file is damaged: sheet %q cannot be read (%v)", name, err)
		}
		t := tableBuilder{budget: budget}
		for rows.Next() {
			cols, err := rows.Columns()
			if err == nil {
				err = t.row(cols)
			}
			if errors.Is(err, ErrTooLarge) {
				rows.Close()
				return nil, err
			}
			if err != nil {
				rows.Close()
				return nil, failf(ErrCorrupt, "the file is damaged: sheet %q cannot be read (%v)", name, err)
			}
		}
		err = rows.Error()
		rows.Close()
		if err != nil {
			return nil, failf(ErrCorrupt, "the file is damaged: sheet %q cannot be read (%v)", name, err)
		}
		s, ok, err := t.section(name)
		if err != nil {
			return nil, err
		}
		if ok {
			doc.Sections = append(doc.Sections, s)
		}
		opts.progress(i+1, len(sheets))
	}
	return doc, nil
}

// parseCSV reads comma-, semicolon- or tab-separated UTF-8 text; the
// first non-empty row is the header.
func parseCSV(data []byte) (*Document, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if !utf8.Valid(data) {
		return nil, failf(ErrCorrupt, "the CSV file is not UTF-8 text; save it as UTF-8 and upload it again")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, failf(ErrCorrupt, "the file is not a CSV text file (it contains NUL bytes)")
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = sniffDelimiter(data)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true
	var t tableBuilder
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			return nil, failf(ErrCorrupt, "the CSV file cannot be read: line %d: %v", perr.Line, perr.Err)
		}
		if err != nil {
			return nil, err
		}
		if n := recordBytes(rec); n > maxCSVRowBytes {
			line, _ := r.FieldPos(0)
			return nil, failf(ErrTooLarge, "the CSV file's row at line %d holds %s of text, more than the %s a row may hold (one line with no row breaks?)", line, sizeText(int64(n)), sizeText(maxCSVRowBytes))
		}
		_ = t.row(rec) // no budget: the text is the file, bounded by its size
	}
	doc := &Document{}
	if s, ok, _ := t.section(""); ok { // no budget (see row)
		doc.Sections = append(doc.Sections, s)
	}
	return doc, nil
}

// maxCSVRowBytes bounds one CSV row's text: a row is one passage's
// worth of text or a few, and a file of one endless line would be cut
// into passages all at once, at many times its size in memory.
const maxCSVRowBytes = 1 << 20

// recordBytes is the text of a row's cells.
func recordBytes(rec []string) int {
	n := 0
	for _, c := range rec {
		n += len(c)
	}
	return n
}

// sniffDelimiter picks the separator most frequent on the first line.
func sniffDelimiter(data []byte) rune {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	best, count := ',', bytes.Count(line, []byte(","))
	for _, c := range []rune{';', '\t'} {
		if n := bytes.Count(line, []byte(string(c))); n > count {
			best, count = c, n
		}
	}
	return best
}

// tableBuilder turns rows of cells into a header line and data lines. A
// column empty in every row is left out (a cell far to the right would
// otherwise write every empty cell before it: " | " thousands of times a
// row), and only the cells holding text are kept while the table is
// read; budget, when set, bounds the text the rows hold.
type tableBuilder struct {
	rows   [][]cell     // non-empty rows, their non-empty cells
	used   map[int]bool // columns holding a cell somewhere
	budget *textBudget
}

// cell is a non-empty cell and its column.
type cell struct {
	col  int
	text string
}

func (t *tableBuilder) row(cells []string) error {
	var r []cell
	// Each cell slot read costs a byte of the budget besides its text: a
	// row reaching column XFD is 16,384 slots however few hold text, and
	// a million of them would keep a worker busy for minutes.
	n := len(cells)
	for i, c := range cells {
		if c == "" {
			continue
		}
		if c = strings.Join(strings.Fields(c), " "); c != "" {
			r = append(r, cell{i, c})
			n += len(c)
		}
	}
	if t.budget != nil {
		if err := t.budget.spend(n); err != nil {
			return err
		}
	}
	if len(r) == 0 {
		return nil
	}
	if t.used == nil {
		t.used = map[int]bool{}
	}
	for _, c := range r {
		t.used[c.col] = true
	}
	t.rows = append(t.rows, r)
	return nil
}

// section is the table as a section: the first row its header, a table
// of one row that row as text, without a header. The separators of the
// empty cells between used columns are taken from the budget as the
// lines are built (a sheet whose row r holds one cell, in column r, uses
// every column).
func (t *tableBuilder) section(heading string) (Section, bool, error) {
	cols := slices.Sorted(maps.Keys(t.used))
	var err error
	line := func(r []cell) string {
		out := make([]string, 0, len(cols))
		for _, col := range cols {
			if len(r) == 0 {
				break // trailing empty cells say nothing
			}
			text := ""
			if r[0].col == col {
				text, r = r[0].text, r[1:]
			}
			out = append(out, text)
		}
		if t.budget != nil && err == nil {
			err = t.budget.spend(len(" | ") * len(out))
		}
		return tableRow(out)
	}
	switch len(t.rows) {
	case 0:
		return Section{}, false, nil
	case 1:
		s := Section{Heading: heading, Text: line(t.rows[0])}
		return s, err == nil, err
	}
	lines := make([]string, 0, len(t.rows)-1)
	for _, r := range t.rows[1:] {
		if lines = append(lines, line(r)); err != nil {
			return Section{}, false, err
		}
	}
	s := Section{Heading: heading, Header: line(t.rows[0]), Text: strings.Join(lines, "\n")}
	return s, err == nil, err
}

// cellParts are the parts a workbook's relationships name as holding its
// cells — sheets, shared strings, styles — by part name: the workbook is
// the package's officeDocument (xl/workbook.xml when it names none).
func (p *pkg) cellParts() (map[string]bool, error) {
	workbook := "xl/workbook.xml"
	root, err := p.relations("")
	if err != nil {
		return nil, err
	}
	for _, r := range root {
		if r.kind == "officeDocument" {
			workbook = r.target // the first, as excelize takes
			break
		}
	}
	rels, err := p.relations(workbook)
	if err != nil {
		return nil, err
	}
	parts := map[string]bool{workbook: true}
	for _, r := range rels {
		switch r.kind {
		case "worksheet", "chartsheet", "dialogsheet", "sharedStrings", "styles", "theme":
			parts[r.target] = true
		}
	}
	return parts, nil
}
