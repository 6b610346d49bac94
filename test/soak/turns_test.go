//go:build linux

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// turnKill is one SIGKILL during turns and the replies the killed process
// had stored but not yet recorded sent (in doubt) at that instant.
type turnKill struct {
	n       int
	replica int
	at      time.Time
	inDoubt map[string]bool // reply texts
}

// Users write to two replicas on PostgreSQL (Telegram through the
// webhook, Discord through the gateway, which delivers DMs to shard 0)
// while a model that takes 400 ms answers, and replicas are killed with
// SIGKILL during turns and started again. Every reply is stored before it
// is sent, so no message that reached the store goes unanswered; Discord
// shows no reply twice (its nonce); Telegram shows at most
// scheduler.max_sends_in_doubt repeats per kill, each a reply the killed
// process had in doubt. A Discord DM the gateway gave to a process that
// was killed before it stored it is lost by the platform's design (the
// gateway never sends an event again) and is counted, not failed.
func TestSoakTurnsShortPostgres(t *testing.T) {
	storetest.NeedPostgres(t)
	const (
		replicas  = 2
		tgUsers   = 12
		dcUsers   = 12
		writeFor  = 12 * time.Second
		every     = 1500 * time.Millisecond
		kills     = 3
		maxDoubt  = 4
		settleFor = 60 * time.Second
	)
	seed := seedFromEnv(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x7a11))
	t.Logf("seed %d (PARLEY_SOAK_SEED=%d repeats the schedule)", seed, seed)
	bin := parleyBinary(t)
	dir := artifactDir(t)
	// Telegram takes 300 ms a call (the request arrives half way): a
	// reply is in doubt that long, and kills catch some.
	tg := telegramtest.NewServer(t, telegramtest.WithLatency(300*time.Millisecond))
	dc := discordtest.NewServer(t)
	dsn := storetest.PostgresDSN(t)
	st, err := store.Open(context.Background(), store.Options{Driver: store.DriverPostgres, DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(context.Background()))

	// Each answer names, with a number of its own, the user messages of
	// its prompt: a reply seen twice on a platform is a repeat, not a
	// second answer made.
	var mu sync.Mutex
	covers := map[string][]string{}
	var made atomic.Int64
	model := llmtest.NewServer(t, llmtest.WithLatency(400*time.Millisecond))
	userText := regexp.MustCompile(`^(tg|dc)\d+ m\d+$`)
	model.Respond(func(r llmtest.Request) llmtest.Response {
		var seen []string
		for _, m := range r.Messages() {
			if m.Role == "user" && userText.MatchString(m.Content) {
				seen = append(seen, m.Content)
			}
		}
		text := fmt.Sprintf("answer %d", made.Add(1))
		mu.Lock()
		covers[text] = seen
		mu.Unlock()
		return llmtest.Text(text)
	})

	var reps []*replica
	t.Cleanup(func() {
		for _, r := range reps {
			r.kill(t)
		}
	})
	for i := range replicas {
		cfg := filepath.Join(dir, fmt.Sprintf("replica-%d.yaml", i))
		require.NoError(t, os.WriteFile(cfg, []byte(turnsConfig(i, replicas, dsn, filepath.Join(dir, "spool"), model.URL(), tg, dc)), 0o600))
		r := newReplica(i, bin, cfg, filepath.Join(dir, fmt.Sprintf("replica-%d.log", i)))
		r.start(t)
		reps = append(reps, r)
	}
	dc.WaitReady(t, readyTimeout)

	// The users write, each every `every`, for writeFor.
	type sent struct{ text, chat string }
	var sentMu sync.Mutex
	var sentAll []sent
	var repsMu sync.Mutex // kills restart replicas: their addresses change
	liveAddr := func(i int) string {
		repsMu.Lock()
		defer repsMu.Unlock()
		for k := range reps {
			r := reps[(i+k)%len(reps)]
			if r.running() && r.addr != "" {
				return r.addr
			}
		}
		return ""
	}
	var wg sync.WaitGroup
	stopAt := time.Now().Add(writeFor)
	for u := range tgUsers {
		user := telegramtest.User{ID: 9_100_000 + int64(u), FirstName: fmt.Sprintf("T%d", u)}
		tg.StartedBy(user)
		wg.Go(func() {
			for m := 0; time.Now().Before(stopAt); m++ {
				text := fmt.Sprintf("tg%d m%d", u, m)
				body, err := json.Marshal(tg.SendPrivate(user, text))
				if err != nil {
					t.Error(err)
					return
				}
				// As Telegram does: a webhook that fails is posted again.
				for try := 0; ; try++ {
					if postWebhook(liveAddr(u+try), body) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				sentMu.Lock()
				sentAll = append(sentAll, sent{text, strconv.FormatInt(user.ID, 10)})
				sentMu.Unlock()
				time.Sleep(every)
			}
		})
	}
	for u := range dcUsers {
		user := discordtest.User{ID: fmt.Sprintf("32%016d", u), Username: fmt.Sprintf("d%d", u)}
		wg.Go(func() {
			for m := 0; time.Now().Before(stopAt); m++ {
				text := fmt.Sprintf("dc%d m%d", u, m)
				ch, _ := dc.SendDM(user, text)
				sentMu.Lock()
				sentAll = append(sentAll, sent{text, ch})
				sentMu.Unlock()
				time.Sleep(every)
			}
		})
	}

	// Kills come while turns run: a replica is frozen as soon as it has a
	// reply stored and not yet recorded sent (or after 3 s), the replies
	// it has in doubt are read, and it is killed.
	inDoubt := func(r *replica) int {
		var n int
		require.NoError(t, st.DB().Raw(`SELECT count(*) FROM messages m JOIN runs x ON x.id = m.run_id
			WHERE m.delivery = 'sending' AND x.owner LIKE ?`, r.ownerPrefix()+"%").Row().Scan(&n))
		return n
	}
	var killed []turnKill
	time.Sleep(2 * time.Second)
	for n := 1; n <= kills; n++ {
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		repsMu.Lock()
		r := reps[rng.IntN(len(reps))]
		repsMu.Unlock()
		for until := time.Now().Add(3 * time.Second); inDoubt(r) == 0 && time.Now().Before(until); {
			time.Sleep(10 * time.Millisecond)
		}
		require.NoError(t, r.freeze())
		k := turnKill{n: n, replica: r.idx, inDoubt: inDoubtOf(t, st, r.ownerPrefix())}
		k.at = time.Now()
		repsMu.Lock()
		r.kill(t)
		r.start(t)
		repsMu.Unlock()
		t.Logf("kill %d: replica %d with %d repl(ies) in doubt", n, r.idx, len(k.inDoubt))
		killed = append(killed, k)
	}
	wg.Wait()

	// Every user message that reached the store is answered by a reply
	// that reached its chat.
	// delivered maps each reply text that reached a chat to its copies,
	// per platform.
	delivered := func() (tgGot, dcGot map[string]int) {
		tgGot, dcGot = map[string]int{}, map[string]int{}
		for _, m := range tg.AllSent() {
			tgGot[m.Plain]++
		}
		for _, m := range dc.AllSent() {
			// A half-grown reply a killed process left is deleted by the
			// next one: the user is left with the reply once.
			if !m.Deleted {
				dcGot[m.Content]++
			}
		}
		return tgGot, dcGot
	}
	storedUser := func() map[string]bool {
		out := map[string]bool{}
		rows, err := st.DB().Raw(`SELECT content FROM messages WHERE role = 'user'`).Rows()
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var c string
			require.NoError(t, rows.Scan(&c))
			out[c] = true
		}
		return out
	}
	unanswered := func() []string {
		tgGot, dcGot := delivered()
		mu.Lock()
		answered := map[string]bool{}
		for _, got := range []map[string]int{tgGot, dcGot} {
			for reply := range got {
				for _, u := range covers[reply] {
					answered[u] = true
				}
			}
		}
		mu.Unlock()
		var open []string
		for u := range storedUser() {
			if !answered[u] {
				open = append(open, u)
			}
		}
		sort.Strings(open)
		return open
	}
	deadline := time.Now().Add(settleFor)
	for len(unanswered()) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	for _, r := range reps {
		r.stop(t)
	}

	lost := unanswered()
	stored := storedUser()
	var inboundLost []string
	for _, s := range sentAll {
		if !stored[s.text] {
			inboundLost = append(inboundLost, s.text)
		}
	}
	tgGot, dcGot := delivered()
	var doubt []map[string]bool
	for _, k := range killed {
		doubt = append(doubt, k.inDoubt)
	}
	tgRepeats, dcRepeats, unexplained := countRepeats(tgGot), countRepeats(dcGot), chargeRepeats(tgGot, doubt, maxDoubt)
	report := fmt.Sprintf("turn soak (seed %d): %d user messages sent, %d stored (%d Discord DMs lost with a killed gateway connection: %v),\n"+
		"%d answers made, %d delivered; %d kills; stored messages unanswered: %d %v;\n"+
		"repeats: Telegram %d (at most %d per kill), Discord %d; repeats the kills' replies in doubt do not explain: %v\n",
		seed, len(sentAll), len(stored), len(inboundLost), inboundLost, made.Load(), len(tgGot)+len(dcGot), len(killed), len(lost), lost,
		tgRepeats, maxDoubt, dcRepeats, unexplained)
	for _, k := range killed {
		report += fmt.Sprintf("kill %d: replica %d at %s, %d repl(ies) in doubt\n", k.n, k.replica, k.at.Format(time.RFC3339Nano), len(k.inDoubt))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.txt"), []byte(report), 0o644))
	t.Log(report)

	require.Empty(t, lost, "a stored user message was never answered")
	var dcTwice []string
	for text, n := range dcGot {
		if n > 1 {
			dcTwice = append(dcTwice, text)
		}
	}
	require.Zero(t, dcRepeats, "Discord showed a reply twice: %q", dcTwice)
	require.Empty(t, unexplained,
		"Telegram repeats that the kills' replies in doubt cannot explain at max_sends_in_doubt per kill")
	for _, l := range inboundLost {
		require.True(t, strings.HasPrefix(l, "dc"), "%q was lost before the store: only a Discord gateway event may be", l)
	}
}

// turnsConfig is replica i's config: Telegram by webhook (any replica),
// Discord shard i (DMs come to shard 0), a short stale_after so that a
// replica that is not restarted is noticed soon.
func turnsConfig(i, replicas int, dsn, spoolDir, modelURL string, tg *telegramtest.Server, dc *discordtest.Server) string {
	return fmt.Sprintf(`store:
  driver: postgres
  dsn: %q
  spool: {dir: %q}
llm:
  base_url: %s
  api_key: soak-key
  model: soak-model
  timeout: 5s
http:
  listen: 127.0.0.1:0
  api_token: ""
log:
  level: info
runs:
  debounce: 0s
  stale_after: 10s
plugins:
  memory: {enabled: false}
adapters:
  web: {enabled: false}
  telegram:
    token: %q
    api_url: %q
    mode: webhook
    webhook_secret: turns-secret
    format: plain
  discord:
    token: %q
    api_url: %q
    shard_id: %d
    shard_count: %d
`, dsn, spoolDir, modelURL, tg.Token(), tg.URL(), dc.Token(), dc.URL(), i, replicas)
}

// postWebhook posts a Telegram update to addr and reports whether it was
// taken (200).
func postWebhook(addr string, body []byte) bool {
	if addr == "" {
		return false
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/telegram", bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "turns-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
