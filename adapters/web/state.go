package web

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleybot/parley/core"
)

// state is what the adapter's parts share: the config, the logger and
// clock, the hub of open event streams and whether the adapter runs.
type state struct {
	// cfg is the decoded config (the Adapter's exported fields).
	cfg *Adapter

	log     *slog.Logger
	clock   core.Clock
	botName string
	// idPrefix makes platform message ids unique across restarts, so a
	// page that de-duplicates by id never mistakes a new reply for an old
	// one from the history.
	idPrefix string
	seq      atomic.Uint64
	// uploaded counts the bytes under Uploads.Dir, read once at the first
	// upload (uploadsOnce), so that MaxTotalBytes bounds the disk a
	// public page may fill.
	uploadsOnce  sync.Once
	uploaded     atomic.Int64
	pingEvery    time.Duration
	writeTimeout time.Duration
	hub          *hub
	// files are the files sent, for the pages to load (files.go).
	files *shelf

	// guardsOnce builds guards from the decoded config on first use.
	guardsOnce sync.Once
	guardSet   *guards

	mu      sync.Mutex
	handler core.Host
	started bool
	stopped bool
}

// guards returns the limits and origin checks, built from the config the
// first time a request needs them (after decoding and Validate).
func (st *state) guards() *guards {
	st.guardsOnce.Do(func() { st.guardSet = newGuards(st.cfg.Limits, st.cfg.AllowedOrigins) })
	return st.guardSet
}

// nextID returns a fresh platform message id, "w-<instance>-<n>".
func (st *state) nextID() string {
	return "w-" + st.idPrefix + "-" + strconv.FormatUint(st.seq.Add(1), 10)
}

func (st *state) isStopped() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stopped
}

// inboundHandler returns the host, or nil when not accepting messages.
func (st *state) inboundHandler() core.Host {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stopped {
		return nil
	}
	return st.handler
}
