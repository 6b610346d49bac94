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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// params sizes one soak run; the short and the long form differ only here.
type params struct {
	driver        string // store.DriverSQLite or store.DriverPostgres
	replicas      int
	conversations int // half on Telegram, half on Discord
	jobs          int
	// dueWindow: the jobs fall due evenly over it, from dueLead after
	// seeding starts (long enough to seed and start the replicas).
	dueWindow time.Duration
	dueLead   time.Duration
	kills     int
	// killGap is drawn uniformly between a replica being up again and the
	// next kill.
	killGap [2]time.Duration
	// jobLease is scheduler.job_lease.
	jobLease time.Duration
	// faultGap is drawn uniformly: how many sends of a platform pass
	// between two injected faults.
	faultGap [2]int
	// settle bounds how long, after the last kill and the last due time,
	// every job may take to be sent or failed (leases included).
	settle  time.Duration
	seeders int
}

// conv is a seeded conversation and where its messages arrive on the fake.
type conv struct {
	id       int64
	platform core.Platform
	chat     string // Telegram chat id or Discord DM channel id
}

// seeded is a seeded message job.
type seeded struct {
	id   int64
	conv int // index in the conversations
	text string
	due  time.Time
}

// kill is one SIGKILL and what the database showed the killed replica
// holding at that instant (the replica was frozen with SIGSTOP first).
type kill struct {
	n        int
	replica  int
	pid      int
	at       time.Time // SIGKILL
	upAgain  time.Time // the restarted replica serves again
	inFlight []int64   // jobs sending under the killed process's lease
	// leaseEnd is each in-flight job's lease end: until then no other
	// process may send it, so a delivery before it is the killed one's
	// (a request it had written may reach the platform after the kill).
	leaseEnd map[int64]time.Time
}

// bundle is one soak run's world.
type bundle struct {
	p      params
	seed   uint64
	rng    *rand.Rand
	dir    string // artifacts: logs, configs, report
	tg     *telegramtest.Server
	dc     *discordtest.Server
	model  *llmtest.Server
	st     *store.Store
	dsn    string
	reps   []*replica
	convs  []conv
	jobs   []seeded // by index; id set once seeded
	start  time.Time
	kills  []kill
	faults *injector

	seededIn time.Duration // how long seeding the jobs took
	loadAt   string        // the 1-minute load average when the run began
}

