package lineage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/internal/loop"
)

// IngestResult says what one event did.
type IngestResult struct {
	EventID   uuid.UUID
	Kind      Kind
	Duplicate bool     // the event was ingested before; nothing changed
	Warnings  []string // facts in the event that were not applied, and why
}

// Ingest parses and stores one event with all its effects in one transaction. A redelivered
// event (same key) changes nothing. Errors wrap catalog.ErrInvalid (final) or
// catalog.ErrUnavailable (retry later).
func (s *Service) Ingest(ctx context.Context, raw []byte) (IngestResult, error) {
	ev, err := ParseEvent(raw)
	if err != nil {
		return IngestResult{}, err
	}
	return s.IngestEvent(ctx, ev)
}

// IngestEvent stores a parsed event (see Ingest).
func (s *Service) IngestEvent(ctx context.Context, ev Event) (IngestResult, error) {
	if err := s.checkTime(ev); err != nil {
		return IngestResult{}, err
	}
	res, err := s.applyEvents(ctx, []Event{ev})
	if err != nil {
		return IngestResult{}, err
	}
	return res[0], nil
}

// BatchItem is the outcome of one event of a batch: a result, or why it was refused.
type BatchItem struct {
	Result IngestResult
	Err    error
}

// IngestBatch parses every event and stores the valid ones, with all their effects, in order,
// in transactions of at most txEvents (PostgreSQL: txEventsPG) events. An invalid event is refused on its own (its item's Err wraps
// catalog.ErrInvalid) and does not stop the others. A failure to store fails the whole batch
// (returned error); retrying it is safe, since stored events are recognised.
func (s *Service) IngestBatch(ctx context.Context, raws [][]byte) ([]BatchItem, error) {
	items := make([]BatchItem, len(raws))
	var (
		evs []Event
		at  []int
	)
	for i, raw := range raws {
		ev, err := ParseEvent(raw)
		if err == nil {
			err = s.checkTime(ev)
		}
		if err != nil {
			items[i].Err = err
			continue
		}
		evs = append(evs, ev)
		at = append(at, i)
	}
	if len(evs) == 0 {
		return items, nil
	}
	// Stored in transactions of at most txEvents events: on SQLite a transaction holds the only
	// write lock, and a long one makes every other writer wait (then fail) behind it. PostgreSQL
	// writers run side by side, and each transaction costs its dozen statements whatever its size.
	step := txEvents
	if !s.sqlite {
		step = txEventsPG
	}
	for lo := 0; lo < len(evs); lo += step {
		hi := min(lo+step, len(evs))
		res, err := s.applyEvents(ctx, evs[lo:hi])
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			items[at[lo+j]].Result = r
		}
	}
	return items, nil
}

// txEvents is the most events one ingest transaction stores on SQLite, txEventsPG on
// PostgreSQL. 500 (a producer's usual batch in one transaction) against 100: the bench's
// (bench/ingest) PostgreSQL CPU an event fell by about a quarter in both of its cases, lock waits
// on the shared rollup rows included.
const txEvents, txEventsPG = 100, 500

