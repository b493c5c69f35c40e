package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
)

// config.Validate accepts a fixed set of names for the keys that choose a
// store; each must have a registered implementation here, and each
// registered one must be accepted, or an operator could pick a store that
// fails at start (or never pick one that works).
func TestStoresRegisteredAreExactlyTheOnesConfigAccepts(t *testing.T) {
	for _, tc := range []struct {
		key   string
		names []string
	}{
		{"storage.driver (history)", historyStores.Names()},
		{"storage.driver (knowledge)", knowledgeStores.Names()},
		{"stream_store", streamStores.Names()},
	} {
		key, _, _ := strings.Cut(tc.key, " ")
		accepted := config.Implementations(key)
		slices.Sort(accepted)
		if !slices.Equal(tc.names, accepted) {
			t.Errorf("%s: registered %v, config accepts %v", tc.key, tc.names, accepted)
		}
	}
}

// A store name nothing registered (reachable only past Validate, as from
// a test or a future caller) names the key and the choices.
func TestUnknownStoreNamesTheKeyAndTheChoices(t *testing.T) {
	cfg := config.Default()
	cfg.Storage.Driver = "postgress"
	cfg.StreamStore = "kafka"
	ctx := context.Background()
	if _, err := openHistory(ctx, cfg); err == nil ||
		err.Error() != `storage.driver: unknown storage driver "postgress" (known: postgres, sqlite; did you mean "postgres"?)` {
		t.Errorf("history: %v", err)
	}
	if _, err := OpenKnowledge(ctx, cfg, nil, nil); err == nil ||
		err.Error() != `storage.driver: unknown storage driver "postgress" (known: postgres, sqlite; did you mean "postgres"?)` {
		t.Errorf("knowledge: %v", err)
	}
	a := &App{}
	if err := a.openStreams(ctx, cfg); err == nil || err.Error() != `stream_store: unknown stream store "kafka" (known: memory, redis)` {
		t.Errorf("streams: %v", err)
	}
}
