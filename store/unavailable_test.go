package store_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/internal/diskfault/diskfaulttest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// A full disk: the first insert that fails says the store cannot take
// writes (core.ErrStoreUnavailable, with where and why), and /healthz
// fails with it at once, though the write probe passed a moment before
// and its result is kept for 10 s. It passes again once the disk has room
// and a probe interval has gone by without a failed write.
func TestAFailedWriteFailsHealthAtOnce(t *testing.T) {
	t.Parallel()
	disk := diskfaulttest.New(t, "8m")
	file := filepath.Join(disk.Dir, "parley.db")
	clock := coretest.NewClock(probeT0)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: file, Clock: clock, Disk: disk.Fault})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(ctx))
	h := store.NewHealthCheck(st, 10*time.Second)
	require.NoError(t, h.Check(ctx))

	disk.Fill(t)
	text := strings.Repeat("a message that no longer fits ", 2000)
	var failed error
	for i := 0; i < 200 && failed == nil; i++ {
		_, failed = st.RecordInbound(ctx, core.InboundRecord{Platform: "web", ChannelThreadID: fmt.Sprint("t", i),
			ChannelUserID: "u", Text: text, Now: clock.Now(), PlanRun: true})
	}
	require.Error(t, failed, "200 inserts of 60 KB each fitted on a full 8 MB disk")
	require.ErrorIs(t, failed, core.ErrStoreUnavailable)
	require.Contains(t, failed.Error(), "sqlite "+file+": the disk holding "+disk.Dir+" is full")

	err = h.Check(ctx)
	require.Error(t, err, "/healthz passed after an insert failed on a full disk")
	require.ErrorIs(t, err, core.ErrStoreUnavailable)
	require.Contains(t, err.Error(), "the store cannot write: sqlite "+file+": the disk holding "+disk.Dir+" is full")

	disk.Free(t)
	clock.Advance(5 * time.Second)
	require.Error(t, h.Check(ctx), "failing for a probe interval after the last failed write")
	clock.Advance(5 * time.Second)
	require.NoError(t, h.Check(ctx))
	_, err = st.RecordInbound(ctx, core.InboundRecord{Platform: "web", ChannelThreadID: "after", ChannelUserID: "u",
		Text: text, Now: clock.Now(), PlanRun: true})
	require.NoError(t, err)
}

// PostgreSQL that takes no writes (a read-only server) and PostgreSQL
// gone (its connections cut, new ones refused) are both a store that
// cannot take writes, not a bad message.
func TestPostgresThatCannotWriteIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.PostgresDSN(t)
	require.NoError(t, storetest.OpenPostgresAt(t, dsn).Migrate(ctx))
	in := core.InboundRecord{Platform: "web", ChannelThreadID: "pg", ChannelUserID: "u", Text: "hello", Now: probeT0, PlanRun: true}

	ro := storetest.OpenPostgresAt(t, dsn+"&default_transaction_read_only=on")
	_, err := ro.RecordInbound(ctx, in)
	require.ErrorIs(t, err, core.ErrStoreUnavailable)
	require.Contains(t, err.Error(), "the server takes no writes")
	require.ErrorIs(t, store.NewHealthCheck(ro, 0).Check(ctx), core.ErrStoreUnavailable)

	proxy := newCutProxy(t, dsn)
	gone := storetest.OpenPostgresAt(t, proxy.dsn)
	_, err = gone.RecordInbound(ctx, in)
	require.NoError(t, err)
	proxy.cut()
	in.PlatformMessageID, in.Text = "2", "still there?"
	_, err = gone.RecordInbound(ctx, in)
	require.ErrorIs(t, err, core.ErrStoreUnavailable)
}

// cutProxy forwards to PostgreSQL until cut, then drops every connection
// and refuses new ones, as a database host that went away.
type cutProxy struct {
	dsn   string
	ln    net.Listener
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func newCutProxy(t *testing.T, dsn string) *cutProxy {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u.Host = ln.Addr().String()
	p := &cutProxy{dsn: u.String(), ln: ln}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			p.mu.Lock()
			if err != nil || p.down {
				p.mu.Unlock()
				_ = c.Close()
				if up != nil {
					_ = up.Close()
				}
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}
