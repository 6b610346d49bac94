//go:build linux

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// Load benchmarks (issue 20): many Telegram users write at the same moment
// to real `parley run` processes while the model holds every answer 2 s.
//
//	go test -run '^$' -bench 'BenchmarkUsersAtOnce|BenchmarkReplicasShareLoad' -benchtime 1x ./test/soak/
//
// Updates reach the processes as Telegram's webhook would through a load
// balancer: POSTed to /webhooks/telegram, 40 at a time (Telegram's default
// max_connections), round robin over the replicas. Each figure is timed
// from the first POST to the reply the fake Bot API received.

// modelHold is how long the model takes over every answer.
const modelHold = 2 * time.Second

// webhookConnections is how many updates are POSTed at once.
const webhookConnections = 40

// load sizes one run.
type load struct {
	users    int
	replicas int
	// bots, when set, runs that many Telegram bots in each replica
	// (bots:), the users spread over them; 0 is one bot without bots:.
	bots   int
	driver string
	// llm is added under llm: in every replica's config.
	llm string
	// telegramPace keeps Telegram's default send_rate; otherwise the
	// bot-wide 30 messages/s is lifted (per_second: 0).
	telegramPace bool
}

// Every run lifts runs.debounce, which would add 1.5 s to every answer.
func BenchmarkUsersAtOnce(b *testing.B) {
	for _, c := range []struct {
		name string
		load load
	}{
		// The defaults but for Telegram's bot-wide 30 messages/s, which
		// alone takes 6.7 s to send 200 replies whatever the bot does.
		{"200-users-defaults", load{users: 200, replicas: 1, driver: store.DriverSQLite}},
		{"2000-users-no-model-limit", load{users: 2000, replicas: 1, driver: store.DriverSQLite, llm: "max_concurrency: 0"}},
		// Issue 35: 100 bots of 20 users each in one process, against
		// the same 2,000 users on one bot.
		{"100-bots-20-users-no-model-limit", load{users: 2000, bots: 100, replicas: 1, driver: store.DriverSQLite, llm: "max_concurrency: 0"}},
		// The 200 users of the first run over 100 bots: what the bots
		// cost where the machine is not the limit.
		{"100-bots-2-users-no-model-limit", load{users: 200, bots: 100, replicas: 1, driver: store.DriverSQLite, llm: "max_concurrency: 0"}},
		{"200-users-no-model-limit", load{users: 200, replicas: 1, driver: store.DriverSQLite, llm: "max_concurrency: 0"}},
		// The same 200 with Telegram's pace at its default.
		{"200-users-telegram-pace", load{users: 200, replicas: 1, driver: store.DriverSQLite, telegramPace: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				runLoad(b, c.load)
			}
		})
	}
}

func BenchmarkReplicasShareLoad(b *testing.B) {
	storetest.NeedPostgres(b)
	for _, n := range []int{2, 3} {
		b.Run(fmt.Sprintf("%d-replicas-400-users", n), func(b *testing.B) {
			for range b.N {
				runLoad(b, load{users: 400, replicas: n, driver: store.DriverPostgres, llm: "max_concurrency: 0"})
			}
		})
	}
}

