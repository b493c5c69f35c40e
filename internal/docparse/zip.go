package docparse

import (
	"archive/zip"
	"bytes"
	"io"
	"path"
	"strings"
)

// pkg is an OOXML package (a ZIP) opened within the limits of Options.
type pkg struct {
	files map[string]*zip.File
	names []string // in archive order
}

// openPackage checks the entry count and the declared uncompressed sizes
// before anything is inflated. archive/zip refuses to inflate an entry
// beyond its declared size, so a lying header cannot get past the check.
func openPackage(data []byte, opts Options) (*pkg, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, failf(ErrCorrupt, "the file is damaged: not a valid ZIP package (%v)", err)
	}
	if n := len(zr.File); n > opts.maxEntries() {
		return nil, failf(ErrTooLarge, "the file holds %d parts, more than the limit of %d (a zip bomb?)", n, opts.maxEntries())
	}
	var total uint64
	p := &pkg{files: make(map[string]*zip.File, len(zr.File))}
	for _, f := range zr.File {
		total += f.UncompressedSize64
		if total > uint64(opts.maxUncompressed()) {
			return nil, failf(ErrTooLarge, "the file unpacks to more than %d bytes, the limit (a zip bomb?)", opts.maxUncompressed())
		}
		p.files[f.Name] = f
		p.names = append(p.names, f.Name)
	}
	return p, nil
}

// read returns an entry's content, or nil and no error when the package
// has no such entry.
func (p *pkg) read(name string) ([]byte, error) {
	f := p.files[name]
	if f == nil {
		return nil, nil
	}
	rc, err := f.Open()
	if err != nil {
		return nil, failf(ErrCorrupt, "the file is damaged: cannot open %s (%v)", name, err)
	}
	defer rc.Close()
	// The declared size was checked; +1 catches a reader that ignores it.
	data, err := io.ReadAll(io.LimitReader(rc, int64(f.UncompressedSize64)+1))
	if err != nil {
		// Reading from memory, every error is the file's: a bad checksum,
		// a corrupt deflate stream, an entry cut short.
		return nil, failf(ErrCorrupt, "the file is damaged or truncated: %s cannot be unpacked (%v)", name, err)
	}
	return data, nil
}

// rels reads the relationships of a part: id → target part name.
func (p *pkg) rels(part string) (map[string]string, error) {
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
		} `xml:"Relationship"`
	}
	if err := unmarshalXML(data, &doc); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(doc.Rels))
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
		out[r.ID] = target
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