// soak runs one soak with p and checks and reports its outcome.
func soak(t *testing.T, p params) {
	if p.driver == store.DriverPostgres {
		storetest.NeedPostgres(t)
	}
	b := &bundle{p: p, loadAt: loadAverage()}
	b.seed = seedFromEnv(t)
	b.rng = rand.New(rand.NewPCG(b.seed, b.seed^0x5eed))
	t.Logf("seed %d (rerun the same kill and fault schedule with PARLEY_SOAK_SEED=%d)", b.seed, b.seed)
	bin := parleyBinary(t)
	b.dir = artifactDir(t)

	// Cleanups run last-in first-out: the replicas die first, then the
	// store closes, then the schema and the fakes go.
	b.tg = telegramtest.NewServer(t)
	b.dc = discordtest.NewServer(t)
	b.model = llmtest.NewServer(t)
	switch p.driver {
	case store.DriverPostgres:
		b.dsn = storetest.PostgresDSN(t)
	default:
		b.dsn = filepath.Join(t.TempDir(), "parley.db")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: p.driver, DSN: b.dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(ctx))
	b.st = st

	b.seedConversations(t)
	// The jobs exist before the replicas start: seeding 10,000 through the
	// store beside three busy replicas takes longer than the 10 s they are
	// due in. They fall due from dueLead after seeding starts.
	b.start = time.Now()
	require.NoError(t, b.seedJobs(ctx), "seeding")
	t.Logf("%d jobs seeded in %v", p.jobs, b.seededIn.Round(time.Millisecond))
	for i := range p.replicas {
		cfg := filepath.Join(b.dir, fmt.Sprintf("replica-%d.yaml", i))
		require.NoError(t, os.WriteFile(cfg, []byte(b.config(i)), 0o600))
		b.reps = append(b.reps, newReplica(i, bin, cfg, filepath.Join(b.dir, fmt.Sprintf("replica-%d.log", i))))
	}
	t.Cleanup(func() {
		for _, r := range b.reps {
			r.kill(t)
		}
	})
	for _, r := range b.reps {
		r.start(t)
	}
	t.Logf("%d replica(s) up; logs in %s", len(b.reps), b.dir)

	if up := time.Since(b.start); up > p.dueLead {
		t.Logf("the replicas served %v after seeding began, after the first job was due (+%v)", up.Round(time.Millisecond), p.dueLead)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	b.faults = newInjector(b.tg, b.dc, p.faultGap, b.rng.Uint64())
	faultsDone := make(chan struct{})
	go func() { defer close(faultsDone); b.faults.run(runCtx) }()

	// The kills are a schedule, not waits for a condition: the first comes
	// a drawn gap after the first job is due, each next one a drawn gap
	// after the killed replica serves again.
	time.Sleep(time.Until(b.start.Add(p.dueLead)))
	for n := range p.kills {
		gap := p.killGap[0] + time.Duration(b.rng.Int64N(int64(p.killGap[1]-p.killGap[0])+1))
		r := b.reps[b.rng.IntN(len(b.reps))]
		time.Sleep(gap)
		b.killAndRestart(t, n+1, r)
	}
	lastDue := b.jobs[len(b.jobs)-1].due
	deadline := lastDue
	if k := time.Now(); k.After(deadline) {
		deadline = k
	}
	b.waitSettled(t, deadline.Add(p.settle))
	stopRun()
	<-faultsDone
	for _, r := range b.reps {
		r.stop(t)
	}
	b.report(t)
}

// loadAverage is the machine's 1-minute load average, for the report: the
// figures mean little if something else kept the cores busy.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// seedFromEnv is PARLEY_SOAK_SEED, else a fresh seed.
func seedFromEnv(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("PARLEY_SOAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "PARLEY_SOAK_SEED")
		return v
	}
	return uint64(time.Now().UnixNano())
}

// config is replica i's parley config: the shared store, its own HTTP
// port, both fakes, Telegram in webhook mode (polling allows one consumer
// and refuses on a second replica), Discord shard i of all of them, and a
// short job lease so that a killed replica's jobs are taken over soon.
func (b *bundle) config(i int) string {
	return fmt.Sprintf(`store:
  driver: %s
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
adapters:
  web: {enabled: false}
  telegram:
    token: %q
    api_url: %q
    mode: webhook
    webhook_secret: soak-secret-%d
  discord:
    token: %q
    api_url: %q
    shard_id: %d
    shard_count: %d
scheduler:
  job_lease: %s
  max_pending_per_conversation: %d
`, b.p.driver, b.dsn, filepath.Join(b.dir, "spool"), b.model.URL(), b.tg.Token(), b.tg.URL(), i, b.dc.Token(), b.dc.URL(), i, b.p.replicas,
		b.p.jobLease, b.p.jobs+1)
}

// seedConversations creates the conversations: users the fakes know (a
// Telegram user who started the bot, a Discord user with an open DM
// channel) and their conversations in the store.
func (b *bundle) seedConversations(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	nTG := b.p.conversations / 2
	for i := range b.p.conversations {
		var ref core.InboundRecord
		if i < nTG {
			u := telegramtest.User{ID: 7_000_000 + int64(i), FirstName: fmt.Sprintf("Tg%d", i)}
			b.tg.StartedBy(u)
			id := strconv.FormatInt(u.ID, 10)
			ref = core.InboundRecord{Platform: telegram.Platform, ChannelThreadID: id, ChannelUserID: id, DisplayName: u.FirstName}
		} else {
			u := discordtest.User{ID: fmt.Sprintf("31%016d", i), Username: fmt.Sprintf("dc%d", i)}
			b.dc.AddUser(u)
			ref = core.InboundRecord{Platform: discord.Platform, ChannelThreadID: b.openDM(t, u.ID), ChannelUserID: u.ID, DisplayName: u.Username}
		}
		ref.TimeZone = "UTC"
		c, err := b.st.EnsureConversation(ctx, ref)
		require.NoError(t, err)
		b.convs = append(b.convs, conv{id: c.ID, platform: ref.Platform, chat: ref.ChannelThreadID})
	}
}

// openDM opens the bot's DM channel with a Discord user on the fake, as
// the adapter would (POST /users/@me/channels).
func (b *bundle) openDM(t *testing.T, userID string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"recipient_id": userID})
	req, err := http.NewRequest(http.MethodPost, b.dc.URL()+"/api/v9/users/@me/channels", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bot "+b.dc.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ch struct{ ID string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ch))
	require.NotEmpty(t, ch.ID)
	return ch.ID
}

