package docparse

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// pkg is an OOXML package (a ZIP) opened within the limits of Options.
type pkg struct {
	files map[string]*zip.File
	names []string // in archive order
}

// maxInflateRatio is the most a part that is read (XML: the text, its
// styles, its relationships) of more than minRatioCheckBytes may unpack
// to per byte it takes in the archive. Office XML compresses about 5 to
// 20 times, and a few hundred times when very repetitive (thousands of
// identical empty table rows or styles); a zip bomb compresses about a
// thousand times (deflate's limit is 1032), so that its small file would
// make the parser read hundreds of megabytes. Media and embedded objects
// are never unpacked, so they are not checked: a plain bitmap compresses
// as well as a bomb.
const (
	maxInflateRatio    = 500
	minRatioCheckBytes = 1 << 20
)

// openPackage checks the entry count and the declared sizes (checkEntries)
// before anything is inflated; a part is then read through entryReader,
// which refuses more than it declared, so a lying header cannot get past
// the check.
func openPackage(data []byte, opts Options) (*pkg, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, failf(ErrCorrupt, "the file is damaged: not a valid ZIP package (%v)", err)
	}
	if err := checkEntries(zr.File, opts); err != nil {
		return nil, err
	}
	p := &pkg{files: make(map[string]*zip.File, len(zr.File))}
	for _, f := range zr.File {
		// A valid package names each part once; with two entries of one
		// name, what we check and what another reader reads may differ.
		if p.files[f.Name] != nil {
			return nil, failf(ErrCorrupt, "the file is damaged: it holds the part %s twice", f.Name)
		}
		p.files[f.Name] = f
		p.names = append(p.names, f.Name)
	}
	return p, nil
}

// checkEntries refuses a package over the limits of opts (entry count,
// total unpacked size) or with a suspicious part (checkParts).
func checkEntries(files []*zip.File, opts Options) error {
	if n := len(files); n > opts.maxEntries() {
		return failf(ErrTooLarge, "the file holds %d parts, more than the limit of %d (a zip bomb?)", n, opts.maxEntries())
	}
	var total uint64
	for _, f := range files {
		total += f.UncompressedSize64
		if total > uint64(opts.maxUncompressed()) {
			return failf(ErrTooLarge, "the file unpacks to more than %s, the limit (a zip bomb?)", sizeText(opts.maxUncompressed()))
		}
	}
	return checkParts(files)
}

// checkParts refuses a package one of whose XML parts declares that it
// unpacks far beyond its compressed size (a zip bomb) or understates what
// it holds: the signs read from the central directory alone, whatever
// the limits of Options.
func checkParts(files []*zip.File) error {
	for _, f := range files {
		if !isXMLPart(f.Name) {
			continue
		}
		if err := checkPart(f); err != nil {
			return err
		}
	}
	return nil
}

// checkPart is checkParts' verdict on one part; pkg.open applies it to
// whatever a parser reads, whatever its name (a relationship may point a
// slide at slide1.bin).
func checkPart(f *zip.File) error {
	// Deflate grows incompressible data by a few bytes per 64 KiB block
	// at most, and a stored entry not at all: more compressed bytes than
	// that is a header that understates what the part unpacks to
	// (excelize would read such a cut part as a whole one).
	if f.CompressedSize64 > f.UncompressedSize64+f.UncompressedSize64/1024+1024 {
		return failf(ErrCorrupt, "the file is damaged: its part %s declares %s but holds %s compressed",
			f.Name, sizeText(int64(f.UncompressedSize64)), sizeText(int64(f.CompressedSize64)))
	}
	if f.UncompressedSize64 > minRatioCheckBytes && f.UncompressedSize64 > maxInflateRatio*f.CompressedSize64 {
		return failf(ErrTooLarge, "the file's part %s unpacks to %s from %s, more than %d times its size (a zip bomb?)",
			f.Name, sizeText(int64(f.UncompressedSize64)), sizeText(int64(f.CompressedSize64)), maxInflateRatio)
	}
	return nil
}

