package docparse

import (
	"archive/zip"
	"bytes"
	"math"
	"path"
	"strings"
)

// Magic numbers of the containers Detect tells apart.
var (
	magicPDF = []byte("%PDF-")
	magicZIP = []byte("PK\x03\x04")
	// magicCFB starts an OLE compound file: legacy .doc/.xls/.ppt, and
	// also a password-protected DOCX, PPTX or XLSX (an encrypted package).
	magicCFB = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
)

// Detect tells a file's media type from its content and its name. Content
// decides the container (PDF, ZIP, OLE); inside a ZIP, the main part
// decides between DOCX, PPTX and XLSX. CSV, which has no magic number, is
// known by its extension.
//
// A ZIP package is checked against the default limits of Options (entry
// count, unpacked size) and for zip bombs from its directory alone, so an
// upload is refused before it is stored or queued; DetectWithin takes
// other limits.
func Detect(name string, data []byte) (string, error) { return DetectWithin(name, data, Options{}) }

// DetectWithin is Detect with the limits of opts.
func DetectWithin(name string, data []byte, opts Options) (string, error) {
	ext := strings.ToLower(path.Ext(name))
	byExt := byExtension[ext]
	head := data[:min(len(data), 1024)]
	switch {
	case bytes.HasPrefix(data, magicPDF), byExt == MediaPDF && bytes.Contains(head, magicPDF):
		return MediaPDF, nil
	case bytes.HasPrefix(data, magicCFB):
		if byExt == MediaDOCX || byExt == MediaPPTX || byExt == MediaXLSX {
			return "", failf(ErrEncrypted, "the file is encrypted (password-protected); remove the password and upload it again")
		}
		return "", failf(ErrUnsupported, "legacy Office files (.doc, .xls, .ppt) are not supported; save the file as .docx, .xlsx or .pptx")
	case bytes.HasPrefix(data, magicZIP):
		return detectOOXML(ext, byExt, data, opts)
	}
	switch byExt {
	case MediaCSV:
		return MediaCSV, nil
	case MediaPDF:
		if len(data) == 0 {
			return "", failf(ErrCorrupt, "the file is empty")
		}
		return "", failf(ErrCorrupt, "the file is not a PDF (it does not start with %%PDF-)")
	case MediaDOCX, MediaPPTX, MediaXLSX:
		return "", failf(ErrCorrupt, "the file is not a valid %s document (not a ZIP package)", strings.TrimPrefix(ext, "."))
	}
	return "", failf(ErrUnsupported, "unsupported file format %q", ext)
}

// detectOOXML tells a DOCX, PPTX or XLSX by its main part. Only the ZIP's
// central directory is read here, never an entry's content.
func detectOOXML(ext, byExt string, data []byte, opts Options) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", failf(ErrCorrupt, "the file is damaged: not a valid ZIP package (%v)", err)
	}
	found := ""
	for _, f := range zr.File {
		switch f.Name {
		case "word/document.xml":
			found = MediaDOCX
		case "ppt/presentation.xml":
			found = MediaPPTX
		case "xl/workbook.xml":
			found = MediaXLSX
		}
		if found != "" {
			break
		}
	}
	if found == "" {
		if byExt == "" || byExt == MediaCSV || byExt == MediaPDF {
			return "", failf(ErrUnsupported, "the file is a ZIP archive, not a Word, PowerPoint or Excel document")
		}
		return "", failf(ErrCorrupt, "the file is named %s but is a ZIP archive of something else, not %s document", ext, kindName(byExt))
	}
	// A zip bomb is refused here, before any of it is stored or queued
	// for a background ingest.
	if err := checkEntries(zr.File, opts); err != nil {
		return "", err
	}
	return found, nil
}

func kindName(mediaType string) string {
	switch mediaType {
	case MediaDOCX:
		return "a Word"
	case MediaPPTX:
		return "a PowerPoint"
	case MediaXLSX:
		return "an Excel"
	}
	return "a " + mediaType
}

// UnpackedSize is how large data may be once unpacked, as far as can be
// told without unpacking it: for a ZIP package, its XML parts' declared
// sizes added up (the parts a parser reads; an entry is never read beyond
// what it declares), else data's own size. A caller deciding whether a
// file is quick to read goes by it, not by the compressed size: a 250 KB
// DOCX may hold 100 MB of text.
func UnpackedSize(data []byte) int64 {
	size := int64(len(data))
	if !bytes.HasPrefix(data, magicZIP) {
		return size
	}
	zr, err := zip.NewReader(bytes.NewReader(data), size)
	if err != nil {
		return size
	}
	var total uint64
	for _, f := range zr.File {
		if isXMLPart(f.Name) {
			total = min(total+f.UncompressedSize64, math.MaxInt64)
		}
	}
	return max(size, int64(total))
}