func (s *Service) applyEvents(ctx context.Context, evs []Event) ([]IngestResult, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { <-s.slots }()
	keys := make([]string, len(evs))
	for i, ev := range evs {
		keys[i] = eventKey(ev)
	}
	if err := s.precreate(ctx, evs); err != nil {
		return nil, err
	}
	var (
		res []IngestResult
		b   *batch
	)
	attempt := 0
	err := loop.Retry(ctx, 4, func(n int) time.Duration { return time.Duration(n*n) * 10 * time.Millisecond },
		func(err error) bool {
			s.log.Debug("lineage: ingest raced, retrying", "attempt", attempt, "err", err)
			return raced(err)
		},
		func() error {
			attempt++
			res = make([]IngestResult, len(evs))
			return s.cat.InTx(ctx, func(ctx context.Context, tx *ent.Tx) error {
				b = newBatch(ctx, s, tx)
				if err := b.prefetch(ctx, evs, keys, attempt > 1); err != nil {
					return err
				}
				for i, ev := range evs {
					res[i].Kind = ev.Kind
					a := &applier{batch: b, ev: ev, res: &res[i]}
					if err := a.apply(ctx, keys[i]); err != nil {
						return err
					}
				}
				return b.flush(ctx)
			})
		})
	if raced(err) {
		// Still contended after the retries: the client's retry (503) will find the winners' rows.
		s.log.Warn("lineage: ingest still racing after retries; refused for retry", "events", len(evs), "err", err)
		return nil, &catalog.Error{Kind: catalog.ErrUnavailable, Message: "lineage: concurrent writers contend for the same rows; retry shortly"}
	}
	if err != nil {
		return nil, err
	}
	s.graph.add(b.added)
	s.graph.markDocumented(b.documented)
	held := make([]nameKey, 0, len(b.cache))
	for k := range b.cache {
		held = append(held, k)
	}
	s.seen.add(held...)
	if err := s.graph.refresh(ctx, b.touched, nil); err != nil {
		// Committed already; the next Sync picks the change up from the audit log.
		s.log.Warn("lineage: refresh graph names", "err", err)
	}
	return res, nil
}

func (s *Service) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-t.C:
		return &catalog.Error{Kind: catalog.ErrUnavailable, Message: "lineage: too many events are being ingested at once; retry shortly"}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// eventKey is the idempotency key: for run events the run ID, event type, event time and job
