package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/diskfault"
	"github.com/parleybot/parley/internal/diskfault/diskfaulttest"
	"github.com/parleybot/parley/store"
)

// diskBot is a bot whose database, and perhaps spool, are on a disk the
// test fills: `parley run` itself on a mounted tmpfs, or, where none can
// be mounted, the same wiring built with the injected full disk.
type diskBot struct {
	addr string
	logs *coretest.Logs
	stop func(t testing.TB)
}

// startOnDisk starts the bot with its database on storeDisk and its spool
// on spoolDisk (nil: an ordinary directory).
func (b *testBundle) startOnDisk(t *testing.T, cfgPath string, storeDisk, spoolDisk *diskfaulttest.Disk) *diskBot {
	t.Helper()
	if (storeDisk == nil || storeDisk.Mounted()) && (spoolDisk == nil || spoolDisk.Mounted()) {
		r := b.start(t, cfgPath)
		return &diskBot{addr: r.addr, logs: r.stderr, stop: r.stop}
	}
	cfg, err := config.Load(cfgPath, b.lookup)
	require.NoError(t, err)
	logs := &coretest.Logs{}
	ctx := context.Background()
	a, err := buildApp(ctx, cfg, logs.Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled },
		serveHTTP:   true,
		storeDisk:   fault(storeDisk),
		spoolDisk:   fault(spoolDisk),
	})
	require.NoError(t, err)
	require.NoError(t, a.start(ctx))
	var once sync.Once
	stop := func(t testing.TB) { once.Do(func() { require.NoError(t, a.stop()) }) }
	t.Cleanup(func() { stop(t) })
	return &diskBot{addr: a.http.Addr(), logs: logs, stop: stop}
}

func fault(d *diskfaulttest.Disk) *diskfault.Disk {
	if d == nil {
		return nil
	}
	return d.Fault
}

