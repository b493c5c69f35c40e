package cache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// MemoryOptions configure a Memory store.
type MemoryOptions struct {
	// MaxBytes bounds the keys and values kept; the least recently used
	// go first. 0 = DefaultMaxBytes.
	MaxBytes int64
	// Now is the clock expiry is measured with; nil = time.Now (tests
	// pass a fake one).
	Now func() time.Time
}

// Memory is an LRU cache bounded in bytes whose values expire after their
// ttl. It lives and dies with the process.
type Memory struct {
	max int64
	now func() time.Time

	mu    sync.Mutex
	order *list.List // of *memoryEntry, most recently used first
	items map[string]*list.Element
	used  int64
}

type memoryEntry struct {
	key     string
	value   []byte
	expires time.Time
}

// entryOverhead approximates the bookkeeping of one entry (list element,
// map slot, headers), so a budget of many tiny values still means something.
const entryOverhead = 128

func (e *memoryEntry) size() int64 { return int64(len(e.key)+len(e.value)) + entryOverhead }

// NewMemory returns an empty store.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Memory{max: opts.MaxBytes, now: opts.Now, order: list.New(), items: map[string]*list.Element{}}
}

// Get implements sharedcache.Store. The value is shared: callers must not
// modify it.
func (m *Memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[key]
	if !ok {
		return nil, false, nil
	}
	e := el.Value.(*memoryEntry)
	if !m.now().Before(e.expires) {
		m.remove(el)
		return nil, false, nil
	}
	m.order.MoveToFront(el)
	return e.value, true, nil
}

// Set implements sharedcache.Store. It keeps a copy of value, evicting the
// least recently used entries to stay within the budget; a value that
// could never fit returns ErrTooLarge. A ttl of 0 or less stores nothing.
func (m *Memory) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	e := &memoryEntry{key: key, value: append([]byte(nil), value...)}
	if e.size() > m.max {
		return ErrTooLarge
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[key]; ok {
		m.remove(el)
	}
	if ttl <= 0 {
		return nil
	}
	e.expires = m.now().Add(ttl)
	m.items[key] = m.order.PushFront(e)
	m.used += e.size()
	for m.used > m.max {
		m.remove(m.order.Back())
	}
	return nil
}

func (m *Memory) remove(el *list.Element) {
	e := m.order.Remove(el).(*memoryEntry)
	delete(m.items, e.key)
	m.used -= e.size()
}

// Len is the number of entries held, expired ones not yet dropped included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

// Bytes is what the entries held count against the budget.
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Close implements Store; the entries are dropped.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.order.Init()
	clear(m.items)
	m.used = 0
	return nil
}

var _ Store = (*Memory)(nil)
