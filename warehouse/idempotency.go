package warehouse

// Idempotency keys of the served catalog, claimed before anything is staged.
//
// A request with an Idempotency-Key first inserts a claim: one row per (warehouse, key) under a
// unique index, holding a fingerprint of the request (method, path, body, principal). Only the
// claim's holder stages and commits. The claim is marked in the same transaction that records
// the request's commit rows, so the rows and the mark appear together; a request that ends
// before recording anything (a 400, a missing table) releases its claim, and a retry runs
// again with the same result. A duplicate that arrives meanwhile waits for the holder's outcome
// and answers it; one that outwaits the holder answers "unknown, retry later" (never a second
// application). A key reused for another request answers 422 and does nothing. A claim older
// than the key lifetime is forgotten: the key is new again.

import (
	"context"
	"fmt"
	"maps"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/ent/idempotencykey"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/tables"
)

// KeyLifetime is how long an Idempotency-Key of the served catalog is honoured.
const KeyLifetime = 30 * time.Minute

// keyWait is how long a duplicate request waits for the first one's outcome.
const keyWait = 15 * time.Second

// keyStale is how long a claim may stay unrecorded before a retry takes it over: the holder
// stopped (a crash) before it recorded anything, so nothing of it can have been applied.
const keyStale = 5 * time.Minute

// MaxKeyBytes bounds an Idempotency-Key.
const MaxKeyBytes = 128

// ErrKeyReused is an Idempotency-Key first used for a different request.
var ErrKeyReused = fmt.Errorf("warehouse: idempotency key reused: %w", catalog.ErrInvalid)

// CheckKey refuses an Idempotency-Key that is not printable UTF-8 or too long.
func CheckKey(key string) error {
	if len(key) > MaxKeyBytes {
		return invalid("Idempotency-Key", "the Idempotency-Key is %d bytes; the limit is %d", len(key), MaxKeyBytes)
	}
	if !utf8.ValidString(key) {
		return invalid("Idempotency-Key", "the Idempotency-Key is not valid UTF-8: use printable characters (a UUID is usual)")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return invalid("Idempotency-Key", "the Idempotency-Key holds a control character: use printable characters (a UUID is usual)")
		}
	}
	return nil
}

// keyClaim is a request's hold on its Idempotency-Key.
type keyClaim struct {
	s      *Service
	id     int
	since  time.Time
	key    string
	marked bool
	// rows are the first request's commit rows when this request is its replay.
	rows []*ent.IcebergCommit
}

func keyOperation(wh string) string { return "iceberg:" + wh }

