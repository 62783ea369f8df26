// Package cleanup owns the cleanup bot. Its eyes: scans of Iceberg tables (per-shard walks of a
// table location with recorded coverage, leases so replicas never walk one shard at once,
// confirmation of unreferenced files across two consecutive complete walks, dangling-reference
// checks by key, reports with request counts and cost), which delete nothing and write no table
// metadata. Its hands: proposals with evidence that people approve or reject, re-evaluated and
// withdrawn by the bot when the evidence changes, each change enqueued for the asset's owners in
// the transactional outbox (package notify delivers it), and an executor that deletes metadata
// before data, journaled so a crash resumes where it stopped.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"entgo.io/ent/dialect"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/warehouse"
)

// Defaults.
const (
	DefaultAgeThreshold = 72 * time.Hour
	// MinAgeThreshold is the lowest threshold allowed without an explicit override.
	MinAgeThreshold     = 24 * time.Hour
	DefaultPageSize     = 1000
	DefaultRecheckDelay = time.Minute
	DefaultLeaseTTL     = 2 * time.Minute
	// DefaultMinGap is how far apart two confirming walks of a shard must be.
	DefaultMinGap = time.Hour
	// DefaultListRate and DefaultHeadRate pace storage requests (per second) so a scan or an
	// execution never runs at full speed against the store serving live traffic: S3 allows
	// 3,500 writes and 5,500 reads per second per prefix, and these stay two orders of
	// magnitude below, which still lists 1,000,000 keys (50 pages a second) in about 20 s of
	// LIST time and stats 100 files a second.
	DefaultListRate = 50.0
	DefaultHeadRate = 100.0
)

// Prices are what storage requests and bytes cost, for the report's estimates. The defaults
// are Amazon S3 Standard list prices (us-east-1): LIST $0.005 and GET/HEAD $0.0004 per 1,000
// requests, $0.023 per GB-month.
type Prices struct {
	ListPer1000    float64 `json:"list_per_1000"`
	GetPer1000     float64 `json:"get_per_1000"`
	StorageGBMonth float64 `json:"storage_gb_month"`
}

// DefaultPrices are S3 Standard's.
var DefaultPrices = Prices{ListPer1000: 0.005, GetPer1000: 0.0004, StorageGBMonth: 0.023}

// Service runs scans and answers what they found.
type Service struct {
	db       *ent.Client
	tables   *tables.Service
	served   *warehouse.Service // the served warehouses' record (WithWarehouse); nil reads no inventory
	cat      *catalog.Catalog
	now      func() time.Time
	log      *slog.Logger
	sqlite   bool
	holder   string
	prices   Prices
	pageSize int
	listRate float64 // LIST requests per second; 0 unlimited
	statRate float64 // HEAD requests per second; 0 unlimited
	statPar  int
	walkPar  int // shards walked at once in one scan
	// lists and heads pace storage requests for the whole Service (so per replica): every
	// scan, shard and execution shares them. nil: unlimited.
	lists, heads *rate.Limiter
	wrapIO       func(icebergio.ListableIO) icebergio.ListableIO
	hook         func(shard string)
	leaseTTL     time.Duration

	usage      *usage.Service
	downstream usage.Downstream
	versions   VersionKeeps // nil: snapshot expiry goes by age and count only
	policy     Policy
	fault      func(point string) error
	window     Window
	auto       *AutoCadence  // nil: the default cadence
	stopWindow time.Duration // an approval waits this long before execution (WithStopWindow)
	migrations MigrationGate
	strays     *strays    // each known table's references outside its own location (references.go)
	purging    sync.Mutex // one purge-proposal pass at a time in this process (proposal_purge.go)
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithPrices sets the prices the reports estimate costs with.
func WithPrices(p Prices) Option { return func(s *Service) { s.prices = p } }

// WithPacing sets the listing page size, the LIST and HEAD request rates (per second, 0 for
// unlimited) and how many HEAD requests run at once.
func WithPacing(pageSize int, listRate, statRate float64, parallel int) Option {
	return func(s *Service) {
		s.pageSize, s.listRate, s.statRate, s.statPar = pageSize, listRate, statRate, parallel
	}
}

// WithShardParallel sets how many shards of one scan are walked at once (DefaultShardParallel);
// they share the LIST rate set by WithPacing.
func WithShardParallel(n int) Option { return func(s *Service) { s.walkPar = n } }

// DefaultShardParallel is how many shards one scan walks at once unless set.
const DefaultShardParallel = 4

// WithListingWrapper wraps the storage listing (fault injection in tests).
func WithListingWrapper(w func(icebergio.ListableIO) icebergio.ListableIO) Option {
	return func(s *Service) { s.wrapIO = w }
}

// WithShardHook is called after each shard walk (tests commit mid-walk through it).
func WithShardHook(h func(shard string)) Option { return func(s *Service) { s.hook = h } }

// WithHolder names this worker in leases (default host name and a random suffix).
func WithHolder(h string) Option { return func(s *Service) { s.holder = h } }

// New returns a Service.
// The store says which database it is (SQLite has no row locks; its writes are serialised).
func New(store *storage.DB, cat *catalog.Catalog, tbls *tables.Service, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("cleanup: no database")
	}
	if cat == nil {
		return nil, errors.New("cleanup: no catalog")
	}
	if tbls == nil {
		return nil, errors.New("cleanup: no tables service")
	}
	host, _ := os.Hostname()
	s := &Service{db: store.Client, sqlite: store.Dialect == dialect.SQLite, tables: tbls, cat: cat, now: time.Now, log: slog.New(slog.DiscardHandler),
		holder: fmt.Sprintf("%s-%s", host, uuid.NewString()[:8]), prices: DefaultPrices, pageSize: DefaultPageSize,
		statPar: 8, walkPar: DefaultShardParallel, leaseTTL: DefaultLeaseTTL, policy: DefaultPolicy, strays: newStrays()}
	for _, o := range opts {
		o(s)
	}
	if s.pageSize <= 0 {
		s.pageSize = DefaultPageSize
	}
	if s.statPar <= 0 {
		s.statPar = 1
	}
	if s.walkPar <= 0 {
		s.walkPar = 1
	}
	if s.listRate > 0 {
		s.lists = rate.NewLimiter(rate.Limit(s.listRate), 1)
	}
	if s.statRate > 0 {
		s.heads = rate.NewLimiter(rate.Limit(s.statRate), 1)
	}
	return s, nil
}

// wait takes a request from a limiter (nil: unlimited).
func (s *Service) wait(ctx context.Context, l *rate.Limiter) error {
	if l == nil {
		return nil
	}
	return l.Wait(ctx)
}

// stat looks a file up by key: a HEAD on object stores (their IO has Stat), else open and stat.
func stat(io icebergio.IO, p string) (fs.FileInfo, error) {
	if st, ok := io.(interface {
		Stat(string) (fs.FileInfo, error)
	}); ok {
		return st.Stat(p)
	}
	f, err := io.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

func (s *Service) pacing() Pacing {
	return Pacing{ListPerSecond: s.listRate, HeadPerSecond: s.statRate, PageSize: s.pageSize, HeadParallel: s.statPar, ShardParallel: s.walkPar}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func (s *Service) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