// diskConfig writes a config with the database at dsn and the spool in
// spoolDir, a web chat without per-address limits (every client here is
// 127.0.0.1) and a model that answers at once.
func (b *testBundle) diskConfig(t *testing.T, dsn, spoolDir string) string {
	t.Helper()
	path := b.writeConfigFor(t, "sqlite", dsn, `adapters:
  web:
    limits: {messages_per_minute_per_client: 0, messages_per_minute_per_ip: 0, new_conversations_per_hour_per_ip: 0}
runs:
  debounce: 0s
  stale_after: 1h
plugins:
  memory: {enabled: false}
`)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	cfg := string(raw)
	for from, to := range map[string]string{
		`spool: {dir: "` + filepath.Join(b.dir, "spool") + `"}`: `spool: {dir: "` + spoolDir + `"}`,
		// Turns held while the disk fills must not time out.
		"timeout: 2s": "timeout: 30s",
	} {
		require.Contains(t, cfg, from)
		cfg = strings.Replace(cfg, from, to, 1)
	}
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// answerOnce makes the model answer each user message it sees for the
// first time, and counts how often each was seen so: more than once is a
// message answered twice.
type answerOnce struct {
	mu       sync.Mutex
	answered map[string]int
	// gate, when set, holds the answers until it is closed.
	gate chan struct{}
}

func newAnswerOnce(model *llmtest.Server) *answerOnce {
	a := &answerOnce{answered: map[string]int{}}
	model.Respond(func(r llmtest.Request) llmtest.Response {
		a.mu.Lock()
		defer a.mu.Unlock()
		var fresh []string
		for _, m := range r.Messages() {
			if m.Role == "user" && strings.HasPrefix(m.Content, "msg ") && a.answered[m.Content] == 0 {
				fresh = append(fresh, m.Content)
			}
		}
		for _, f := range fresh {
			a.answered[f]++
		}
		if a.gate != nil {
			return llmtest.Text("got " + strings.Join(fresh, " / ")).WithHold(a.gate)
		}
		return llmtest.Text("got " + strings.Join(fresh, " / "))
	})
	return a
}

func (a *answerOnce) count(text string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.answered[text]
}

// post sends text from client and returns the status, Retry-After and
// body.
func post(t *testing.T, addr, client, text string) (int, string, string) {
	t.Helper()
	code, retry, body, err := tryPost(addr, client, text)
	require.NoError(t, err)
	return code, retry, body
}

// tryPost is post for other goroutines than the test's.
func tryPost(addr, client, text string) (int, string, string, error) {
	body, _ := json.Marshal(map[string]string{"client_id": client, "name": "Ada", "text": text})
	resp, err := http.Post("http://"+addr+"/web/messages", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(raw), nil
}

// healthz returns /healthz's status code and components.
func healthz(t *testing.T, addr string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct{ Components map[string]string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body.Components
}

// diskRun is what became of the posts of a load on a full disk.
type diskRun struct {
	mu sync.Mutex
	// accepted are each client's texts answered 202, in order.
	accepted map[string][]string
	refused  map[string][]string
	other    []string
	// firstRefused is when the first post was refused.
	firstRefused time.Time
}

// load makes each of users clients post messages, one after another,
// until each had one refused or posted max.
func load(addr string, users, max int, tag string, r *diskRun) {
	var wg sync.WaitGroup
	for u := range users {
		client := fmt.Sprintf("disk-client-%02d", u)
		wg.Go(func() {
			for i := range max {
				text := fmt.Sprintf("msg %s %s %d %s", client, tag, i, strings.Repeat("x", 2000))
				code, retry, body, err := tryPost(addr, client, text)
				r.mu.Lock()
				switch {
				case err != nil:
					r.other = append(r.other, err.Error())
					code = 0
				case code == http.StatusAccepted:
					r.accepted[client] = append(r.accepted[client], text)
				case code == http.StatusServiceUnavailable:
					if r.firstRefused.IsZero() {
						r.firstRefused = time.Now()
					}
					r.refused[client] = append(r.refused[client], text)
					if retry == "" {
						r.other = append(r.other, "503 without Retry-After: "+body)
					}
				default:
					r.other = append(r.other, fmt.Sprintf("%d: %s", code, body))
				}
				stop := code != http.StatusAccepted
				r.mu.Unlock()
				if stop {
					return
				}
			}
		})
	}
	wg.Wait()
}

// SQLite and its inbound spool on one small file system that fills up
// while 30 users post on the web chat (the finding: 424 of 900 posts got
// 500, one was answered 202 and then lost, /healthz said 200 for ~21 s
// and inbound_spool ok throughout). Now: every post is answered 202 or
// 503 with Retry-After, never 500; /healthz fails with the first refused
// post, well within a probe interval, both store and inbound_spool; and
// once there is room again every message answered 202 is stored once and
// answered once, the refused ones too once sent again.
func TestAFullDiskLosesNothingAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	disk := diskfaulttest.New(t, "24m")
	dbPath := filepath.Join(disk.Dir, "parley.db")
	model := newAnswerOnce(b.model)
	bot := b.startOnDisk(t, b.diskConfig(t, dbPath, filepath.Join(disk.Dir, "spool")), disk, disk)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bot's log (warnings and errors):\n%s", filterLog(bot.logs.String()))
		}
	})
	code, _ := healthz(t, bot.addr)
	require.Equal(t, http.StatusOK, code)

	const users = 30
	r := &diskRun{accepted: map[string][]string{}, refused: map[string][]string{}}
	load(bot.addr, users, 1, "before", r)
	require.Empty(t, r.refused)

	// /healthz is asked all along, as a load balancer would.
	var failedAt time.Time
	watching, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-watching:
				return
			case <-time.After(10 * time.Millisecond):
			}
			// Not healthz: no require off the test's goroutine.
			resp, err := http.Get("http://" + bot.addr + "/healthz")
			if err != nil {
				continue
			}
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				failedAt = time.Now()
				return
			}
		}
	}()
	disk.Fill(t)
	filled := time.Now()
	load(bot.addr, users, 200, "full", r)
	require.Empty(t, r.other, "every post is answered 202 or 503 with Retry-After")
	require.NotEmpty(t, r.refused, "no post was refused on a full disk")
	var unhealthy map[string]string
	require.Eventually(t, func() bool {
		code, c := healthz(t, bot.addr)
		unhealthy = c
		return code == http.StatusServiceUnavailable
	}, store.DefaultProbeEvery, 10*time.Millisecond, "/healthz passed for a probe interval after the first refused post")
	close(watching)
	<-watched
	require.NotEqual(t, "ok", unhealthy["store"], "the store cannot write")
	require.NotEqual(t, "ok", unhealthy["inbound_spool"], "the spool cannot write")
	if !failedAt.IsZero() {
		t.Logf("/healthz failed %v after the disk filled, %v after the first refused post", failedAt.Sub(filled).Round(time.Millisecond),
			failedAt.Sub(r.firstRefused).Round(time.Millisecond))
	}
	t.Logf("/healthz while full: store=%q inbound_spool=%q", unhealthy["store"], unhealthy["inbound_spool"])

	disk.Free(t)
	require.Eventually(t, func() bool {
		code, _ := healthz(t, bot.addr)
		return code == http.StatusOK
	}, time.Minute, 20*time.Millisecond, "/healthz never passed again once the disk had room")
	// What was refused is sent again, as the page's user would.
	for client, texts := range r.refused {
		for _, text := range texts {
			code, _, body := post(t, bot.addr, client, text)
			require.Equal(t, http.StatusAccepted, code, body)
			r.accepted[client] = append(r.accepted[client], text)
		}
	}

	total := 0
	for _, texts := range r.accepted {
		total += len(texts)
		for _, text := range texts {
			require.Eventually(t, func() bool { return model.count(text) > 0 }, time.Minute, 20*time.Millisecond,
				"%.40q, answered 202, was never answered", text)
		}
	}
	bot.stop(t)
	st := b.openStoreAt(t, dbPath)
	for client, texts := range r.accepted {
		var said []string
		for _, m := range storedOn(t, st, web.Platform, client) {
			if m.Role == core.RoleUser {
				said = append(said, m.Content)
			}
		}
		require.Equal(t, texts, said, "%s: each message answered 202 is stored once, in order", client)
		for _, text := range texts {
			require.Equal(t, 1, model.count(text), "%.40q answered %d times", text, model.count(text))
		}
	}
	t.Logf("%d users: %d posts answered 202, %d refused with 503 while the disk was full and sent again; none lost",
		users, total, countAll(r.refused))
}

