//go:build linux

package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
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
)

// Fairness under a flood (issue 24, part 4): 50 ordinary Telegram users
// write to a real `parley run` process (SQLite, webhook mode, Telegram's
// default send pace) while the model takes 1–2 s over every answer; after a
// quiet minute one more user sends 1,000 messages a minute for a minute.
// The figure is the ordinary users' reply time (update POSTed → reply at
// the fake Bot API), p50 and p99, in the quiet minute and in the flood
// minute of the same run, and their ratio (target: p99 within 1.5×).
//
//	go test -run '^$' -bench BenchmarkFlood -benchtime 1x ./test/soak/
//
// bot.limits are off (their default), so nothing but the run queue stands
// between the flood and the model.
const (
	floodUsers = 50
	// floodPeriod: each ordinary user writes once per period, at its own
	// offset, and never before the reply to its previous message came.
	floodPeriod = 5 * time.Second
	// floodWindow is each phase's length: quiet, then flood.
	floodWindow = time.Minute
	// floodEvery is the flooding user's pace: 1,000 messages a minute.
	floodEvery = time.Minute / 1000
	// floodReplyWait bounds one ordinary reply, and the flooder's last.
	floodReplyWait = time.Minute
	// The model's time over an answer is uniform in [floodHoldMin,
	// floodHoldMax).
	floodHoldMin = time.Second
	floodHoldMax = 2 * time.Second
)

func BenchmarkFlood(b *testing.B) {
	for _, c := range []struct {
		name     string
		debounce string
	}{
		// The defaults: a message pushes its conversation's queued run
		// 1.5 s on, so a user writing faster than that gets no turn until
		// they pause.
		{"debounce-default", "1500ms"},
		// No debounce, as issue 20's load benchmarks: the flooder gets a
		// turn whenever its previous one ends, each answering every
		// message that arrived meanwhile (during_generation: queue).
		{"debounce-0", "0s"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				runFlood(b, c.debounce)
			}
		})
	}
}

// ordinaryText finds an ordinary user's message in the model's prompt.
var ordinaryText = regexp.MustCompile(`message \d+ from user \d+`)

// floodText finds a flooding message in a prompt.
var floodText = regexp.MustCompile(`flood \d+`)

// sample is one ordinary message and its reply.
type sample struct {
	text    string
	sent    time.Time
	latency time.Duration
	intake  time.Duration // the webhook's answer
}

// ordinaryUser has at most one message waiting for its reply.
type ordinaryUser struct {
	user    telegramtest.User
	replied chan time.Time // the reply's arrival, buffered 1
	waiting atomic.Bool
}

