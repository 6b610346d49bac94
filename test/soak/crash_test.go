//go:build linux

package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// crashBundle is one `parley run` on SQLite or PostgreSQL with Telegram
// by webhook (a post answered 200 is a message Parley accepted: Telegram
// does not post it again) and a fake model.
type crashBundle struct {
	tg    *telegramtest.Server
	model *llmtest.Server
	st    *store.Store
	rep   *replica
	dir   string
}

// crashDriver is a store the crash tests run on: its config lines and a
// store.Store on the same database for reading what happened.
type crashDriver struct {
	name string
	open func(t *testing.T, dir string) (cfg string, st *store.Store)
}

func crashDrivers() []crashDriver {
	return []crashDriver{
		{"SQLite", func(t *testing.T, dir string) (string, *store.Store) {
			path := filepath.Join(dir, "parley.db")
			st, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: path})
			require.NoError(t, err)
			require.NoError(t, st.Migrate(context.Background()))
			return fmt.Sprintf("  driver: sqlite\n  dsn: %q\n", path), st
		}},
		{"Postgres", func(t *testing.T, _ string) (string, *store.Store) {
			storetest.NeedPostgres(t)
			dsn := storetest.PostgresDSN(t)
			st, err := store.Open(context.Background(), store.Options{Driver: store.DriverPostgres, DSN: dsn})
			require.NoError(t, err)
			require.NoError(t, st.Migrate(context.Background()))
			return fmt.Sprintf("  driver: postgres\n  dsn: %q\n", dsn), st
		}},
	}
}

