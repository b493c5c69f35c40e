package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// appendDirect appends one record atomically. XADD with an explicit ID
// at or below the stream's top fails, which is the guard against writing
// a seq twice (for instance when the generator was only slow, not dead).
//
// KEYS: stream, meta. ARGV: id, type, data, maxlen, seq, finished (0|1), ttl ms.
var appendDirect = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('NOTFOUND stream')
end
if redis.call('HGET', KEYS[2], 'finished') then
  return redis.error_reply('CONFLICT stream finished')
end
local r = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], ARGV[1], 'type', ARGV[2], 'data', ARGV[3])
if type(r) == 'table' and r.err then
  if string.find(r.err, 'equal or smaller', 1, true) then
    return redis.error_reply('CONFLICT seq taken')
  end
  return r
end
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[2], 'last', ARGV[5], 'finished', '1')
else
  redis.call('HSET', KEYS[2], 'last', ARGV[5])
end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
return 1
`)

// AppendDirect writes rec synchronously, bypassing the queue. Another
// replica uses it to append the terminal events of a stream whose
// generator died. It fails with ErrConflict when a record with that seq
// (or a later one) exists or the stream finished, and with
// stream.ErrNotFound when Redis has no such stream. A stream.finished
// record also finishes the stream (finished_ttl).
func (s *Store) AppendDirect(ctx context.Context, id string, rec stream.Record) error {
	if rec.Seq <= 0 {
		return fmt.Errorf("redis stream store: append direct %s: seq %d", id, rec.Seq)
	}
	finished, ttl := "0", s.cfg.LiveTTL
	if rec.Type == string(eventbus.TypeStreamFinished) {
		finished, ttl = "1", s.cfg.FinishedTTL
	}
	err := appendDirect.Run(ctx, s.client, []string{s.streamKey(id), s.metaKey(id)},
		entryID(rec.Seq, 0), rec.Type, rec.Data, s.maxEvents, rec.Seq, finished, ttl.Milliseconds()).Err()
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "NOTFOUND"):
		return stream.ErrNotFound
	case strings.Contains(err.Error(), "CONFLICT"):
		return fmt.Errorf("stream %s seq %d: %w", id, rec.Seq, ErrConflict)
	default:
		return fmt.Errorf("redis stream store: append direct %s: %w: %w", id, stream.ErrUnavailable, err)
	}
}

// LastSeq is the highest seq Redis holds for stream id (0 when it has no
// event yet): the next AppendDirect uses LastSeq+1.
func (s *Store) LastSeq(ctx context.Context, id string) (int64, error) {
	var (
		exists *redis.IntCmd
		top    *redis.XMessageSliceCmd
	)
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, s.metaKey(id))
		top = p.XRevRangeN(ctx, s.streamKey(id), "+", "-", 1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("redis stream store: last seq %s: %w: %w", id, stream.ErrUnavailable, err)
	}
	if exists.Val() == 0 {
		return 0, stream.ErrNotFound
	}
	if msgs := top.Val(); len(msgs) > 0 {
		// Markers carry the seq of the event they follow.
		seq, _, _ := parseID(msgs[0].ID)
		return seq, nil
	}
	return 0, nil
}

// markBroken flags a stream broken and adds the broken marker after its
// top entry, waking tailing readers (who then resync).
//
// KEYS: stream, meta. ARGV: ttl ms.
var markBroken = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
redis.call('HSET', KEYS[2], 'broken', '1')
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local seq = 0
if #top > 0 then
  seq = tonumber(string.match(top[1][1], '^(%d+)'))
end
redis.pcall('XADD', KEYS[1], seq .. '-2', 'ctl', 'broken')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// MarkBroken declares stream id incomplete in Redis: readers resuming or
// tailing it from Redis get stream.ErrExpired and reload the saved message.
// Another replica uses it for a stream whose generator finished (and
// saved its answer) while its events could not reach Redis.
func (s *Store) MarkBroken(ctx context.Context, id string) error {
	err := markBroken.Run(ctx, s.client, []string{s.streamKey(id), s.metaKey(id)}, s.cfg.FinishedTTL.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("redis stream store: mark %s broken: %w: %w", id, stream.ErrUnavailable, err)
	}
	return nil
}