// The database's disk is full for a while, the spool's is not (the
// finding: 5 spooled messages were dropped after 5 tries, "giving up a
// spooled message", because the spool's "store is up" test was a ping,
// which passes on a full disk; one conversation stalled 2 min 13 s
// because recording a run's outcome failed and the run stayed running
// until the reaper). Now: every DM is taken (202) and spooled, /healthz
// fails on the store and not on the spool, the spool tries the oldest
// message again and again without giving any up, the turns that were in
// flight when the disk filled record their outcome once there is room,
// and then every message is stored once, in order, and answered once,
// long before the reaper (runs.stale_after is an hour here).
func TestSpoolOnAnotherDiskGivesUpNothingWhileTheDatabaseIsFull(t *testing.T) {
	t.Parallel()
	b := setup(t)
	disk := diskfaulttest.New(t, "24m")
	dbPath := filepath.Join(disk.Dir, "parley.db")
	model := newAnswerOnce(b.model)
	bot := b.startOnDisk(t, b.diskConfig(t, dbPath, filepath.Join(b.dir, "spool")), disk, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bot's log (warnings and errors):\n%s", filterLog(bot.logs.String()))
		}
	})

	const users, each = 10, 5
	r := &diskRun{accepted: map[string][]string{}, refused: map[string][]string{}}
	model.mu.Lock()
	model.gate = make(chan struct{})
	model.mu.Unlock()
	// Each user's first turn is with the model when the disk fills: its
	// reply and its outcome are written to a full disk.
	load(bot.addr, users, 1, "before", r)
	b.model.WaitRequests(t, users, waitFor)
	disk.Fill(t)
	close(model.gate)
	filled := time.Now()
	load(bot.addr, users, each, "full", r)
	require.Empty(t, r.other, "every post is taken")
	require.Empty(t, r.refused, "every post is taken: the spool's disk has room")

	require.Eventually(t, func() bool {
		code, c := healthz(t, bot.addr)
		return code == http.StatusServiceUnavailable && c["store"] != "ok" && c["inbound_spool"] == "ok"
	}, store.DefaultProbeEvery, 10*time.Millisecond, "/healthz did not fail on the store alone")
	// The oldest spooled message is tried more often than a bad message
	// would be before it is given up.
	const retry = "the store still cannot take a spooled message"
	require.Eventually(t, func() bool { return strings.Count(bot.logs.String(), retry) > 6 }, time.Minute,
		50*time.Millisecond, "the spool stopped trying the store")
	full := time.Since(filled)
	require.NotContains(t, bot.logs.String(), "giving up a spooled message")

	disk.Free(t)
	freed := time.Now()
	for _, texts := range r.accepted {
		for _, text := range texts {
			require.Eventually(t, func() bool { return model.count(text) > 0 }, time.Minute, 20*time.Millisecond,
				"%.40q, answered 202, was never answered", text)
		}
	}
	caughtUp := time.Since(freed)
	bot.stop(t)
	logs := bot.logs.String()
	require.NotContains(t, logs, "giving up a spooled message")
	require.Contains(t, logs, "recording run outcome failed; trying again until it lands", "no turn was completed on the full disk")
	require.NotContains(t, logs, "the run is failed by the reaper")
	st := b.openStoreAt(t, dbPath)
	for client, texts := range r.accepted {
		var said []string
		replies := 0
		for _, m := range storedOn(t, st, web.Platform, client) {
			switch m.Role {
			case core.RoleUser:
				said = append(said, m.Content)
			case core.RoleAssistant:
				replies++
			}
		}
		require.Equal(t, texts, said, "%s: each message stored once, in order", client)
		require.Positive(t, replies)
		for _, text := range texts {
			require.Equal(t, 1, model.count(text), "%.40q answered %d times", text, model.count(text))
		}
	}
	t.Logf("%d users, %d messages taken while the database's disk was full for %v (%d tries of the oldest, none given up); "+
		"all answered %v after it had room", users, countAll(r.accepted), full.Round(100*time.Millisecond),
		strings.Count(bot.logs.String(), retry), caughtUp.Round(100*time.Millisecond))
}

func countAll(m map[string][]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// openStoreAt opens the SQLite file at path, closed at cleanup.
func (b *testBundle) openStoreAt(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Driver: "sqlite", DSN: path})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func storedOn(t *testing.T, st *store.Store, p core.Platform, thread string) []core.Message {
	t.Helper()
	ctx := context.Background()
	conv, err := st.ConversationByThread(ctx, p, thread)
	require.NoError(t, err)
	msgs, err := st.Messages(ctx, conv.ID)
	require.NoError(t, err)
	return msgs
}

var warnOrError = regexp.MustCompile(`level=(WARN|ERROR)`)

// filterLog keeps a log's warnings and errors.
func filterLog(logs string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if warnOrError.MatchString(l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
