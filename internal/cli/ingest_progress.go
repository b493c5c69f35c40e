package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
)

// reporter writes the ingest's lines, and a progress bar per file when
// the output is a terminal (a pipe or a file gets plain lines only).
type reporter struct {
	w   io.Writer
	tty bool
}

func newReporter(w io.Writer) *reporter {
	f, ok := w.(*os.File)
	return &reporter{w: w, tty: ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))}
}

// line prints one line of the log.
func (r *reporter) line(format string, args ...any) {
	fmt.Fprintf(r.w, format+"\n", args...)
}

// bar starts the progress bar of one file.
func (r *reporter) bar(path string) *progressBar {
	return &progressBar{r: r, name: filepath.Base(path)}
}

// progressBar redraws one terminal line, at most every redrawEvery.
type progressBar struct {
	r     *reporter
	name  string
	drawn time.Time
}

const (
	barWidth    = 30
	redrawEvery = 100 * time.Millisecond
)

// set draws the bar at fraction (0..1) with what is being done.
func (b *progressBar) set(fraction float64, doing string) {
	if !b.r.tty || (time.Since(b.drawn) < redrawEvery && fraction < 1) {
		return
	}
	b.drawn = time.Now()
	fraction = min(max(fraction, 0), 1)
	full := int(fraction * barWidth)
	fmt.Fprintf(b.r.w, "\r\033[K[%s%s] %3d%% %s  %s", strings.Repeat("#", full), strings.Repeat(".", barWidth-full),
		int(fraction*100), b.name, doing)
}

// done clears the bar's line for the file's result.
func (b *progressBar) done() {
	if b.r.tty && !b.drawn.IsZero() {
		fmt.Fprint(b.r.w, "\r\033[K")
	}
}
