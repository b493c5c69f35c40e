package handler

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"
)

// The built-in chat page: plain HTML, CSS and JavaScript embedded in the
// binary, no build step and nothing loaded from elsewhere. It talks to the
// same /api/v1 as any other client.

//go:embed web
var webFiles embed.FS

// webFile is an embedded file ready to serve.
type webFile struct {
	body        []byte
	contentType string
	etag        string
}

// webAssets are the files under web/ by name, read once at start.
var webAssets = loadWebAssets()

func loadWebAssets() map[string]webFile {
	entries, err := webFiles.ReadDir("web")
	if err != nil {
		panic(err) // the directory is embedded: cannot happen
	}
	out := make(map[string]webFile, len(entries))
	for _, e := range entries {
		body, err := webFiles.ReadFile("web/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(e.Name()))
		if ct == "" {
			ct = "application/octet-stream"
		}
		out[e.Name()] = webFile{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return out
}

// webCSP lets the page load only its own files and call only its own
// origin: even if the Markdown renderer let markup through, no script
// could run and nothing could leave.
const webCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (h *Handler) webPage(c *gin.Context) { serveWebFile(c, "index.html") }

func (h *Handler) webAsset(c *gin.Context) {
	name := c.Param("file")
	if name == "index.html" || strings.HasPrefix(name, ".") {
		name = "" // the page lives at /
	}
	serveWebFile(c, name)
}

// serveWebFile answers with an embedded file, revalidated on every load
// (no-cache + ETag) so an upgraded binary's page is used at once.
func serveWebFile(c *gin.Context, name string) {
	f, ok := webAssets[name]
	if !ok {
		abort(c, http.StatusNotFound, "not_found", "No such file: "+c.Request.URL.Path+".")
		return
	}
	hd := c.Writer.Header()
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if name == "index.html" {
		hd.Set("Content-Security-Policy", webCSP)
		hd.Set("X-Frame-Options", "DENY")
	}
	if match := c.GetHeader("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, f.contentType, f.body)
}