// claimKey takes the request's key, or returns the earlier request's rows to replay. A nil
// claim means the request carries no key.
func (s *Service) claimKey(ctx context.Context, wh string, opt CommitOptions) (*keyClaim, error) {
	if opt.IdempotencyKey == "" {
		return nil, nil
	}
	if err := CheckKey(opt.IdempotencyKey); err != nil {
		return nil, err
	}
	op := keyOperation(wh)
	deadline := time.Now().Add(keyWait)
	for pause := 20 * time.Millisecond; ; pause = min(pause*2, 250*time.Millisecond) {
		now := s.clock()
		row, err := s.db.IdempotencyKey.Create().SetOperation(op).SetKey(opt.IdempotencyKey).SetRequestHash(opt.RequestHash).
			SetAssetID(uuid.Nil).SetCreatedAt(now).Save(ctx)
		if err == nil {
			return &keyClaim{s: s, id: row.ID, since: now, key: opt.IdempotencyKey}, nil
		}
		if !ent.IsConstraintError(err) {
			return nil, fmt.Errorf("warehouse: claim the Idempotency-Key: %w", err)
		}
		prior, err := s.db.IdempotencyKey.Query().Where(idempotencykey.Operation(op), idempotencykey.Key(opt.IdempotencyKey)).Only(ctx)
		if ent.IsNotFound(err) {
			continue // released meanwhile: claim it again
		}
		if err != nil {
			return nil, fmt.Errorf("warehouse: read the Idempotency-Key: %w", err)
		}
		if now.Sub(prior.CreatedAt) >= KeyLifetime {
			// Expired: the key is new again.
			if _, err := s.db.IdempotencyKey.Delete().Where(idempotencykey.ID(prior.ID), idempotencykey.CreatedAt(prior.CreatedAt)).Exec(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if prior.RequestHash != opt.RequestHash {
			return nil, serveErr(ErrKeyReused, "Idempotency-Key %q was first used %s ago for a different request (another table, operation, body or token); nothing was done: use a new key for a new request",
				opt.IdempotencyKey, now.Sub(prior.CreatedAt).Round(time.Second))
		}
		if prior.AssetID == uuid.Nil {
			if now.Sub(prior.CreatedAt) >= keyStale {
				n, err := s.db.IdempotencyKey.Update().Where(idempotencykey.ID(prior.ID), idempotencykey.CreatedAt(prior.CreatedAt), idempotencykey.AssetID(uuid.Nil)).
					SetCreatedAt(now).Save(ctx)
				if err != nil {
					return nil, err
				}
				if n == 1 {
					return &keyClaim{s: s, id: prior.ID, since: now, key: opt.IdempotencyKey}, nil
				}
				continue
			}
		} else {
			rows, err := s.db.IcebergCommit.Query().Where(icebergcommit.Warehouse(wh), icebergcommit.IdempotencyKey(opt.IdempotencyKey),
				icebergcommit.StartedAtGTE(prior.CreatedAt)).Order(ent.Asc(icebergcommit.FieldID)).All(ctx)
			if err != nil {
				return nil, err
			}
			settled := len(rows) > 0
			for _, r := range rows {
				settled = settled && r.State != statePending
			}
			if settled {
				return &keyClaim{s: s, key: opt.IdempotencyKey, rows: rows}, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, serveErr(ErrCommitUnknown, "a request with Idempotency-Key %q is still being committed; its outcome is not known yet: retry later with the same key, and do not clean up", opt.IdempotencyKey)
		}
		if err := loop.Sleep(ctx, pause); err != nil {
			return nil, err
		}
	}
}

// replaying reports whether the claim is a replay of an earlier request.
func (c *keyClaim) replaying() bool { return c != nil && c.rows != nil }

// mark records, in tx, that the claim's request recorded its rows; it fails when the claim was
// taken over (the request then records nothing).
func (c *keyClaim) mark(ctx context.Context, tx *ent.Tx, asset uuid.UUID) error {
	if c == nil {
		return nil
	}
	if asset == uuid.Nil {
		asset = uuid.Max
	}
	n, err := tx.IdempotencyKey.Update().Where(idempotencykey.ID(c.id), idempotencykey.CreatedAt(c.since)).SetAssetID(asset).Save(ctx)
	if err != nil {
		return err
	}
	if n == 0 {
		return serveErr(ErrNotCommitted, "Idempotency-Key %q was taken over by a retry while this request was being staged; nothing was committed by this request", c.key)
	}
	return nil
}

// recorded is called once the transaction that marked the claim committed.
func (c *keyClaim) recorded() {
	if c != nil {
		c.marked = true
	}
}

// release gives the key back when the request recorded nothing: a retry runs it again.
func (c *keyClaim) release(ctx context.Context) {
	if c == nil || c.marked || c.rows != nil {
		return
	}
	_, err := c.s.db.IdempotencyKey.Delete().Where(idempotencykey.ID(c.id), idempotencykey.CreatedAt(c.since), idempotencykey.AssetID(uuid.Nil)).
		Exec(context.WithoutCancel(ctx))
	if err != nil {
		c.s.log.Warn("could not release an Idempotency-Key", "key", c.key, "err", err)
	}
}

// replayCommits answers the outcome of the request the rows record (a create, commit or
// register).
func (s *Service) replayCommits(ctx context.Context, w tables.Warehouse, rows []*ent.IcebergCommit) ([]ServedTable, error) {
	out := make([]ServedTable, 0, len(rows))
	for _, c := range rows {
		switch c.State {
		case stateConflict:
			return nil, serveErr(ErrCommitFailed, "%s", c.Reason)
		case stateAbandoned:
			return nil, serveErr(ErrNotCommitted, "%s", c.Reason)
		}
		switch c.Kind {
		case "create", "commit", "register":
		default:
			return nil, serveErr(ErrKeyReused, "Idempotency-Key %q was first used for a %s; use a new key for a new request", c.IdempotencyKey, c.Kind)
		}
		row, err := s.db.IcebergTable.Query().Where(icebergtable.ID(c.AssetID)).Select(tables.RowFields()...).Only(ctx)
		if err != nil {
			return nil, err
		}
		meta, err := s.readMetadata(ctx, w, c.NewLocation)
		if err != nil {
			return nil, err
		}
		ident, err := servedIdent(row)
		if err != nil {
			ident = TableIdent{Name: row.Identifier} // dropped since: named as it was
		}
		out = append(out, ServedTable{AssetID: c.AssetID, Ident: ident, MetadataLocation: c.NewLocation, Metadata: meta, Props: maps.Clone(w.Props)})
	}
	return out, nil
}

// replayedChange answers the outcome of a rename or drop the rows record.
func replayedChange(rows []*ent.IcebergCommit, kind string) error {
	for _, c := range rows {
		if c.Kind != kind || c.State != stateCommitted {
			return serveErr(ErrKeyReused, "Idempotency-Key %q was first used for a %s; use a new key for a new request", c.IdempotencyKey, c.Kind)
		}
	}
	return nil
}