// seedJobs schedules the message jobs through the store: job i goes to
// conversation i mod C, with the unique text "soak job <i>", due evenly
// over the due window.
func (b *bundle) seedJobs(ctx context.Context) error {
	t0 := b.start.Add(b.p.dueLead)
	b.jobs = make([]seeded, b.p.jobs)
	for i := range b.jobs {
		b.jobs[i] = seeded{conv: i % len(b.convs), text: fmt.Sprintf("soak job %d", i),
			due: t0.Add(time.Duration(int64(b.p.dueWindow) * int64(i) / int64(b.p.jobs)))}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, b.p.seeders)
	for range b.p.seeders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(b.jobs) || ctx.Err() != nil {
					return
				}
				s := &b.jobs[i]
				j := &core.Job{ConversationID: b.convs[s.conv].id, Text: s.text, Name: "scheduled message",
					DueAt: s.due, Origin: "tool"}
				if _, err := b.st.ScheduleMessage(ctx, j, false, b.p.jobs+1); err != nil {
					errs <- fmt.Errorf("scheduling job %d: %w", i, err)
					return
				}
				s.id = j.ID
			}
		}()
	}
	wg.Wait()
	b.seededIn = time.Since(b.start)
	close(errs)
	return <-errs
}

// killAndRestart freezes r, records the jobs its process holds in the
// database at that instant, kills it with SIGKILL and starts it again.
func (b *bundle) killAndRestart(t *testing.T, n int, r *replica) {
	t.Helper()
	k := kill{n: n, replica: r.idx, pid: r.pid(), leaseEnd: map[int64]time.Time{}}
	require.NoError(t, r.freeze())
	sending, err := b.st.Jobs(context.Background(), 0, core.JobSending, 1_000_000)
	if err != nil {
		r.kill(t)
		require.NoError(t, err, "reading the jobs in flight at kill %d", n)
	}
	for _, j := range sending {
		switch {
		case r.owns(j.Owner):
			k.inFlight = append(k.inFlight, j.ID)
			if j.LeaseUntil != nil {
				k.leaseEnd[j.ID] = *j.LeaseUntil
			}
		case !b.ownedByAReplica(j.Owner):
			r.kill(t)
			t.Fatalf("job %d is sending under owner %q, which is no replica's: has core's owner id format (host-pid-random) changed?", j.ID, j.Owner)
		}
	}
	k.at = time.Now()
	r.kill(t)
	t.Logf("kill %d: replica %d (pid %d, start %d) at +%v with %d job(s) in flight",
		n, r.idx, k.pid, r.gen, k.at.Sub(b.start).Round(time.Millisecond), len(k.inFlight))
	r.start(t)
	k.upAgain = time.Now()
	b.kills = append(b.kills, k)
}

// ownedByAReplica reports whether owner is a running replica's, or an
// earlier process of one (a lease a killed process left behind).
func (b *bundle) ownedByAReplica(owner string) bool {
	for _, r := range b.reps {
		if r.owns(owner) {
			return true
		}
	}
	for _, k := range b.kills {
		if strings.HasPrefix(owner, fmt.Sprintf("%s-%d-", b.reps[k.replica].host, k.pid)) {
			return true
		}
	}
	return false
}

// waitSettled waits until every seeded job is sent, failed or cancelled.
func (b *bundle) waitSettled(t *testing.T, deadline time.Time) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		counts, err := b.st.JobCounts(context.Background())
		require.NoError(t, err)
		open := counts[[2]string{string(core.JobMessage), string(core.JobPending)}] +
			counts[[2]string{string(core.JobMessage), string(core.JobSending)}]
		if open == 0 {
			t.Logf("settled at +%v", time.Since(b.start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("jobs not settled by the deadline (+%v): %v", deadline.Sub(b.start).Round(time.Second), counts)
			return
		}
		<-tick.C
	}
}
