// Package secrets keeps the operator's configured secrets (provider API
// keys, database and Redis passwords, header values) out of what users and
// logs see. A Redactor is built from the list of secret values of one
// configuration and replaces each of them — as written, URL-encoded,
// JSON-escaped or HTML-escaped — wherever it appears in a text. It does not
// guess what a key looks like: it knows the keys.
package secrets

import (
	"cmp"
	"encoding/json"
	"html"
	"net/url"
	"slices"
	"strings"
)

// Marker replaces a secret.
const Marker = "[redacted]"

// MinLen is the shortest value treated as a secret. Shorter values are
// placeholders ("none", "ollama") that would otherwise blank out ordinary
// words of every message.
const MinLen = 8

// Redactor replaces known secrets in text. The zero value and nil redact
// nothing. It is immutable and safe for concurrent use.
type Redactor struct {
	r        *strings.Replacer
	patterns []string // every form of every secret, longest first
}

// New returns a Redactor for values; values shorter than MinLen and
// duplicates are ignored.
func New(values ...string) *Redactor {
	seen := map[string]bool{}
	var patterns []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinLen {
			continue
		}
		for _, form := range forms(v) {
			if form != "" && !seen[form] {
				seen[form] = true
				patterns = append(patterns, form)
			}
		}
	}
	if len(patterns) == 0 {
		return &Redactor{}
	}
	// strings.Replacer prefers the pattern listed first when several match
	// at one position: the longest first, so a secret that contains another
	// is replaced whole.
	slices.SortFunc(patterns, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(patterns))
	for _, p := range patterns {
		pairs = append(pairs, p, Marker)
	}
	return &Redactor{r: strings.NewReplacer(pairs...), patterns: patterns}
}

// forms are the shapes a secret takes when a provider or a library echoes
// it: verbatim, in a URL query or path, inside a JSON string, in HTML.
func forms(v string) []string {
	js, _ := json.Marshal(v) // never fails for a string
	return []string{
		v,
		url.QueryEscape(v),
		url.PathEscape(v),
		strings.ReplaceAll(url.QueryEscape(v), "+", "%20"),
		string(js[1 : len(js)-1]),
		html.EscapeString(v),
	}
}

// Redact returns s with every known secret replaced by Marker.
func (r *Redactor) Redact(s string) string {
	if r == nil || r.r == nil || !r.mayContain(s) {
		return s
	}
	return r.r.Replace(s)
}

// Empty reports whether r knows no secret.
func (r *Redactor) Empty() bool { return r == nil || r.r == nil }

// mayContain is the fast path: almost every text holds no secret, and
// strings.Contains (vectorised) per pattern is far cheaper than running
// the replacer's trie over the text.
func (r *Redactor) mayContain(s string) bool {
	for _, p := range r.patterns {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