func runFlood(b *testing.B, debounce string) {
	b.StopTimer()
	bin := parleyBinary(b)
	dir := b.TempDir()
	tg := telegramtest.NewServer(b)
	// holds keeps the model's time over each ordinary message's turn, so
	// that the bot's own share of a reply's time can be told apart.
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(24, 4))
	holds := map[string]time.Duration{}
	model := llmtest.NewServer(b, llmtest.WithResponder(func(req llmtest.Request) llmtest.Response {
		rmu.Lock()
		hold := floodHoldMin + time.Duration(rng.Int64N(int64(floodHoldMax-floodHoldMin)))
		if m := ordinaryText.FindString(req.LastUserMessage()); m != "" {
			if _, seen := holds[m]; !seen {
				holds[m] = hold
			}
		}
		rmu.Unlock()
		return llmtest.Text("an answer after thinking it over").WithDelay(hold)
	}))
	dsn := filepath.Join(dir, "parley.db")
	st, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: dsn})
	require.NoError(b, err)
	require.NoError(b, st.Migrate(context.Background()))
	b.Cleanup(func() { _ = st.Close() })

	cfg := filepath.Join(dir, "flood.yaml")
	require.NoError(b, os.WriteFile(cfg, []byte(floodConfig(dsn, debounce, model.URL(), tg)), 0o600))
	art := artifactDir(b)
	r := newReplica(0, bin, cfg, filepath.Join(art, "parley.log"))
	b.Cleanup(func() { r.kill(b) })
	r.start(b)

	users := make([]*ordinaryUser, floodUsers)
	byChat := map[int64]*ordinaryUser{}
	for i := range users {
		u := &ordinaryUser{
			user:    telegramtest.User{ID: 9_000_000 + int64(i), FirstName: fmt.Sprintf("U%d", i)},
			replied: make(chan time.Time, 1),
		}
		users[i], byChat[u.user.ID] = u, u
	}
	flooder := telegramtest.User{ID: 9_999_999, FirstName: "Flood"}

	var fmu sync.Mutex
	var floodReplies []time.Time
	var unexpected atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	tg.WatchSent(ctx, func(m telegramtest.SentMessage, at time.Time) {
		if m.ChatID == flooder.ID {
			fmu.Lock()
			floodReplies = append(floodReplies, at)
			fmu.Unlock()
			return
		}
		u := byChat[m.ChatID]
		if u == nil || !u.waiting.CompareAndSwap(true, false) {
			unexpected.Add(1)
			return
		}
		u.replied <- at
	})

	// The first period warms up (every conversation is created), then
	// come the quiet window and the flood window.
	warm := time.Now().Add(100 * time.Millisecond)
	quietFrom := warm.Add(floodPeriod)
	floodFrom := quietFrom.Add(floodWindow)
	floodTo := floodFrom.Add(floodWindow)

	// The process's CPU in each window, read at the windows' edges, and
	// the machine's load average at each window's end: the machine is
	// shared, and a busy neighbour moves the figures more than the flood.
	var cpuQuiet, cpuFlood time.Duration
	var loadQuiet, loadFlood float64
	cpuRead := make(chan struct{})
	go func() {
		defer close(cpuRead)
		var at [3]time.Duration
		var load [3]float64
		for i, edge := range []time.Time{quietFrom, floodFrom, floodTo} {
			time.Sleep(time.Until(edge))
			at[i] = procCPU(r.pid())
			load[i], _ = strconv.ParseFloat(loadAverage(), 64)
		}
		cpuQuiet, cpuFlood = at[1]-at[0], at[2]-at[1]
		loadQuiet, loadFlood = load[1], load[2]
	}()

	b.StartTimer()
	var smu sync.Mutex
	var samples []sample
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slot := warm.Add(time.Duration(i) * floodPeriod / floodUsers)
			for n := 0; slot.Before(floodTo); n++ {
				time.Sleep(time.Until(slot)) // the user's own schedule
				text := fmt.Sprintf("message %d from user %d", n, i)
				update, err := json.Marshal(tg.SendPrivate(u.user, text))
				if err != nil {
					b.Error(err)
					return
				}
				u.waiting.Store(true)
				sent := time.Now()
				postUpdate(b, r, "/webhooks/telegram", update)
				intake := time.Since(sent)
				select {
				case at := <-u.replied:
					smu.Lock()
					samples = append(samples, sample{text: text, sent: sent, latency: at.Sub(sent), intake: intake})
					smu.Unlock()
					for !slot.After(at) {
						slot = slot.Add(floodPeriod)
					}
				case <-time.After(floodReplyWait):
					b.Errorf("user %d: no reply to message %d within %v", i, n, floodReplyWait)
					return
				}
			}
		}()
	}

	// The flood: message k is POSTed at floodFrom + k·floodEvery, each on
	// its own goroutine, so a slow answer does not slow the pace (as
	// Telegram's webhook delivers over up to 40 connections).
	var posted sync.WaitGroup
	var floodSent atomic.Int64
	var lastFlood time.Time
	time.Sleep(time.Until(floodFrom))
	for k := 0; ; k++ {
		at := floodFrom.Add(time.Duration(k) * floodEvery)
		if !at.Before(floodTo) {
			break
		}
		time.Sleep(time.Until(at))
		update, err := json.Marshal(tg.SendPrivate(flooder, fmt.Sprintf("flood %d", k)))
		require.NoError(b, err)
		posted.Add(1)
		go func() {
			defer posted.Done()
			postUpdate(b, r, "/webhooks/telegram", update)
			floodSent.Add(1)
		}()
		lastFlood = time.Now()
	}
	posted.Wait()
	floodEnd := time.Now()
	wg.Wait()
	<-cpuRead

	// The flooder's last turn answers once its queue is empty.
	conv := floodConversation(b, st, flooder.ID)
	deadline := time.Now().Add(floodReplyWait)
	for pendingRuns(b, st, conv) > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("the flooder's runs still queued or running %v after the flood", floodReplyWait)
		}
		time.Sleep(50 * time.Millisecond) // a condition polled with a deadline
	}
	b.StopTimer()
	stop()

	// A reply's time, and the bot's share of it (the reply's time less
	// the model's), in each window.
	var quiet, flood, quietOwn, floodOwn []time.Duration
	smu.Lock()
	rmu.Lock()
	for _, s := range samples {
		hold, ok := holds[s.text]
		if !ok {
			b.Errorf("no model call seen for %q", s.text)
		}
		switch {
		case !s.sent.Before(quietFrom) && s.sent.Before(floodFrom):
			quiet, quietOwn = append(quiet, s.latency), append(quietOwn, s.latency-hold)
		case !s.sent.Before(floodFrom) && s.sent.Before(floodTo):
			flood, floodOwn = append(flood, s.latency), append(floodOwn, s.latency-hold)
		}
	}
	rmu.Unlock()
	smu.Unlock()
	require.NotEmpty(b, quiet)
	require.NotEmpty(b, flood)
	for _, l := range [][]time.Duration{quiet, flood, quietOwn, floodOwn} {
		slices.Sort(l)
	}
	q50, q99 := quiet[len(quiet)/2], quiet[len(quiet)*99/100]
	f50, f99 := flood[len(flood)/2], flood[len(flood)*99/100]
	b.ReportMetric(q50.Seconds(), "quiet-p50-s")
	b.ReportMetric(q99.Seconds(), "quiet-p99-s")
	b.ReportMetric(f50.Seconds(), "flood-p50-s")
	b.ReportMetric(f99.Seconds(), "flood-p99-s")
	b.ReportMetric(flood[len(flood)-1].Seconds(), "flood-max-s")
	b.ReportMetric(f99.Seconds()/q99.Seconds(), "p99-ratio")
	b.ReportMetric(f50.Seconds()/q50.Seconds(), "p50-ratio")
	b.ReportMetric(quietOwn[len(quietOwn)/2].Seconds()*1000, "quiet-own-p50-ms")
	b.ReportMetric(quietOwn[len(quietOwn)*99/100].Seconds()*1000, "quiet-own-p99-ms")
	b.ReportMetric(floodOwn[len(floodOwn)/2].Seconds()*1000, "flood-own-p50-ms")
	b.ReportMetric(floodOwn[len(floodOwn)*99/100].Seconds()*1000, "flood-own-p99-ms")
	b.ReportMetric(float64(len(quiet)), "quiet-replies")
	b.ReportMetric(float64(len(flood)), "flood-replies")
	b.ReportMetric(float64(floodSent.Load())/floodWindow.Minutes(), "flood-msgs/min")
	b.ReportMetric(cpuQuiet.Seconds(), "cpu-quiet-s")
	b.ReportMetric(cpuFlood.Seconds(), "cpu-flood-s")
	b.ReportMetric(loadQuiet, "loadavg-quiet")
	b.ReportMetric(loadFlood, "loadavg-flood")

	// What the flooding user saw: its turns (succeeded runs), the replies
	// that reached it during the flood and after it, and how long after
	// its last message the last reply came.
	fmu.Lock()
	replies := slices.Clone(floodReplies)
	fmu.Unlock()
	var during, after int
	var last time.Time
	for _, at := range replies {
		if at.Before(floodEnd) {
			during++
		} else {
			after++
		}
		last = at
	}
	// Of its 1,000 messages, how many any model call saw (a turn sees the
	// conversation's newest memory.window_messages).
	seen := map[string]bool{}
	var floodCalls int
	for _, req := range model.Requests() {
		found := false
		for _, m := range req.Messages() {
			if t := floodText.FindString(m.Content); m.Role == "user" && t != "" {
				seen[t], found = true, true
			}
		}
		if found {
			floodCalls++
		}
	}
	b.ReportMetric(float64(succeededRuns(b, st, conv)), "flooder-turns")
	b.ReportMetric(float64(floodCalls), "flooder-model-calls")
	b.ReportMetric(float64(len(seen)), "flooder-msgs-seen")
	b.ReportMetric(float64(during), "flooder-replies-during")
	b.ReportMetric(float64(after), "flooder-replies-after")
	if !last.IsZero() {
		b.ReportMetric(last.Sub(lastFlood).Seconds(), "flooder-last-reply-s")
	}
	b.ReportMetric(float64(procStatusKB(b, r.pid(), "VmHWM"))/1024, "peak-rss-MB")
	if n := unexpected.Load(); n > 0 {
		b.Errorf("%d replies reached a chat that was not waiting for one", n)
	}
	r.stop(b)
	rmu.Lock()
	modelHolds := maps.Clone(holds)
	rmu.Unlock()
	writeFloodArtifacts(b, art, st, warm, samples, modelHolds, replies)
}

