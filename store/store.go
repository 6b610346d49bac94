package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/diskfault"
)

// Driver names accepted by Options.Driver.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// sqliteParams are appended to every SQLite DSN. WAL lets readers run beside
// the writer; NORMAL sync is durable across application crashes and only
// risks the last transactions on power loss; immediate transactions take the
// write lock at BEGIN so a read-then-write transaction never fails with
// "database is locked" when it tries to upgrade; go-sqlite3's statement cache
// keeps the few hot statements compiled per connection, which does what
// gorm's PrepareStmt would without a second layer of sql.Stmt bookkeeping.
// secure_delete overwrites what any write deletes or replaces (an edited
// message, files sent, merged search segments) with zeros, so a user's
// erasure leaves none of their text in the file's free space: it wrote
// 0.1% more WAL pages over 3,000 turns, 5% more deleting messages 500 at
// a time, 1.4% more deleting conversations, the time within the noise.
const sqliteParams = "_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000" +
	"&_foreign_keys=on&_txlock=immediate&_stmt_cache_size=64&_secure_delete=on"

// Options configures Open.
type Options struct {
	// Driver is "sqlite" or "postgres" (default sqlite).
	Driver string
	// DSN is, for SQLite, a file path or a file: URI, optionally with
	// ?params; for PostgreSQL, a postgres:// URL or a key=value string.
	DSN string
	// Logger receives gorm's SQL trace at debug level (default: discarded).
	Logger *slog.Logger
	// Clock stamps rows whose caller gave no time, such as a message passed
	// to AppendMessage without CreatedAt (default core.SystemClock).
	Clock core.Clock
	// KeptFileBytes bounds the bytes of outbound files kept for sends not
	// yet settled (store.max_file_bytes): 0 is DefaultKeptFileBytes, a
	// negative value keeps none. A message whose files would pass it is
	// sent without them kept (core.FilesNotKeptKey).
	KeptFileBytes int64
	// Disk, for Parley's own tests where no small file system can be
	// mounted and filled: while it is full every write fails as on a
	// full disk (nil in production).
	Disk *diskfault.Disk
}

// Store is core.Store on gorm. Its queries are split by role into types
// that share one set of database handles (dbs) and that Store embeds, so
// a caller that needs one role can be given only it (st.RunQueue), and
// one that needs them all calls them on the Store (st.ClaimRun). A role
// comes from Open's Store; its zero value has no database.
type Store struct {
	*dbs
	RunQueue
	Directory
	MessageLog
	Routing
	JobQueue
	Schedules
	Sessions
	Limits
	Search
	Console
	Schema
}

// dbs is one bot's view of the database: the handles and settings every
// view shares, and the bot whose conversations its queries find. The
// role types share it, with the writing steps that more than one of them
// takes (write, insertMessage, startRecord, settleJob...).
type dbs struct {
	*shared
	// bot is the id of the bot whose conversations this view finds,
	// claims and lists (see ForBot); "" is every bot's (AllBots).
	bot string
}

// shared is what every view of one opened database shares: the pools,
// the SQLite write batcher, the failure tracking and the clock. Views
// hold it by pointer, so none copies a lock.
type shared struct {
	driver string
	q      *queries
	// w runs writes and transactions; r runs plain reads. They are the same
	// pool on PostgreSQL and on an in-memory SQLite database.
	w, r  *gorm.DB
	pools []*sql.DB
	clock core.Clock
	// batch groups SQLite write transactions; nil on PostgreSQL.
	batch *writeBatcher
	// where is Describe of the DSN, file the SQLite file ("" for none)
	// and readOnly whether the DSN asks for read-only (mode=ro), for the
	// messages of explain; never the DSN, which may hold a password.
	where, file string
	readOnly    bool
	// failures is the last write the database could not take, for
	// /healthz (see classify).
	failures *writeFailures
	disk     *diskfault.Disk
	// keptFileBytes bounds message_files (Options.KeptFileBytes).
	keptFileBytes int64
	// closing makes Close once; closeErr is its result.
	closing  sync.Once
	closeErr error
}

// newStore returns the Store, with every role, on d.
func newStore(d *dbs) *Store {
	return &Store{dbs: d, RunQueue: RunQueue{d}, Directory: Directory{d}, MessageLog: MessageLog{d}, Routing: Routing{d},
		JobQueue: JobQueue{d}, Schedules: Schedules{d}, Sessions: Sessions{d},
		Limits: Limits{d}, Search: Search{d}, Console: Console{d}, Schema: Schema{d}}
}

var (
	_ core.Store    = (*Store)(nil)
	_ core.RunStore = (*RunQueue)(nil)
	_ core.JobStore = (*JobQueue)(nil)
)

// Open connects to the database and checks that it answers, and returns
// the DefaultBot's view of it (ForBot gives another bot's). It does not
// migrate: call Migrate.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = core.SystemClock{}
	}
	var (
		s   *Store
		err error
	)
	switch opts.Driver {
	case DriverSQLite, "":
		s, err = openSQLite(ctx, opts)
	case DriverPostgres, "postgresql":
		s, err = openPostgres(ctx, opts)
	default:
		return nil, fmt.Errorf("opening store: unknown driver %q (want sqlite or postgres)", opts.Driver)
	}
	if err != nil {
		return nil, err
	}
	s.clock, s.where, s.disk = opts.Clock, Describe(s.driver, opts.DSN), opts.Disk
	s.keptFileBytes = opts.KeptFileBytes
	if s.keptFileBytes == 0 {
		s.keptFileBytes = DefaultKeptFileBytes
	}
	if s.driver == DriverSQLite {
		s.file, s.readOnly = SQLiteFile(opts.DSN), strings.Contains(opts.DSN, "mode=ro")
	}
	return s, nil
}

