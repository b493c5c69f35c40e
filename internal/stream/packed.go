package stream

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"sync"
)

// A memory stream keeps its records packed: one byte log holding their
// entries back to back, and an offset per record. Almost every record is
// an event encoded by eventbus.AppendJSON, whose data begins with
//
//	{"seq":N,"type":"T","stream_id":"ID","ts":TS
//
// The seq follows from the record's place in the log, the type is a
// shared name, the stream id is the same in every record and the time
// differs from the stream's first by a few bytes: an entry keeps the type
// as a number, the time as that difference and the rest of the data as it
// is, and Fetch writes the prefix back. A streamed token is ~25 bytes of
// log instead of ~200 as a Record of its own (Record, data and allocation
// rounding), and a live stream holds one log instead of an allocation per
// event. Data of any other shape is kept as it came: as bytes in the log
// when small, as the caller's slice when large (no copy of big records).
//
// An entry is a uvarint header h: h&3 is its kind, h>>2 its type (0: the
// type follows, as a uvarint length and its bytes; k: the store's k-th
// type name). Then, by kind:
//
//	packedEvent:  zigzag varint ts - baseTS, uvarint length, rest of the data
//	packedRaw:    uvarint length, data
//	packedShared: uvarint n; the data is the stream's n-th large slice
const (
	packedEvent  = 0
	packedRaw    = 1
	packedShared = 2
)

// maxStreamBytes bounds MaxBytes: offsets are 32 bits, and a log holds
// at most about twice what it retains before it is compacted.
const maxStreamBytes = 1 << 30

// largeRecord is the size from which a record's data is kept as the
// caller's slice rather than copied into the log.
const largeRecord = 1 << 10

// typeNames interns record types: a packed entry names its type by number.
// Types are a small set (the event vocabulary and plugins' own); past
// maxTypeNames, a type is written into each entry instead.
type typeNames struct {
	mu    sync.RWMutex
	index map[string]uint64 // name → its number (1-based)
	names []string          // names[k-1] is type k
}

const maxTypeNames = 1024

// ref returns type's number, or 0 if it must be written inline.
func (t *typeNames) ref(name string) uint64 {
	t.mu.RLock()
	k, full := t.index[name], len(t.names) >= maxTypeNames
	t.mu.RUnlock()
	if k != 0 || full {
		return k
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if k = t.index[name]; k != 0 || len(t.names) >= maxTypeNames {
		return k
	}
	if t.index == nil {
		t.index = make(map[string]uint64)
	}
	t.names = append(t.names, name)
	k = uint64(len(t.names))
	t.index[name] = k
	return k
}

func (t *typeNames) name(k uint64) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.names[k-1]
}

// splitEvent finds in data the prefix eventbus.AppendJSON writes, for seq
// and typ, and returns the quoted stream id, the time and the rest; ok is
// false when data has another shape (it is then stored as it is). Only a
// prefix that writeEvent reproduces byte for byte is accepted.
func splitEvent(data []byte, seq int64, typ string) (qid []byte, ts int64, rest []byte, ok bool) {
	var num [20]byte
	p, ok := bytes.CutPrefix(data, []byte(`{"seq":`))
	if !ok {
		return nil, 0, nil, false
	}
	if p, ok = bytes.CutPrefix(p, strconv.AppendInt(num[:0], seq, 10)); !ok {
		return nil, 0, nil, false
	}
	if p, ok = bytes.CutPrefix(p, []byte(`,"type":"`)); !ok || !plainJSON(typ) {
		return nil, 0, nil, false
	}
	if p, ok = bytes.CutPrefix(p, []byte(typ)); !ok {
		return nil, 0, nil, false
	}
	if p, ok = bytes.CutPrefix(p, []byte(`","stream_id":"`)); !ok {
		return nil, 0, nil, false
	}
	end := bytes.IndexByte(p, '"')
	if end < 0 || bytes.IndexByte(p[:end], '\\') >= 0 {
		return nil, 0, nil, false
	}
	qid = p[:end]
	if p, ok = bytes.CutPrefix(p[end:], []byte(`","ts":`)); !ok {
		return nil, 0, nil, false
	}
	n := 0
	if n < len(p) && p[n] == '-' {
		n++
	}
	for n < len(p) && p[n] >= '0' && p[n] <= '9' {
		n++
	}
	ts, err := strconv.ParseInt(string(p[:n]), 10, 64)
	if err != nil || !bytes.Equal(p[:n], strconv.AppendInt(num[:0], ts, 10)) { // "007" would come back as "7"
		return nil, 0, nil, false
	}
	rest = p[n:]
	if len(rest) == 0 || (rest[0] != ',' && rest[0] != '}') {
		return nil, 0, nil, false
	}
	return qid, ts, rest, true
}