// writeFloodArtifacts leaves, beside the process's log, every ordinary
// reply's time (samples.csv: seconds since the start), the flooder's
// replies, and every run's times from the database (runs.csv), to find
// where a slow reply waited.
func writeFloodArtifacts(b *testing.B, dir string, st *store.Store, start time.Time, samples []sample,
	holds map[string]time.Duration, floodReplies []time.Time) {
	var sb strings.Builder
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	sb.WriteString("text,sent_s,latency_ms,model_ms,intake_ms,sent_at\n")
	for _, s := range samples {
		fmt.Fprintf(&sb, "%s,%.3f,%.1f,%.1f,%.1f,%s\n", s.text, s.sent.Sub(start).Seconds(),
			ms(s.latency), ms(holds[s.text]), ms(s.intake), s.sent.UTC().Format(time.RFC3339Nano))
	}
	require.NoError(b, os.WriteFile(filepath.Join(dir, "samples.csv"), []byte(sb.String()), 0o644))
	sb.Reset()
	for _, at := range floodReplies {
		fmt.Fprintf(&sb, "%.3f\n", at.Sub(start).Seconds())
	}
	require.NoError(b, os.WriteFile(filepath.Join(dir, "flooder-replies.txt"), []byte(sb.String()), 0o644))

	rows, err := st.DB().Raw(`SELECT r.id, c.channel_thread_id, r.kind, r.status, COALESCE(m.content, ''),
		COALESCE(m.created_at, ''), r.created_at, r.run_after, COALESCE(r.started_at, ''), COALESCE(r.finished_at, '')
		FROM runs r JOIN conversations c ON c.id = r.conversation_id LEFT JOIN messages m ON m.id = r.trigger_message_id
		ORDER BY r.id`).Rows()
	require.NoError(b, err)
	defer func() { _ = rows.Close() }()
	sb.Reset()
	sb.WriteString("id,thread,kind,status,trigger,message_at,created_at,run_after,started_at,finished_at\n")
	for rows.Next() {
		var col [10]string
		dest := make([]any, len(col))
		for i := range col {
			dest[i] = &col[i]
		}
		require.NoError(b, rows.Scan(dest...))
		sb.WriteString(strings.Join(col[:], ",") + "\n")
	}
	require.NoError(b, rows.Err())
	require.NoError(b, os.WriteFile(filepath.Join(dir, "runs.csv"), []byte(sb.String()), 0o644))
}

