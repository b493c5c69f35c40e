package registry_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type factory func() string

func fill(t *testing.T, names ...string) *registry.Registry[factory] {
	t.Helper()
	r := registry.New[factory]("storage driver")
	for _, n := range names {
		r.Register(n, func() string { return "built by " + n })
	}
	return r
}

func TestLookupFindsWhatWasRegistered(t *testing.T) {
	t.Parallel()
	r := fill(t, "sqlite", "postgres")
	f, ok := r.Lookup("postgres")
	if !ok || f() != "built by postgres" {
		t.Fatalf("Lookup(postgres) = %v, %v", ok, f)
	}
	if _, ok := r.Lookup("Postgres"); ok {
		t.Error("names are exact: Postgres was found")
	}
	f, err := r.Get("sqlite")
	if err != nil || f() != "built by sqlite" {
		t.Fatalf("Get(sqlite) = %v", err)
	}
}

func TestNamesAreSorted(t *testing.T) {
	t.Parallel()
	r := fill(t, "sqlite", "memory", "postgres", "redis")
	if got, want := r.Names(), []string{"memory", "postgres", "redis", "sqlite"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	names := r.Names()
	names[0] = "changed"
	if r.Names()[0] != "memory" {
		t.Error("Names() shares its slice with the registry")
	}
	if got := registry.New[factory]("tool").Names(); len(got) != 0 {
		t.Errorf("an empty registry lists %v", got)
	}
}

func TestRegisterPanicsOnARepeatedOrEmptyName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want string
	}{
		{"sqlite", "registry: storage driver registered twice: sqlite"},
		{"", "registry: storage driver registered with an empty name"},
	} {
		r := fill(t, "sqlite")
		func() {
			defer func() {
				if got := fmt.Sprint(recover()); got != tc.want {
					t.Errorf("Register(%q) panicked with %q, want %q", tc.name, got, tc.want)
				}
			}()
			r.Register(tc.name, func() string { return "" })
		}()
		if f, _ := r.Lookup("sqlite"); f() != "built by sqlite" {
			t.Errorf("a rejected registration replaced sqlite's factory")
		}
	}
}

func TestUnknownNameErrorListsTheNamesAndTheLikelyOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		registered []string
		asked      string
		want       string
	}{
		{[]string{"sqlite", "postgres"}, "postgress",
			`unknown storage driver "postgress" (known: postgres, sqlite; did you mean "postgres"?)`},
		{[]string{"sqlite", "postgres"}, "mysql", `unknown storage driver "mysql" (known: postgres, sqlite)`},
		{nil, "sqlite", `unknown storage driver "sqlite" (known: none)`},
	} {
		r := fill(t, tc.registered...)
		f, err := r.Get(tc.asked)
		if f != nil {
			t.Errorf("Get(%q) returned a factory", tc.asked)
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("Get(%q) error = %v, want %s", tc.asked, err, tc.want)
		}
		var unknown *registry.UnknownError
		if !errors.As(err, &unknown) || unknown.Name != tc.asked || unknown.Kind != "storage driver" {
			t.Errorf("Get(%q) error is not an UnknownError naming it: %#v", tc.asked, err)
		}
	}
}

// Registrations and lookups may run at once (tests register their own
// entries while servers built by other tests look names up); -race checks.
func TestConcurrentRegisterAndLookup(t *testing.T) {
	t.Parallel()
	r := registry.New[factory]("tool")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.Register(fmt.Sprintf("tool_%d", i), func() string { return "" })
		}()
		go func() {
			defer wg.Done()
			_, _ = r.Lookup("tool_0")
			_ = r.Names()
		}()
	}
	wg.Wait()
	if n := len(r.Names()); n != 8 {
		t.Fatalf("%d names registered, want 8", n)
	}
}
