// Package archtest checks the module's import graph, so that the arrows
// docs/architecture.md draws cannot drift back: services (model providers,
// knowledge and history stores, caches) never import the chain engine, the
// HTTP layer reaches it only through the run lifecycle, and the leaf
// packages of shared types import nothing of ours but eventbus. It has no
// code of its own, only tests.
package archtest