// plainJSON reports whether s is written in a JSON string as it is.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == '"' || b == '\\' || b >= 0x80 {
			return false
		}
	}
	return true
}

// writeEvent writes back what splitEvent took apart.
func writeEvent(dst []byte, seq int64, typ string, qid []byte, ts int64, rest []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","stream_id":"`...)
	dst = append(dst, qid...)
	dst = append(dst, `","ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	return append(dst, rest...)
}

// packedEntry is one entry read back from the log.
type packedEntry struct {
	kind int
	typ  string
	ts   int64  // packedEvent
	data []byte // packedEvent: the rest; otherwise the data
	size int    // bytes of the entry in the log
}

// pack appends rec's entry to st's log and returns its size in the log
// and the bytes it holds besides (a large record's data); the caller
// holds st.mu.
func (st *memStream) pack(types *typeNames, rec Record) (logBytes, sharedBytes int) {
	start := len(st.log)
	st.offs = append(st.offs, uint32(start))
	k := types.ref(rec.Type)
	kind := packedRaw
	qid, ts, rest, ok := splitEvent(rec.Data, rec.Seq, rec.Type)
	if ok && st.qid == nil {
		st.qid, st.baseTS = bytes.Clone(qid), ts
	}
	switch {
	case ok && bytes.Equal(qid, st.qid) && len(rest) < largeRecord:
		kind = packedEvent
	case len(rec.Data) >= largeRecord:
		kind = packedShared
	}
	st.log = binary.AppendUvarint(st.log, k<<2|uint64(kind))
	if k == 0 {
		st.log = binary.AppendUvarint(st.log, uint64(len(rec.Type)))
		st.log = append(st.log, rec.Type...)
	}
	switch kind {
	case packedEvent:
		st.log = binary.AppendVarint(st.log, ts-st.baseTS)
		st.log = binary.AppendUvarint(st.log, uint64(len(rest)))
		st.log = append(st.log, rest...)
	case packedRaw:
		st.log = binary.AppendUvarint(st.log, uint64(len(rec.Data)))
		st.log = append(st.log, rec.Data...)
	case packedShared:
		st.log = binary.AppendUvarint(st.log, uint64(st.sharedBase+len(st.shared)))
		st.shared = append(st.shared, rec.Data)
		sharedBytes = len(rec.Data)
	}
	return len(st.log) - start, sharedBytes
}

// entry reads the i-th record's entry (i indexes st.offs); the caller
// holds st.mu.
func (st *memStream) entry(types *typeNames, i int) packedEntry {
	p := st.log[st.offs[i]:]
	h, n := binary.Uvarint(p)
	e := packedEntry{kind: int(h & 3), size: n}
	if k := h >> 2; k != 0 {
		e.typ = types.name(k)
	} else {
		l, m := binary.Uvarint(p[e.size:])
		e.size += m
		e.typ = string(p[e.size : e.size+int(l)])
		e.size += int(l)
	}
	switch e.kind {
	case packedEvent:
		d, m := binary.Varint(p[e.size:])
		e.ts = st.baseTS + d
		e.size += m
		fallthrough
	case packedRaw:
		l, m := binary.Uvarint(p[e.size:])
		e.size += m
		e.data = p[e.size : e.size+int(l) : e.size+int(l)]
		e.size += int(l)
	case packedShared:
		n, m := binary.Uvarint(p[e.size:])
		e.size += m
		e.data = st.shared[int(n)-st.sharedBase]
	}
	return e
}

// unpack appends the records of entries from i on (seq the first's) to
// buf. Events are written back into one new array for the batch, sized
// from the log (data returned stays immutable: should the array grow,
// records already cut from it keep the old one); other data is shared
// with the log or with the caller that appended it. The caller holds
// st.mu.
func (st *memStream) unpack(types *typeNames, buf []Record, i int, seq int64) []Record {
	n := len(st.offs) - i
	if n <= 0 {
		return buf
	}
	// Each event gets back its prefix: the literals, two numbers, its
	// type and the stream id; its rest is at most its entry.
	out := make([]byte, 0, len(st.log)-int(st.offs[i])+n*(96+len(st.qid)))
	for ; i < len(st.offs); i, seq = i+1, seq+1 {
		e := st.entry(types, i)
		data := e.data
		if e.kind == packedEvent {
			start := len(out)
			out = writeEvent(out, seq, e.typ, st.qid, e.ts, e.data)
			data = out[start:len(out):len(out)]
		}
		buf = append(buf, Record{Seq: seq, Type: e.typ, Data: data})
	}
	return buf
}