func gormConfig(log *slog.Logger) *gorm.Config {
	return &gorm.Config{
		// Every write that needs a transaction opens one explicitly.
		SkipDefaultTransaction: true,
		// Open pings itself, with the caller's context.
		DisableAutomaticPing: true,
		Logger:               newGormLogger(log),
		NowFunc:              func() time.Time { return time.Now().UTC() },
	}
}

func openSQLite(ctx context.Context, opts Options) (*Store, error) {
	if opts.DSN == "" {
		return nil, errors.New("opening sqlite store: empty dsn")
	}
	memory := opts.DSN == ":memory:" || strings.Contains(opts.DSN, "mode=memory")
	w, wdb, err := openSQLitePool(ctx, sqliteDSN(opts.DSN, false), opts.Logger)
	if err != nil {
		return nil, err
	}
	// SQLite has one writer at a time. Queueing writers in database/sql's
	// pool hands the connection over at once, while letting them contend
	// inside SQLite means busy_timeout's sleep-and-retry (naps of up to
	// 100ms) and a throughput collapse. busy_timeout still covers writers of
	// other processes (the CLI beside a running bot).
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	s := newStore(&dbs{shared: &shared{driver: DriverSQLite, q: newQueries(DriverSQLite), w: w, r: w, pools: []*sql.DB{wdb},
		failures: new(writeFailures)}, bot: DefaultBot})
	s.batch = newWriteBatcher(w)
	if memory {
		// Every connection to :memory: is a database of its own: one pool
		// of one connection keeps them all on the same one.
		return s, nil
	}
	// Readers never block each other nor the writer in WAL mode, so reads
	// get their own pool, a few connections per core (they wait on I/O).
	r, rdb, err := openSQLitePool(ctx, sqliteDSN(opts.DSN, true), opts.Logger)
	if err != nil {
		if s.batch != nil {
			s.batch.close()
		}
		_ = wdb.Close()
		return nil, err
	}
	n := max(4, 2*runtime.NumCPU())
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	rdb.SetConnMaxIdleTime(5 * time.Minute)
	s.r = r
	s.pools = append(s.pools, rdb)
	return s, nil
}

func openSQLitePool(ctx context.Context, dsn string, log *slog.Logger) (*gorm.DB, *sql.DB, error) {
	db, err := gorm.Open(sqlite.Open(dsn), gormConfig(log))
	if err != nil {
		return nil, nil, fmt.Errorf("opening sqlite store: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("opening sqlite store: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, nil, fmt.Errorf("opening sqlite store: %w", err)
	}
	return db, sqlDB, nil
}

// sqliteDSN appends Parley's connection parameters to dsn; parameters the
// user already gave win, because go-sqlite3 reads the first value of each.
// readOnly connections refuse writes, so a read that slips into the reader
// pool by mistake fails loudly instead of racing the writer.
func sqliteDSN(dsn string, readOnly bool) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	dsn += sep + sqliteParams
	if readOnly {
		dsn += "&_query_only=1"
	}
	return dsn
}

func openPostgres(ctx context.Context, opts Options) (*Store, error) {
	secret := dsnPassword(opts.DSN)
	fail := func(err error) (*Store, error) {
		return nil, redact(fmt.Errorf("opening postgres store: %w", err), secret)
	}
	if opts.DSN == "" {
		return fail(errors.New("empty dsn"))
	}
	db, err := gorm.Open(postgres.New(postgres.Config{DSN: opts.DSN}), gormConfig(opts.Logger))
	if err != nil {
		return fail(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return fail(err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return fail(err)
	}
	// PostgreSQL runs writers concurrently; the pool bounds how many server
	// backends one process holds. pgx caches prepared statements per
	// connection itself, so gorm's PrepareStmt would only add a layer.
	sqlDB.SetMaxOpenConns(16)
	sqlDB.SetMaxIdleConns(16)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	return newStore(&dbs{shared: &shared{driver: DriverPostgres, q: newQueries(DriverPostgres), w: db, r: db,
		pools: []*sql.DB{sqlDB}, failures: new(writeFailures)}, bot: DefaultBot}), nil
}

// Close closes the connection pools. A second call, or one on another
// view of the same database (ForBot), returns the first's result.
func (s *Store) Close() error {
	s.closing.Do(func() { s.closeErr = s.closeAll() })
	return s.closeErr
}

func (s *shared) closeAll() error {
	if s.batch != nil {
		s.batch.close()
	}
	var errs []error
	for _, p := range s.pools {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing store: %w", err)
	}
	return nil
}

// DB is the gorm handle that writes, for tests and tools that inspect rows.
func (s *Store) DB() *gorm.DB { return s.w }

// Driver is "sqlite" or "postgres".
func (s *Store) Driver() string { return s.driver }

// now is the store's clock in UTC.
func (s *shared) now() time.Time { return s.clock.Now().UTC() }

// Ping checks that the database answers, for /healthz.
func (s *Store) Ping(ctx context.Context) error {
	for _, p := range s.pools {
		if err := p.PingContext(ctx); err != nil {
			return fmt.Errorf("pinging %s store: %w", s.driver, err)
		}
	}
	return nil
}
