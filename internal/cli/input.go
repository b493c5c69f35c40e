package cli

import (
	"fmt"
	"io"
	"os"
	"path"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// inputLimits are the largest files the knowledge service takes:
// knowledge.max_upload_bytes for a text, knowledge.max_file_bytes for a
// format docparse reads; 0 = not known here (a server says).
type inputLimits struct{ text, file int64 }

// forName is the largest file of this name the service may take and the
// setting that says so. A name without an extension gets the larger of
// the two: its content decides what it is, and the service then holds it
// to its own limit.
func (l inputLimits) forName(name string) (int64, string) {
	name = knowledge.UploadName(name) // "report.pdf." is a PDF, as an upload's name
	switch {
	case knowledge.IsFile(name):
		return l.file, "knowledge.max_file_bytes"
	case path.Ext(name) == "" && (l.file == 0 || l.text == 0):
		return 0, ""
	case path.Ext(name) == "" && l.file > l.text:
		return l.file, "knowledge.max_file_bytes"
	}
	return l.text, "knowledge.max_upload_bytes"
}

// readInput reads f as an upload of it is taken, for chatpipe ingest and
// eval alike: a name no upload accepts is refused unread, and so is a file
// over the limit for its name, which is read through that limit and never
// past it (it may have grown since it was listed). refusal says why the
// file was not read; "" when it was.
func readInput(f inputFile, limits inputLimits) (data []byte, refusal string) {
	if err := knowledge.CheckName(f.name); err != nil {
		return nil, refusalReason(err)
	}
	limit, key := limits.forName(f.name)
	if limit > 0 && f.size > limit {
		return nil, fmt.Sprintf("The file is larger than the limit of %d bytes (%s): %d bytes.", limit, key, f.size)
	}
	file, err := os.Open(f.path)
	if err != nil {
		return nil, "cannot read: " + describePathError(err)
	}
	defer file.Close()
	r := io.Reader(file)
	if limit > 0 {
		r = io.LimitReader(file, limit+1)
	}
	if data, err = io.ReadAll(r); err != nil {
		return nil, "cannot read: " + describePathError(err)
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, fmt.Sprintf("The file is larger than the limit of %d bytes (%s); it grew while it was read.", limit, key)
	}
	return data, ""
}
