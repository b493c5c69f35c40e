package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	fmt.Fprintln(r.w, terminalSafe(fmt.Sprintf(format, args...)))
}

// bar starts the progress bar of one file.
func (r *reporter) bar(path string) *progressBar {
	return &progressBar{r: r, name: terminalSafe(filepath.Base(path))}
}

// terminalSafe shows s's control characters, its format characters
// that reorder or hide text (bidirectional overrides, U+202E) and its
// invalid bytes as Go escapes (\x1b, \n, \u202e, \xff): file names and
// the reasons read from files are not ours, and an escape sequence or a
// line break in one would recolour or retitle the terminal, or forge a
// line of the log. The joiners real names are written with (می‌خواهم,
// 👨‍👩‍👧) and the tags of a subdivision flag are kept.
func terminalSafe(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	flag := false // inside a subdivision flag: 🏴 and its tags
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		tag := r >= 0xE0020 && r <= 0xE007F
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case tag && flag:
			b.WriteString(s[i : i+size])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		flag = r == '🏴' || (flag && tag && r != 0xE007F)
		i += size
	}
	return b.String()
}

// unsafeRune reports whether r is shown escaped: a control or format
// character (emoji tags too: invisible, they can hide text, and are kept
// only in a flag), except the joiners real names are written with.
func unsafeRune(r rune) bool {
	if r == '\u200c' || r == '\u200d' { // zero-width non-joiner and joiner
		return false
	}
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
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