// (the OpenLineage identity of an event); for dataset and job events, which have no run, the
// whole event.
func eventKey(ev Event) string {
	h := sha256.New()
	switch ev.Kind {
	case KindRun:
		fmt.Fprintf(h, "run\x00%s\x00%s\x00%s\x00%s\x00%s", ev.RunID, ev.EventType, ev.EventTime.Format(time.RFC3339Nano), ev.Job.Namespace, ev.Job.Name)
	default:
		fmt.Fprintf(h, "%s\x00%s\x00", ev.Kind, ev.EventTime.Format(time.RFC3339Nano))
		h.Write(ev.Raw)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// precreate registers the assets for names a batch uses that no asset holds or ever held and
// that no symlink binds (and that carry no symlink or lifecycle change, which need the
// in-transaction rules), in one statement of their own before the batch's transaction.
// Creating them inside the batch's long transaction would make concurrent batches that share new
// names wait on each other and fail on the unique index; an asset created here for a batch that
// then fails is the asset its retry will use. Names this service offered or resolved before are
// not offered again (seenNames): in a steady flow of events nearly all are.
func (s *Service) precreate(ctx context.Context, evs []Event) error {
	seen := map[nameKey]bool{}
	var create []catalog.CreateInput
	var offered []nameKey
	add := func(kind catalog.Kind, ns, name string) {
		k := nameKey{catalog.SpaceOf(kind), ns, name}
		if seen[k] || s.seen.has(k) {
			return
		}
		seen[k] = true
		offered = append(offered, k)
		if _, held := s.graph.Named(k.space, ns, name); held {
			return // CreateUnseen would skip it (see unheld)
		}
		create = append(create, catalog.CreateInput{Kind: kind, Namespace: ns, Name: name})
	}
	addDatasets := func(ds []Dataset) {
		for i := range ds {
			d := &ds[i]
			if _, ok := d.Facets["symlinks"]; ok {
				continue
			}
			if _, ok := d.Facets["lifecycleStateChange"]; ok {
				continue
			}
			if _, ok := d.Facets["catalog"]; ok {
				continue // may name a synced Iceberg table
			}
			add(datasetKind(d.Facets), d.Namespace, d.Name)
		}
	}
	for _, ev := range evs {
		if ev.Job != nil {
			add(catalog.KindJob, ev.Job.Namespace, ev.Job.Name)
		}
		addDatasets(ev.Inputs)
		addDatasets(ev.Outputs)
	}
	// The graph knows every current name (as of its last Sync) once loaded; before, the database
	// is asked.
	if !s.sqlite && len(create) > 0 && !s.graph.ready.Load() {
		var err error
		if create, err = s.unheld(ctx, create); err != nil {
			return err
		}
	}
	// CreateUnseen skips names a concurrent creator took meanwhile, so no asset is duplicated. As
	// many names a call as it takes: on PostgreSQL a call is one statement, and each costs its
	// planning (a few milliseconds for that one) whatever its size.
	for part := range slices.Chunk(create, catalog.MaxCreateMany) {
		if _, err := s.cat.CreateUnseen(ctx, part); err != nil {
			return err
		}
	}
	s.seen.add(offered...)
	return nil
}

// unheld keeps of ins the names no asset holds now (PostgreSQL). CreateUnseen skips held names
// itself, but only after building and sending every asset's rows (document, audit entry): with
// a server started over an existing catalog, nearly every name of its first batches is held, and
// offering them all cost more than the batch's own writes; one probe of the current-name index a
// name is far cheaper, and the loaded graph's names (Graph.Named) cost none. Either may be stale
// (another replica renamed the asset since): a name not offered is then created by the batch
// itself, in its transaction, as for seenNames.
func (s *Service) unheld(ctx context.Context, ins []catalog.CreateInput) ([]catalog.CreateInput, error) {
	keys := make([]nameKey, len(ins))
	for i, in := range ins {
		keys[i] = nameKey{catalog.SpaceOf(in.Kind), in.Namespace, in.Name}
	}
	held := map[nameKey]bool{}
	// One statement: the names go as arrays, which have no length limit.
	if err := currentNamesPG(ctx, s.db, keys, func(k nameKey, _ uuid.UUID) { held[k] = true }); err != nil {
		return nil, fmt.Errorf("lineage: read names: %w", err)
	}
	out := ins[:0:0]
	for i, in := range ins {
		if !held[keys[i]] {
			out = append(out, in)
		}
	}
	return out, nil
}

// seenNames are names precreate need not offer to CreateUnseen again: names it offered, and
// names batches resolved. CreateUnseen skips a name once any asset held it or a symlink binds
// it, and neither is ever undone, so this only saves the statement; were it undone, the batch
// would create the asset itself, in its transaction.
type seenNames struct {
	mu    sync.Mutex
	names map[nameKey]struct{}
}

// maxSeenNames bounds the memory seenNames takes (about 100 bytes a name); past it, it starts
// over.
const maxSeenNames = 250_000

func (n *seenNames) add(keys ...nameKey) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names == nil || len(n.names)+len(keys) > maxSeenNames {
		n.names = make(map[nameKey]struct{}, len(keys))
	}
	for _, k := range keys {
		n.names[k] = struct{}{}
	}
}

func (n *seenNames) has(k nameKey) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.names[k]
	return ok
}

// errNewerFacet says a concurrent batch stored a newer value of a facet this batch read: the
// batch is retried from its reads (raced).
var errNewerFacet = errors.New("a newer value was stored meanwhile")

// raced reports whether a batch failed on a concurrent batch's writes and is worth retrying.
func raced(err error) bool { return catalog.IsRace(err) || errors.Is(err, errNewerFacet) }

// MaxAhead is how far in the future of the server's clock an eventTime may be (engine clocks
// drift); a later one is refused: a DROP dated years ahead would otherwise delete a dataset for
// good, since later real events would be older than it.
const MaxAhead = 5 * time.Minute

// earliest is the oldest eventTime accepted: OpenLineage did not exist before, and year 0001
// is a zero value sent by mistake.
var earliest = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Service) checkTime(ev Event) error {
	switch now := s.now(); {
	case ev.EventTime.After(now.Add(MaxAhead)):
		return invalid("eventTime %s is more than %s ahead of the server's clock (%s): send the time the event happened", ev.EventTime.UTC().Format(time.RFC3339), MaxAhead, now.UTC().Format(time.RFC3339))
	case ev.EventTime.Before(earliest):
		return invalid("eventTime %s is before 1970: send the time the event happened", ev.EventTime.UTC().Format(time.RFC3339))
	}
	return nil
}