// newCrashBundle starts parley on drv with a model that answers through
// respond.
func newCrashBundle(t *testing.T, drv crashDriver, debounce string, respond func(llmtest.Request) llmtest.Response) *crashBundle {
	t.Helper()
	b := &crashBundle{dir: artifactDir(t)}
	b.tg = telegramtest.NewServer(t)
	b.model = llmtest.NewServer(t)
	b.model.Respond(respond)
	storeCfg, st := drv.open(t, b.dir)
	b.st = st
	t.Cleanup(func() { _ = st.Close() })
	cfg := fmt.Sprintf(`store:
%sllm:
  base_url: %s
  api_key: crash-key
  model: crash-model
  timeout: 10s
http:
  listen: 127.0.0.1:0
  api_token: ""
log:
  level: info
runs:
  debounce: %s
  stale_after: 30s
plugins:
  memory: {enabled: false}
  proactive: {enabled: false}
adapters:
  web: {enabled: false}
  telegram:
    token: %q
    api_url: %q
    mode: webhook
    webhook_secret: turns-secret
    format: plain
`, storeCfg, b.model.URL(), debounce, b.tg.Token(), b.tg.URL())
	cfgPath := filepath.Join(b.dir, "parley.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	b.rep = newReplica(0, parleyBinary(t), cfgPath, filepath.Join(b.dir, "parley.log"))
	// Restarted before the killed process is reaped: the new one must
	// count a zombie predecessor gone, not wait runs.stale_after.
	b.rep.lateReap = true
	t.Cleanup(func() {
		b.rep.kill(t)
		b.rep.reapAll()
	})
	b.rep.start(t)
	return b
}

// post delivers a private message from user as Telegram's webhook does:
// posted again until Parley takes it (200), across restarts.
func (b *crashBundle) post(t *testing.T, mu *sync.Mutex, user telegramtest.User, text string) {
	body, err := json.Marshal(b.tg.SendPrivate(user, text))
	require.NoError(t, err)
	for deadline := time.Now().Add(2 * readyTimeout); ; {
		mu.Lock()
		addr := ""
		if b.rep.running() {
			addr = b.rep.addr
		}
		mu.Unlock()
		if postWebhook(addr, body) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("Parley did not take %q within %v", text, 2*readyTimeout)
			return
		}
		time.Sleep(50 * time.Millisecond) // Telegram's own retry, paced
	}
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// The crash of issue 30, through parley run: "first", then "second"
// while the first turn is with the model (queued behind it); the first
// reply goes out; the process is killed while the queued turn is with
// the model, and restarted before the dead one is reaped. "second" is
// answered, once, and "first" is not answered again.
func TestQueuedMessageAnsweredAfterCrash(t *testing.T) {
	for _, drv := range crashDrivers() {
		t.Run(drv.name, func(t *testing.T) {
			firstAtModel := make(chan struct{})
			releaseFirst := make(chan struct{})
			secondAtModel := make(chan struct{}, 8)
			var once sync.Once
			var calls sync.Map // last user message -> calls
			hold := make(chan struct{})
			b := newCrashBundle(t, drv, "0s", func(r llmtest.Request) llmtest.Response {
				last := r.LastUserMessage()
				n, _ := calls.LoadOrStore(last, new(int))
				*n.(*int)++
				switch last {
				case "first":
					once.Do(func() { close(firstAtModel) })
					return llmtest.Text("answer to first").WithHold(releaseFirst)
				case "second":
					secondAtModel <- struct{}{}
					if *n.(*int) == 1 {
						// Held until the kill: the process dies with the
						// queued turn at the model.
						return llmtest.Text("never sent").WithHold(hold)
					}
					return llmtest.Text("answer to second")
				}
				return llmtest.Text("unexpected: " + last)
			})
			t.Cleanup(func() { close(hold) })
			user := telegramtest.User{ID: 7_300_001, FirstName: "Queued"}
			b.tg.StartedBy(user)
			var mu sync.Mutex
			b.post(t, &mu, user, "first")
			select {
			case <-firstAtModel:
			case <-time.After(readyTimeout):
				t.Fatal("the first turn never reached the model")
			}
			b.post(t, &mu, user, "second") // queued behind the running turn
			close(releaseFirst)
			select {
			case <-secondAtModel:
			case <-time.After(readyTimeout):
				t.Fatal("the queued turn never reached the model")
			}
			require.True(t, waitFor(readyTimeout, func() bool { return len(b.tg.AllSent()) >= 1 }), "the first reply never went out")

			mu.Lock()
			b.rep.kill(t)
			b.rep.start(t)
			mu.Unlock()
			require.True(t, waitFor(readyTimeout, func() bool { return len(b.tg.AllSent()) >= 2 }),
				"second was never answered after the restart; log %s", b.rep.logPath)
			b.rep.stop(t)

			var got []string
			for _, m := range b.tg.AllSent() {
				require.Equal(t, user.ID, m.ChatID)
				got = append(got, m.Plain)
			}
			require.Equal(t, []string{"answer to first", "answer to second"}, got)
			require.Equal(t, 1, b.rep.logHas("failed runs left running by a stopped process of this host"),
				"the restarted process fails its zombie predecessor's run at once")
		})
	}
}

// crashAnswer is what the fake model answered once: the user messages in
// its prompt and the chat they belong to.
type crashAnswer struct {
	chat string
	seen []string
}

// Users write to one process that is killed (SIGKILL, restarted before
// it is reaped) at random points of 200 turns, often while a turn queued
// behind another is with the model. Every message Parley accepted is
// answered, and answered once: each answer that reached a chat answers
// at least one message no answer before it had; a reply is repeated on
// Telegram only when a kill caught it in doubt, at most
// scheduler.max_sends_in_doubt a kill.
func TestCrashesAnswerEveryMessageOnce(t *testing.T) {
	for _, drv := range crashDrivers() {
		t.Run(drv.name, func(t *testing.T) {
			crashProperty(t, drv)
		})
	}
}

func crashProperty(t *testing.T, drv crashDriver) {
	const (
		users     = 12
		turns     = 200
		maxDoubt  = 4
		settleFor = 90 * time.Second
	)
	seed := seedFromEnv(t)
	rng := newLockedRand(seed)
	t.Logf("seed %d (PARLEY_SOAK_SEED=%d repeats the schedule)", seed, seed)

	var mu sync.Mutex // answers, inFlight, hits
	answers := map[string]crashAnswer{}
	inFlight := map[int]string{} // request -> newest user message
	queuedAtModel := 0           // requests in flight for a turn queued behind a reply
	hits := map[string]int{}     // user message -> kills that caught its turn at the model
	made := 0
	var req int
	b := newCrashBundle(t, drv, "100ms", func(r llmtest.Request) llmtest.Response {
		var seen []string
		var chat string
		msgs := r.Messages()
		for _, m := range msgs {
			if m.Role == "user" && strings.HasPrefix(m.Content, "u") {
				seen = append(seen, m.Content)
				chat, _, _ = strings.Cut(m.Content, " ")
			}
		}
		// A turn queued behind another reads the reply stored after its
		// message: its prompt ends with the assistant.
		queued := len(msgs) > 0 && msgs[len(msgs)-1].Role == "assistant"
		mu.Lock()
		req++
		id := req
		made++
		text := fmt.Sprintf("answer %d", made)
		answers[text] = crashAnswer{chat: chat, seen: seen}
		if len(seen) > 0 {
			inFlight[id] = seen[len(seen)-1]
		}
		if queued {
			queuedAtModel++
		}
		mu.Unlock()
		delay := time.Duration(150+rng.IntN(450)) * time.Millisecond
		time.Sleep(delay) // the model's latency; the kill may come meanwhile
		mu.Lock()
		delete(inFlight, id)
		if queued {
			queuedAtModel--
		}
		mu.Unlock()
		return llmtest.Text(text)
	})

	// Users: a message every 0.4-1.2 s, and half the time a second one
	// 100-400 ms later, which lands while the first is being answered.
	var postMu sync.Mutex // guards b.rep.addr across restarts
	var accMu sync.Mutex
	var accepted []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for u := range users {
		user := telegramtest.User{ID: 7_400_000 + int64(u), FirstName: fmt.Sprintf("U%d", u)}
		b.tg.StartedBy(user)
		wg.Go(func() {
			for m := 0; ; m++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("u%d m%d", user.ID, m)
				b.post(t, &postMu, user, text)
				accMu.Lock()
				accepted = append(accepted, text)
				accMu.Unlock()
				if rng.IntN(2) == 0 {
					time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
					m++
					text = fmt.Sprintf("u%d m%d", user.ID, m)
					b.post(t, &postMu, user, text)
					accMu.Lock()
					accepted = append(accepted, text)
					accMu.Unlock()
				}
				time.Sleep(time.Duration(400+rng.IntN(800)) * time.Millisecond)
			}
		})
	}

	// Kills: every 0.5-1.5 s after the last restart; every other one waits
	// (up to 3 s) for a queued turn at the model. A message whose turn two
	// kills caught already is not caught a third time: three deaths give
	// a message up by design (a message that crashes every process).
	type kill struct {
		n       int
		inDoubt map[string]bool
	}
	var kills []kill
	// A turn counts once its answer reached a chat.
	answered := func() int {
		got := map[string]bool{}
		for _, m := range b.tg.AllSent() {
			got[m.Plain] = true
		}
		return len(got)
	}
	for n := 1; answered() < turns; n++ {
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
		if n%2 == 0 {
			waitFor(3*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return queuedAtModel > 0
			})
		}
		waitFor(5*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range inFlight {
				if hits[m] >= 2 {
					return false
				}
			}
			return true
		})
		postMu.Lock()
		require.NoError(t, b.rep.freeze())
		k := kill{n: n, inDoubt: inDoubtOf(t, b.st, b.rep.ownerPrefix())}
		mu.Lock()
		for _, m := range inFlight {
			hits[m]++
		}
		mu.Unlock()
		b.rep.kill(t)
		b.rep.start(t)
		postMu.Unlock()
		kills = append(kills, k)
	}
	close(stop)
	wg.Wait()

	// Each message is answered by the first answer that reached its chat
	// with the message in its prompt.
	unanswered := func() []string {
		delivered := map[string]bool{}
		for _, m := range b.tg.AllSent() {
			delivered[m.Plain] = true
		}
		mu.Lock()
		in := map[string]bool{}
		for text, a := range answers {
			if delivered[text] {
				for _, s := range a.seen {
					in[s] = true
				}
			}
		}
		mu.Unlock()
		accMu.Lock()
		defer accMu.Unlock()
		var open []string
		for _, a := range accepted {
			if !in[a] {
				open = append(open, a)
			}
		}
		return open
	}
	waitFor(settleFor, func() bool { return len(unanswered()) == 0 })
	postMu.Lock()
	b.rep.stop(t)
	postMu.Unlock()

	// What reached the chats, in order: a new answer must answer something
	// new; a repeat of an answer is a send a kill had in doubt.
	seenBefore := map[string]bool{}
	copies := map[string]int{}
	var doubles, wrongChat []string
	mu.Lock()
	for _, m := range b.tg.AllSent() {
		copies[m.Plain]++
		if copies[m.Plain] > 1 {
			continue
		}
		a, ok := answers[m.Plain]
		require.True(t, ok, "a message the model never wrote reached chat %d: %q", m.ChatID, m.Plain)
		if a.chat != fmt.Sprintf("u%d", m.ChatID) {
			wrongChat = append(wrongChat, m.Plain)
		}
		fresh := false
		for _, s := range a.seen {
			fresh = fresh || !seenBefore[s]
			seenBefore[s] = true
		}
		if !fresh {
			doubles = append(doubles, fmt.Sprintf("%s (prompt %v)", m.Plain, a.seen))
		}
	}
	totalMade := made
	mu.Unlock()
	var doubt []map[string]bool
	for _, k := range kills {
		doubt = append(doubt, k.inDoubt)
	}
	repeats, unexplained := countRepeats(copies), chargeRepeats(copies, doubt, maxDoubt)
	// Parley stored each accepted message once.
	var storedDup []string
	require.NoError(t, b.st.DB().Raw(`SELECT content FROM messages WHERE role = 'user'
		GROUP BY conversation_id, content HAVING count(*) > 1`).Scan(&storedDup).Error)

	lost := unanswered()
	accMu.Lock()
	report := fmt.Sprintf("crash property on %s (seed %d): %d messages accepted, %d answers made, %d reached a chat, %d kills;\n"+
		"unanswered %d %v; answered twice %d %v; in the wrong chat %v; stored twice %v;\n"+
		"Telegram repeats %d (not explained by the kills' replies in doubt: %v)\n",
		drv.name, seed, len(accepted), totalMade, len(copies), len(kills), len(lost), lost, len(doubles), doubles, wrongChat, storedDup,
		repeats, unexplained)
	accMu.Unlock()
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "report.txt"), []byte(report), 0o644))
	t.Log(report)

	require.GreaterOrEqual(t, len(copies), turns)
	require.Empty(t, lost, "an accepted message was never answered; log %s", b.rep.logPath)
	require.Empty(t, doubles, "an answer that answered nothing new reached a chat")
	require.Empty(t, wrongChat)
	require.Empty(t, storedDup)
	require.Empty(t, unexplained,
		"Telegram repeats that the kills' replies in doubt cannot explain at max_sends_in_doubt per kill")
	require.Zero(t, b.rep.logHas("panic"), "a process panicked; log %s", b.rep.logPath)
}

// lockedRand is a seeded source the users, the model and the killer
// draw from at once.
type lockedRand struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newLockedRand(seed uint64) *lockedRand {
	return &lockedRand{rng: rand.New(rand.NewPCG(seed, seed^0xc4a5))}
}

func (r *lockedRand) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.IntN(n)
}
