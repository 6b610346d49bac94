package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// dbProxy stands between the bot and PostgreSQL: cut, it drops every
// connection and refuses new ones, as a database host that went away.
type dbProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
}

func newDBProxy(t *testing.T, target string) *dbProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dbProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = ln.Close(); p.cut(true) })
	go p.serve()
	return p
}

func (p *dbProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *dbProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// cut takes the database away (down) or brings it back.
func (p *dbProxy) cut(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// throughProxy is dsn with its host and port replaced by the proxy's.
func throughProxy(t *testing.T, dsn string) (proxied, target string) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	target = u.Host
	if !strings.Contains(target, ":") {
		target += ":5432"
	}
	return u.Scheme + "://" + u.User.String() + "@%s" + u.Path + "?" + u.RawQuery, target
}

// The store is down for 30 s while 100 Discord DMs arrive (ten users, ten
// messages each): the gateway never delivers them again, so they wait in
// the inbound spool, and once the store is back each is stored once, in
// order per conversation, and answered once.
func TestDMsDuringAStoreOutageAreAnsweredOnceAfterwards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dsn := storetest.PostgresDSN(t)
	format, target := throughProxy(t, dsn)
	proxy := newDBProxy(t, target)
	proxied := fmt.Sprintf(format, proxy.ln.Addr().String())

	// The model answers each turn with the user messages it sees for the
	// first time: those are the ones the turn answers. A turn that sees
	// nothing new would be a message answered twice.
	var mu sync.Mutex
	answered := map[string]int{}
	emptyTurns := 0
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		mu.Lock()
		defer mu.Unlock()
		var fresh []string
		for _, m := range r.Messages() {
			if m.Role == "user" && strings.HasPrefix(m.Content, "user ") && answered[m.Content] == 0 {
				fresh = append(fresh, m.Content)
			}
		}
		for _, f := range fresh {
			answered[f]++
		}
		if len(fresh) == 0 {
			emptyTurns++
		}
		return llmtest.Text("got " + strings.Join(fresh, " / "))
	})
	fake := discordtest.NewServer(t)
	cfg := fmt.Sprintf(`adapters:
  web: {enabled: false}
  discord:
    token: "%s"
    api_url: "%s"
runs:
  debounce: 0s
plugins:
  memory: {enabled: false}
`, fake.Token(), fake.URL())
	r := b.start(t, b.writeConfigFor(t, "postgres", proxied, cfg))
	fake.WaitReady(t, waitFor)
	t.Cleanup(func() {
		if t.Failed() {
			_ = os.WriteFile("/tmp/outage.log", []byte(r.stderr.String()), 0o644)
			for _, l := range strings.Split(r.stderr.String(), "\n") {
				if strings.Contains(l, "spool") || strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
					t.Log(l)
				}
			}
		}
	})

	const users, each = 10, 10
	proxy.cut(true)
	outage := time.Now()
	channels := make([]string, users)
	for i := range each {
		for u := range users {
			user := discordtest.User{ID: fmt.Sprintf("3100000000000%05d", u), Username: fmt.Sprintf("user%d", u)}
			channels[u], _ = fake.SendDM(user, fmt.Sprintf("user %d message %d", u, i))
		}
	}
	require.Eventually(t, func() bool {
		return strings.Contains(r.stderr.String(), "keeping them in the spool until it is back")
	}, waitFor, 10*time.Millisecond, "the spool never said it took over")
	// The store stays down for 30 s in all; nothing is answered meanwhile.
	time.Sleep(time.Until(outage.Add(30 * time.Second)))
	for _, ch := range channels {
		require.Empty(t, fake.Sent(ch), "nothing can be answered while the store is down")
	}
	proxy.cut(false)

	for u, ch := range channels {
		want := fmt.Sprintf("user %d message %d", u, each-1)
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return answered[want] > 0
		}, time.Minute, 20*time.Millisecond, "user %d's last message was never answered", u)
		_ = ch
	}
	r.stop(t)

	mu.Lock()
	for u := range users {
		for i := range each {
			text := fmt.Sprintf("user %d message %d", u, i)
			require.Equal(t, 1, answered[text], "%q reached the model %d times", text, answered[text])
		}
	}
	require.Zero(t, emptyTurns, "a turn answered nothing new: a message answered twice")
	mu.Unlock()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "postgres", DSN: dsn})
	require.NoError(t, err)
	defer st.Close()
	for u, ch := range channels {
		conv, err := st.ConversationByThread(ctx, discord.Platform, ch)
		require.NoError(t, err)
		msgs, err := st.Messages(ctx, conv.ID)
		require.NoError(t, err)
		var said []string
		replies := 0
		for _, m := range msgs {
			switch m.Role {
			case core.RoleUser:
				said = append(said, m.Content)
			case core.RoleAssistant:
				replies++
				require.Equal(t, core.DeliverySent, m.Delivery)
			}
		}
		want := make([]string, each)
		for i := range each {
			want[i] = fmt.Sprintf("user %d message %d", u, i)
		}
		require.Equal(t, want, said, "stored once each, in the order sent")
		require.Len(t, fake.Sent(ch), replies, "every stored reply reached Discord once")
	}
}
