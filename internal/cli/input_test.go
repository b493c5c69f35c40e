package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file listed small and grown since is read through its limit, never
// past it, and refused.
func TestReadInputStopsAtTheLimitOfAFileThatGrew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("grown ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	limits := inputLimits{text: 64, file: 1 << 20}
	data, refusal := readInput(inputFile{path: path, name: "notes.txt", size: 10}, limits)
	if data != nil || refusal != "The file is larger than the limit of 64 bytes (knowledge.max_upload_bytes); it grew while it was read." {
		t.Fatalf("read %d bytes, refusal %q", len(data), refusal)
	}
	// A name without an extension is read up to the larger limit: its
	// content decides what it is.
	if data, refusal := readInput(inputFile{path: path, name: "notes", size: 600}, limits); len(data) != 600 || refusal != "" {
		t.Fatalf("no extension: read %d bytes, refusal %q", len(data), refusal)
	}
}

// A file name is not ours: its escape sequences and line breaks are shown,
// not obeyed, in the log, the summary and the progress bar.
func TestIngestShowsAFileNamesControlCharactersAsEscapes(t *testing.T) {
	dir := "/data"
	name := "x\x1b[31mRED\x1b[0m\x1b]0;pwned\a\u202e.md"
	var out strings.Builder
	r := &reporter{w: &out}
	r.line("ingested   %s (%s)", filepath.Join(dir, name), "1 chunks")
	s := summary{}
	s.refuse(filepath.Join(dir, "bad\nrefused    forged.exe"), "Unsupported document type")
	s.print(&out)
	got := out.String()
	if strings.ContainsAny(got, "\x1b\a\u202e") || strings.Contains(got, "\nrefused    forged") {
		t.Fatalf("control characters reached the output:\n%q", got)
	}
	for _, want := range []string{`x\x1b[31mRED\x1b[0m\x1b]0;pwned\a\u202e.md`, `bad\nrefused    forged.exe`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	if b := r.bar(name); b.name != `x\x1b[31mRED\x1b[0m\x1b]0;pwned\a\u202e.md` {
		t.Errorf("bar name %q", b.name)
	}
	// Names written with joiners, emoji sequences or in other scripts are
	// shown as they are; an invalid byte as its escape.
	for _, name := range []string{"می\u200cخواهم.md", "क्\u200dष.md", "👨\u200d👩\u200d👧.md", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f.md", "知识库.md", "שלום.md"} {
		if got := terminalSafe(name); got != name {
			t.Errorf("terminalSafe(%q) = %q; want it unchanged", name, got)
		}
	}
	if got := terminalSafe("a\xffb\xfe.md"); got != `a\xffb\xfe.md` {
		t.Errorf("invalid bytes shown as %q", got)
	}
	// Emoji tags outside a flag are invisible text: shown.
	if got := terminalSafe("report.md\U000e0072\U000e006d"); got != `report.md\U000e0072\U000e006d` {
		t.Errorf("hidden tags shown as %q", got)
	}
}

// The limit for a file goes by the name an upload would see: "report.pdf."
// is a PDF, held to max_file_bytes.
func TestInputLimitsGoByTheUploadName(t *testing.T) {
	limits := inputLimits{text: 10, file: 1000}
	for name, want := range map[string]int64{"report.pdf.": 1000, "report.pdf ": 1000, "notes.md": 10, "notes": 1000} {
		if got, _ := limits.forName(name); got != want {
			t.Errorf("forName(%q) = %d, want %d", name, got, want)
		}
	}
}
