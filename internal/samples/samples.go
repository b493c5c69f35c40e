// Package samples is the bundled sample knowledge base: Markdown guides to
// chatpipe itself — running it, configuring plugins and chat modes,
// connecting a real model, writing a plugin, streaming with resume and
// stop, and the knowledge base — in English (en-*.md) and Simplified
// Chinese (zh-*.md). chatpipe loads them into an empty knowledge base at
// start when knowledge.sample_docs is on, so that a fresh `go run .` has
// something to answer from in the rag mode.
//
// questions.json beside this file is a labelled question set over the
// documents; eval_test.go measures retrieval recall@3 with it and checks
// that the documents still agree with the code:
//
//	go test -run TestRecall -v ./internal/samples/
package samples

import (
	"embed"
	"io/fs"
)

//go:embed docs/*.md
var docs embed.FS

// FS holds the sample documents at its root ("en-running.md",
// "zh-running.md", …), ready for knowledge.Service.LoadSamples.
var FS fs.FS = func() fs.FS {
	sub, err := fs.Sub(docs, "docs")
	if err != nil { // only if the embed pattern above changes
		panic("samples: " + err.Error())
	}
	return sub
}()