// floodConfig is the process's config: the defaults but for the fakes and
// runs.debounce; bot.limits are spelled out at their default, off.
// Telegram keeps its default send_rate (30 messages/s, 1/s per chat after
// a burst of 3): ordinary replies are 10/s at most.
func floodConfig(dsn, debounce, modelURL string, tg *telegramtest.Server) string {
	return fmt.Sprintf(`store:
  driver: sqlite
  dsn: %q
llm:
  base_url: %s
  api_key: load-key
  model: load-model
  timeout: 30s
runs:
  debounce: %s
  during_generation: queue
bot:
  limits: {messages_per_minute: 0, turns_per_day: 0, tokens_per_day: 0}
http:
  listen: 127.0.0.1:0
  api_token: ""
log:
  level: info
adapters:
  web: {enabled: false}
  telegram:
    token: %q
    api_url: %q
    mode: webhook
    webhook_secret: load-secret
`, dsn, modelURL, debounce, tg.Token(), tg.URL())
}

// floodConversation is the id of the conversation of Telegram user id.
func floodConversation(b *testing.B, st *store.Store, userID int64) int64 {
	var id int64
	require.NoError(b, st.DB().Raw(`SELECT id FROM conversations WHERE platform = 'telegram' AND channel_thread_id = ?`,
		strconv.FormatInt(userID, 10)).Row().Scan(&id))
	return id
}

// pendingRuns counts the conversation's queued and running runs.
func pendingRuns(b *testing.B, st *store.Store, conv int64) int {
	var n int
	require.NoError(b, st.DB().Raw(`SELECT COUNT(*) FROM runs WHERE conversation_id = ? AND status IN ('queued', 'running')`, conv).Row().Scan(&n))
	return n
}

// succeededRuns counts the conversation's finished turns.
func succeededRuns(b *testing.B, st *store.Store, conv int64) int {
	var n int
	require.NoError(b, st.DB().Raw(`SELECT COUNT(*) FROM runs WHERE conversation_id = ? AND status = 'succeeded'`, conv).Row().Scan(&n))
	return n
}

// procCPU is the user and system CPU time pid has used, from
// /proc/<pid>/stat (in clock ticks of 10 ms, Linux's USER_HZ); 0 if it
// cannot be read.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	// After the command: state is field 3, utime 14 and stime 15.
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