// only is the package as a ZIP of the parts keep accepts, their
// compressed bytes copied as they are (nothing is inflated); the
// package's own bytes when keep accepts every part.
func (p *pkg) only(data []byte, keep func(name string) bool) ([]byte, error) {
	if !slices.ContainsFunc(p.names, func(name string) bool { return !keep(name) }) {
		return data, nil
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, name := range p.names {
		if !keep(name) {
			continue
		}
		f := p.files[name]
		raw, err := f.OpenRaw()
		if err != nil {
			return nil, failf(ErrCorrupt, "the file is damaged: cannot open %s (%v)", name, err)
		}
		header := f.FileHeader
		dst, err := w.CreateRaw(&header)
		if err == nil {
			_, err = io.Copy(dst, raw)
		}
		if err != nil {
			return nil, failf(ErrCorrupt, "the file is damaged: cannot copy %s (%v)", name, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, failf(ErrCorrupt, "the file is damaged: %v", err)
	}
	return buf.Bytes(), nil
}

// isXMLPart reports whether a package entry is one a parser reads (XML
// and relationships), not media or an embedded object.
func isXMLPart(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".xml" || ext == ".rels"
}

// sizeText is a byte count as people read it: 512 bytes, 3.2 KB, 200 MB.
func sizeText(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	case n < 1_000_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// open returns a reader of an entry's content, or nil and no error when
// the package has no such entry. Reading more than the entry declared is
// ErrCorrupt.
func (p *pkg) open(name string) (io.ReadCloser, error) {
	f := p.files[name]
	if f == nil {
		return nil, nil
	}
	if err := checkPart(f); err != nil {
		return nil, err
	}
	rc, err := f.Open()
	if err != nil {
		return nil, failf(ErrCorrupt, "the file is damaged: cannot open %s (%v)", name, err)
	}
	return &entryReader{rc: rc, name: name, left: int64(f.UncompressedSize64)}, nil
}

// read returns an entry's content, or nil and no error when the package
// has no such entry.
func (p *pkg) read(name string) ([]byte, error) {
	rc, err := p.open(name)
	if err != nil || rc == nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// verify unpacks a part into nothing, to find a corrupt or lying one
// before a reader that does not check is given the package.
func (p *pkg) verify(name string) error {
	rc, err := p.open(name)
	if err != nil || rc == nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// entryReader reads one entry, refusing more bytes than it declared and
// naming the entry in its errors (all the file's fault: reading from
// memory, an error is a bad checksum, a corrupt deflate stream, an entry
// cut short or one longer than it says).
type entryReader struct {
	rc   io.ReadCloser
	name string
	left int64 // bytes the entry may still yield
}

func (r *entryReader) Read(b []byte) (int, error) {
	if r.left < 0 {
		return 0, failf(ErrCorrupt, "the file is damaged: %s holds more than its declared size", r.name)
	}
	n, err := r.rc.Read(b[:min(int64(len(b)), r.left+1)])
	r.left -= int64(n)
	switch {
	case r.left < 0, errors.Is(err, zip.ErrFormat):
		// archive/zip itself stops an entry at its declared size with
		// ErrFormat (its only use of it while reading).
		return 0, failf(ErrCorrupt, "the file is damaged: %s holds more than its declared size", r.name)
	case err != nil && err != io.EOF:
		return n, failf(ErrCorrupt, "the file is damaged or truncated: %s cannot be unpacked (%v)", r.name, err)
	}
	return n, err
}

func (r *entryReader) Close() error { return r.rc.Close() }

// rels reads the relationships of a part: id → target part name.
func (p *pkg) rels(part string) (map[string]string, error) {
	rels, err := p.relations(part)
	out := make(map[string]string, len(rels))
	for _, r := range rels {
		out[r.id] = r.target
	}
	return out, err
}

// relation is one internal relationship of a part.
type relation struct {
	id, target, kind string // kind: the relationship type's last path element ("worksheet")
}

// relations reads the internal relationships of a part (of the package
// itself for part ""), their targets resolved to part names.
func (p *pkg) relations(part string) ([]relation, error) {
	dir, file := path.Split(part)
	data, err := p.read(dir + "_rels/" + file + ".rels")
	if err != nil || data == nil {
		return nil, err
	}
	var doc struct {
		Rels []struct {
			ID     string `xml:"Id,attr"`
			Target string `xml:"Target,attr"`
			Mode   string `xml:"TargetMode,attr"`
			Type   string `xml:"Type,attr"`
		} `xml:"Relationship"`
	}
	if err := unmarshalXML(data, &doc); err != nil {
		return nil, err
	}
	out := make([]relation, 0, len(doc.Rels))
	for _, r := range doc.Rels {
		if r.Mode == "External" {
			continue
		}
		target := r.Target
		if strings.HasPrefix(target, "/") {
			target = strings.TrimPrefix(target, "/")
		} else {
			target = path.Join(dir, target)
		}
		out = append(out, relation{id: r.ID, target: target, kind: path.Base(r.Type)})
	}
	return out, nil
}

// coreTitle is the dc:title of docProps/core.xml, or "".
func (p *pkg) coreTitle() string {
	data, err := p.read("docProps/core.xml")
	if err != nil || data == nil {
		return ""
	}
	var core struct {
		Title string `xml:"title"`
	}
	if unmarshalXML(data, &core) != nil {
		return ""
	}
	return strings.Join(strings.Fields(core.Title), " ")
}