// runLoad runs l once and reports its figures.
func runLoad(b *testing.B, l load) {
	b.StopTimer()
	bin := parleyBinary(b)
	dir := b.TempDir()
	tgs := make([]*telegramtest.Server, max(l.bots, 1))
	for i := range tgs {
		tgs[i] = telegramtest.NewServer(b, telegramtest.WithToken(fmt.Sprintf("%d:load-token", 900000+i)),
			telegramtest.WithBotUser(int64(900000+i), fmt.Sprintf("load%d_bot", i)))
	}
	model := llmtest.NewServer(b, llmtest.WithLatency(modelHold), llmtest.WithResponder(func(llmtest.Request) llmtest.Response {
		return llmtest.Text("an answer after thinking it over")
	}))
	dsn := filepath.Join(dir, "parley.db")
	if l.driver == store.DriverPostgres {
		dsn = storetest.PostgresDSN(b)
	}
	st, err := store.Open(context.Background(), store.Options{Driver: l.driver, DSN: dsn})
	require.NoError(b, err)
	require.NoError(b, st.Migrate(context.Background()))
	b.Cleanup(func() { _ = st.Close() })

	var reps []*replica
	b.Cleanup(func() {
		for _, r := range reps {
			r.kill(b)
		}
	})
	for i := range l.replicas {
		cfg := filepath.Join(dir, fmt.Sprintf("replica-%d.yaml", i))
		require.NoError(b, os.WriteFile(cfg, []byte(loadConfig(l, dsn, model.URL(), tgs)), 0o600))
		r := newReplica(i, bin, cfg, filepath.Join(dir, fmt.Sprintf("replica-%d.log", i)))
		r.start(b)
		reps = append(reps, r)
	}
	idleRSS := make([]int64, len(reps))
	for i, r := range reps {
		idleRSS[i] = procStatusKB(b, r.pid(), "VmRSS")
	}

	users := make([]telegramtest.User, l.users)
	updates := make([][]byte, l.users)
	for i := range users {
		users[i] = telegramtest.User{ID: 8_000_000 + int64(i), FirstName: fmt.Sprintf("U%d", i)}
		u := tgs[i%len(tgs)].SendPrivate(users[i], fmt.Sprintf("hello from user %d", i))
		updates[i], err = json.Marshal(u)
		require.NoError(b, err)
	}

	var mu sync.Mutex
	answered := map[int64]time.Time{}
	all := make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for _, tg := range tgs {
		tg.WatchSent(ctx, func(m telegramtest.SentMessage, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if _, seen := answered[m.ChatID]; !seen {
				answered[m.ChatID] = at
				if len(answered) == l.users {
					close(all)
				}
			}
		})
	}

	b.StartTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range webhookConnections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= l.users {
					return
				}
				postUpdate(b, reps[i%len(reps)], webhookOf(l, i%len(tgs)), updates[i])
			}
		}()
	}
	wg.Wait()
	posted := time.Since(start)
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		n := len(answered)
		mu.Unlock()
		b.Fatalf("%d of %d users answered after 2 minutes", n, l.users)
	}
	b.StopTimer()

	var lat []time.Duration
	mu.Lock()
	for _, at := range answered {
		lat = append(lat, at.Sub(start))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)-1].Seconds(), "last-s")
	b.ReportMetric(lat[len(lat)/2].Seconds(), "p50-s")
	b.ReportMetric(lat[len(lat)*99/100].Seconds(), "p99-s")
	b.ReportMetric(posted.Seconds(), "posted-s")
	var peak, idle int64
	for i, r := range reps {
		peak = max(peak, procStatusKB(b, r.pid(), "VmHWM"))
		idle = max(idle, idleRSS[i])
	}
	b.ReportMetric(float64(peak)/1024, "peak-rss-MB")
	b.ReportMetric(float64(idle)/1024, "idle-rss-MB")
	if len(reps) > 1 {
		turns := turnsPerReplica(b, st, reps)
		for i, n := range turns {
			b.ReportMetric(float64(n), fmt.Sprintf("turns-r%d", i))
		}
	}

	for _, r := range reps {
		r.stop(b)
	}
}

// webhookOf is where bot i of l takes its updates.
func webhookOf(l load, i int) string {
	if l.bots == 0 {
		return "/webhooks/telegram"
	}
	return fmt.Sprintf("/webhooks/bot%d/telegram", i)
}

// loadConfig is one replica's config for l.
func loadConfig(l load, dsn, modelURL string, tgs []*telegramtest.Server) string {
	llm, pace := "", "\n    send_rate: {per_second: 0}"
	if l.llm != "" {
		llm = "\n  " + l.llm
	}
	if l.telegramPace {
		pace = ""
	}
	adapters := fmt.Sprintf(`adapters:
  web: {enabled: false}
  telegram:
    token: %q
    api_url: %q
    mode: webhook
    webhook_secret: load-secret%s
`, tgs[0].Token(), tgs[0].URL(), pace)
	if l.bots > 0 {
		var bots strings.Builder
		bots.WriteString("bots:\n")
		for i, tg := range tgs {
			fmt.Fprintf(&bots, "  - id: bot%d\n    adapters:\n      web: {enabled: false}\n      telegram:\n        token: %q\n        api_url: %q\n"+
				"        mode: webhook\n        webhook_secret: load-secret\n        send_rate: {per_second: 0}\n", i, tg.Token(), tg.URL())
		}
		adapters = bots.String()
	}
	return fmt.Sprintf(`store:
  driver: %s
  dsn: %q
llm:
  base_url: %s
  api_key: load-key
  model: load-model
  timeout: 30s%s
runs:
  debounce: 0s
http:
  listen: 127.0.0.1:0
  api_token: ""
log:
  level: info
%s`, l.driver, dsn, modelURL, llm, adapters)
}

// postUpdate delivers one update to r's webhook as Telegram would.
func postUpdate(b *testing.B, r *replica, path string, update []byte) {
	req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+path, bytes.NewReader(update))
	if err != nil {
		b.Error(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "load-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("webhook answered %s", resp.Status)
	}
}

// procStatusKB reads a "kB" field of /proc/<pid>/status (VmRSS, VmHWM).
func procStatusKB(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(b, err)
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// turnsPerReplica counts the turns each replica's process claimed (the
// last few may still be recording their completion: the reply goes out
// first).
func turnsPerReplica(b *testing.B, st *store.Store, reps []*replica) []int {
	var rows []struct {
		Owner string
		N     int
	}
	require.NoError(b, st.DB().Raw(`SELECT owner, COUNT(*) AS n FROM runs WHERE status IN ('running', 'succeeded') GROUP BY owner`).Scan(&rows).Error)
	out := make([]int, len(reps))
	for _, row := range rows {
		for i, r := range reps {
			if r.owns(row.Owner) {
				out[i] += row.N
			}
		}
	}
	return out
}
