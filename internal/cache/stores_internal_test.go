package cache

import (
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/config"
)

// Every stream_store config.Validate accepts has a cache store, and no
// other name does.
func TestStoresRegisteredAreExactlyTheOnesConfigAccepts(t *testing.T) {
	want := config.Implementations("stream_store")
	slices.Sort(want)
	if got := stores.Names(); !slices.Equal(got, want) {
		t.Errorf("registered %v, config accepts %v", got, want)
	}
}
