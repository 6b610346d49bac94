//go:build linux

package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// delivery is one message the fakes recorded for a job's text.
type delivery struct {
	at    time.Time
	chat  string
	msgID string
}

// outcome is what the run did, checked and printed by report.
type outcome struct {
	delivered [][]delivery // by job index, in arrival order

	stray, wrongChat int
	early            []int // delivered before they were due
	lost             []int // job indexes sent in the database, never delivered
	open             []int // still pending or sending
	cancelled        []int
	failed           map[string]int // last_error → count
	failedNoReason   []int
	failedDelivered  int

	tgDup, dcDup    int
	tgExplained     int
	tgUnexplained   []string
	dupPerKill      []int // Telegram duplicates attributed to each kill
	dcNonceReplays  int   // in flight at a kill, delivered before it, and completed with the first message's id
	windowPerKill   []int // in flight at a kill and already delivered before it
	settledPerKill  []time.Duration
	nextSendPerKill []time.Duration
	rateBackPerKill []time.Duration // -1: not measured (idle before, or the jobs ran out)

	firstDue, lastFirst time.Time
	sentPerSec, peak    float64
	late                []time.Duration
}

// report reads the jobs table and the fakes, prints the figures, writes
// them to the artifacts folder, and then asserts the promises.
func (b *bundle) report(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rows, err := b.st.Jobs(ctx, 0, "", 2*b.p.jobs+100)
	require.NoError(t, err)
	byID := make(map[int64]core.Job, len(rows))
	for _, j := range rows {
		byID[j.ID] = j
	}
	o := b.analyse(byID)
	text := b.render(o)
	t.Log("\n" + text)
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "timeline.csv"), []byte(b.timeline(o)), 0o644))
	path := filepath.Join(b.dir, "report.md")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	t.Logf("report written to %s", path)

	require.Zero(t, o.stray, "messages whose text is no job's")
	require.Zero(t, o.wrongChat, "job texts delivered to another conversation's chat")
	require.Empty(t, o.early, "jobs delivered before they were due (job indexes)")
	require.Empty(t, o.open, "jobs still pending or sending after the run settled (job indexes)")
	require.Empty(t, o.cancelled, "jobs cancelled (nothing cancels them in this run)")
	require.Empty(t, o.lost, "LOST: jobs marked sent whose text never arrived (job indexes)")
	require.Empty(t, o.failedNoReason, "failed jobs without a last_error (job indexes)")
	require.Zero(t, o.dcDup, "Discord duplicates: the nonce job-<id> should make Discord drop a resend")
	// Every Telegram duplicate is a job a crash caught between Telegram's
	// answer and its commit, and each process has at most
	// scheduler.max_sends_in_doubt such sends at a time (the replicas run
	// with the default): that many per crash at most.
	inDoubt := config.Default().Scheduler.MaxSendsInDoubt
	for k, n := range o.dupPerKill {
		require.LessOrEqual(t, n, inDoubt, "Telegram duplicates from kill %d (of replica %d): max_sends_in_doubt %d allows %d",
			k+1, b.kills[k].replica, inDoubt, inDoubt)
	}
	outlived := 0
	for _, r := range b.reps {
		outlived += r.logHas("sent after its lease ran out")
	}
	require.Empty(t, o.tgUnexplained, "Telegram duplicates not explained by a job a kill caught after it reached Telegram "+
		"(%d sends outlived their lease: a send slower than the lease's margin is claimed and sent again)", outlived)
	for _, r := range b.reps {
		require.Zero(t, r.logHas("panic:"), "a panic in %s", r.logPath)
	}
}

// analyse matches the fakes' records with the jobs.
func (b *bundle) analyse(byID map[int64]core.Job) *outcome {
	o := &outcome{delivered: make([][]delivery, len(b.jobs)), failed: map[string]int{}}
	byText := make(map[string]int, len(b.jobs))
	for i, s := range b.jobs {
		byText[s.text] = i
	}
	add := func(text string, d delivery) {
		i, ok := byText[text]
		if !ok {
			o.stray++
			return
		}
		if d.chat != b.convs[b.jobs[i].conv].chat {
			o.wrongChat++
			return
		}
		o.delivered[i] = append(o.delivered[i], d)
	}
	for _, m := range b.tg.AllSent() {
		add(m.Text, delivery{at: m.At, chat: strconv.FormatInt(m.ChatID, 10), msgID: strconv.Itoa(m.MessageID)})
	}
	for _, m := range b.dc.AllSent() {
		add(m.Content, delivery{at: m.At, chat: m.ChannelID, msgID: m.MessageID})
	}

	inFlightAt := map[int64][]int{} // job id → kills (0-based) it was in flight at
	for k, kl := range b.kills {
		for _, id := range kl.inFlight {
			inFlightAt[id] = append(inFlightAt[id], k)
		}
	}
	// window lists the kills that caught job i in flight after it had
	// reached the platform: the process died between the platform's
	// answer and recording the job sent, so the next one sends it again.
	window := func(i int, id int64) []int {
		var ks []int
		for _, k := range inFlightAt[id] {
			if b.deliveredByKilled(o.delivered[i], b.kills[k], id) {
				ks = append(ks, k)
			}
		}
		return ks
	}
	o.dupPerKill = make([]int, len(b.kills))
	var firsts []time.Time
	o.firstDue = b.jobs[0].due
	for i, s := range b.jobs {
		j := byID[s.id]
		got := o.delivered[i]
		if len(got) > 0 {
			firsts = append(firsts, got[0].at)
			o.late = append(o.late, got[0].at.Sub(s.due))
			if got[0].at.Before(s.due.Add(-time.Millisecond)) {
				o.early = append(o.early, i)
			}
			if got[0].at.After(o.lastFirst) {
				o.lastFirst = got[0].at
			}
		}
		switch j.Status {
		case core.JobSent:
			if len(got) == 0 {
				o.lost = append(o.lost, i)
			}
		case core.JobFailed:
			if j.LastError == "" {
				o.failedNoReason = append(o.failedNoReason, i)
			}
			o.failed[j.LastError]++
			if len(got) > 0 {
				o.failedDelivered++
			}
		case core.JobCancelled:
			o.cancelled = append(o.cancelled, i)
		default:
			o.open = append(o.open, i)
		}
		if len(got) <= 1 {
			continue
		}
		extra := len(got) - 1
		if b.convs[s.conv].platform == discord.Platform {
			o.dcDup += extra
			continue
		}
		o.tgDup += extra
		// Each extra copy needs its own kill that caught the job in the
		// window: at most one duplicate per job per crash.
		kills := window(i, s.id)
		if len(kills) < extra {
			var at []string
			for _, d := range got {
				at = append(at, "+"+d.at.Sub(b.start).Round(time.Millisecond).String())
			}
			o.tgUnexplained = append(o.tgUnexplained, fmt.Sprintf("job %d (%q) delivered %d times at %s; in flight at %d kill(s), %d of them after the killed process had sent it",
				s.id, s.text, len(got), strings.Join(at, ", "), len(inFlightAt[s.id]), len(kills)))
			continue
		}
		o.tgExplained += extra
		for _, k := range kills[:extra] {
			o.dupPerKill[k]++
		}
	}
	slices.SortFunc(firsts, func(a, b time.Time) int { return a.Compare(b) })
	if span := o.lastFirst.Sub(o.firstDue); span > 0 {
		o.sentPerSec = float64(len(firsts)) / span.Seconds()
	}
	for i, j := 0, 0; i < len(firsts); i++ {
		for firsts[i].Sub(firsts[j]) >= time.Second {
			j++
		}
		o.peak = max(o.peak, float64(i-j+1))
	}

	idx := make(map[int64]int, len(b.jobs))
	for i, s := range b.jobs {
		idx[s.id] = i
	}
	for _, kl := range b.kills {
		window, replays := 0, 0
		var settled time.Time
		for _, id := range kl.inFlight {
			j, i := byID[id], idx[id]
			at := j.UpdatedAt
			if j.SentAt != nil {
				at = *j.SentAt
			}
			if at.After(settled) {
				settled = at
			}
			got := o.delivered[i]
			// Delivered by the killed process and not recorded by it (a
			// commit already on its way to PostgreSQL at the freeze lands
			// with a time before the kill): the next owner sends it again.
			if b.deliveredByKilled(got, kl, id) && !at.Before(kl.at) {
				window++
				// Discord answered the resend with the message it had.
				if b.convs[b.jobs[i].conv].platform == discord.Platform && len(got) == 1 && j.PlatformMessageID == got[0].msgID {
					replays++
				}
			}
		}
		o.windowPerKill = append(o.windowPerKill, window)
		o.dcNonceReplays += replays
		if len(kl.inFlight) > 0 {
			// 0 when all were settled at the kill: their completion had
			// reached the database before the process died.
			o.settledPerKill = append(o.settledPerKill, max(settled.Sub(kl.at), 0))
		} else {
			o.settledPerKill = append(o.settledPerKill, -1)
		}
		next := sort.Search(len(firsts), func(i int) bool { return firsts[i].After(kl.at) })
		if next < len(firsts) {
			o.nextSendPerKill = append(o.nextSendPerKill, firsts[next].Sub(kl.at))
		} else {
			o.nextSendPerKill = append(o.nextSendPerKill, -1)
		}
		o.rateBackPerKill = append(o.rateBackPerKill, rateBack(firsts, kl.at))
	}
	return o
}

// deliveredByKilled reports whether a job in flight at kill k reached its
// chat from the killed process: a delivery during the lease it held (from
// its claim, job_lease before the lease's end, to that end), when no other
// process may send the job.
func (b *bundle) deliveredByKilled(got []delivery, k kill, id int64) bool {
	end, ok := k.leaseEnd[id]
	if !ok {
		return false
	}
	start := end.Add(-b.p.jobLease)
	for _, d := range got {
		if !d.at.Before(start) && d.at.Before(end) {
			return true
		}
	}
	return false
}

// rateBack is how long after a kill at the send rate over half a second is
// back to 80% of the rate in the second before it; -1 when there was
// little to send before the kill (under 20/s) or it never is (the jobs ran
// out first).
func rateBack(firsts []time.Time, at time.Time) time.Duration {
	count := func(from, to time.Time) int {
		a := sort.Search(len(firsts), func(i int) bool { return !firsts[i].Before(from) })
		z := sort.Search(len(firsts), func(i int) bool { return !firsts[i].Before(to) })
		return z - a
	}
	before := count(at.Add(-time.Second), at)
	if before < 20 {
		return -1
	}
	const window = 500 * time.Millisecond
	need := 0.8 * float64(before) * window.Seconds()
	for d := time.Duration(0); ; d += 10 * time.Millisecond {
		from := at.Add(d)
		if len(firsts) == 0 || from.After(firsts[len(firsts)-1]) {
			return -1
		}
		if float64(count(from, from.Add(window))) >= need {
			return d
		}
	}
}

// render writes the figures as Markdown, ready for BENCHMARKS.md.
func (b *bundle) render(o *outcome) string {
	var w strings.Builder
	p := b.p
	nTG := p.conversations / 2
	fmt.Fprintf(&w, "### %s\n\n", b.title())
	fmt.Fprintf(&w, "%s, seed %d; %d replica(s) of `parley run` on %s, killed with SIGKILL %d times (a random replica, then restarted); scheduler.job_lease %v; "+
		"%d cores, 1-minute load average %s at the start, %s at the end.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), b.seed, p.replicas, p.driver, len(b.kills), p.jobLease, runtime.NumCPU(), b.loadAt, loadAverage())
	w.WriteString("| figure | value |\n|---|---|\n")
	row := func(k, format string, args ...any) {
		fmt.Fprintf(&w, "| %s | "+format+" |\n", append([]any{k}, args...)...)
	}
	row("message jobs / conversations", "%d over %d (%d Telegram, %d Discord), due within %v", p.jobs, p.conversations, nTG, p.conversations-nTG, p.dueWindow)
	row("faults injected", "Telegram %d × 429 (retry_after 1 s), %d × 500; Discord %d × 429 (0.1–1 s), %d × 500/503",
		b.faults.tg429, b.faults.tg5xx, b.faults.dc429, b.faults.dc5xx)
	row("seeding (store, before the replicas start)", "%d jobs in %v", p.jobs, b.seededIn.Round(time.Millisecond))
	row("sent/s", "%.0f (first due → last job's first delivery: %v)", o.sentPerSec, o.lastFirst.Sub(o.firstDue).Round(time.Millisecond))
	row("peak sent/s (1 s window)", "%.0f", o.peak)
	row("lateness (first delivery − due) p50 / p99 / max", "%s / %s / %s", pct(o.late, 50), pct(o.late, 99), pct(o.late, 100))
	row("**lost**", "**%d**", len(o.lost))
	row("**duplicates, Discord**", "**%d** (resends answered by the nonce with the first message: %d)", o.dcDup, o.dcNonceReplays)
	row("**duplicates, Telegram**", "**%d** (explained by a job a kill caught after Telegram had it: %d; most at one kill: %d)", o.tgDup, o.tgExplained, slices.Max(append([]int{0}, o.dupPerKill...)))
	nFailed := 0
	for _, n := range o.failed {
		nFailed += n
	}
	row("ended sent / failed / other", "%d / %d / %d", p.jobs-nFailed-len(o.open)-len(o.cancelled), nFailed, len(o.open)+len(o.cancelled))
	if nFailed > 0 {
		var rs []string
		for r, n := range o.failed {
			rs = append(rs, fmt.Sprintf("%d × %q", n, r))
		}
		sort.Strings(rs)
		row("failed, with reason", "%s (delivered anyway: %d)", strings.Join(rs, "; "), o.failedDelivered)
	}
	row("recovery: kill → its in-flight jobs all settled, median / max", "%s / %s", pctKnown(o.settledPerKill, 50), pctKnown(o.settledPerKill, 100))
	row("recovery: kill → next delivery, median / max", "%s / %s", pctKnown(o.nextSendPerKill, 50), pctKnown(o.nextSendPerKill, 100))
	row("recovery: kill → send rate back to 80%, median / max", "%s / %s", pctKnown(o.rateBackPerKill, 50), pctKnown(o.rateBackPerKill, 100))
	outlived, handed := 0, 0
	for _, r := range b.reps {
		outlived += r.logHas("sent after its lease ran out")
		handed += r.logHas("lease ran out before the send") + r.logHas("outlasted its lease; handed back")
	}
	row("sends that outlived their lease / handed back unsent (replica logs)", "%d / %d", outlived, handed)
	row("model calls", "%d", len(b.model.Requests()))

	w.WriteString("\n| kill | at | replica | in flight | of them already delivered | Telegram duplicates | in flight settled | next delivery | rate back | restarted in |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i, k := range b.kills {
		fmt.Fprintf(&w, "| %d | +%v | %d | %d | %d | %d | %s | %s | %s | %v |\n", k.n, k.at.Sub(b.start).Round(time.Millisecond), k.replica,
			len(k.inFlight), o.windowPerKill[i], o.dupPerKill[i], dur(o.settledPerKill[i]), dur(o.nextSendPerKill[i]),
			dur(o.rateBackPerKill[i]), k.upAgain.Sub(k.at).Round(time.Millisecond))
	}
	w.WriteString("\nIn flight: jobs `sending` under the killed process's lease, read while it was frozen (SIGSTOP) just before the SIGKILL; " +
		"already delivered: of them, the ones the killed process had got to the platform (a delivery during its lease on the job) but not recorded sent. " +
		"Settled: the last of them marked sent (or failed), which waits for the lease to run out. Rate back: the first half-second after the kill " +
		"with at least 80% of the send rate of the second before it (— when nothing was due then, or the jobs ran out).\n")
	if len(o.tgUnexplained) > 0 {
		w.WriteString("\nUnexplained Telegram duplicates:\n")
		for _, u := range o.tgUnexplained {
			w.WriteString("- " + u + "\n")
		}
	}
	return w.String()
}

func (b *bundle) title() string {
	if b.p.driver == store.DriverPostgres {
		return fmt.Sprintf("Soak on PostgreSQL: %d replicas, %d jobs, %d kills", b.p.replicas, b.p.jobs, len(b.kills))
	}
	return fmt.Sprintf("Soak on SQLite: one process, %d jobs, %d kills", b.p.jobs, len(b.kills))
}

func dur(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return d.Round(time.Millisecond).String()
}

// pct is the p-th percentile of ds (100: the maximum).
func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, len(s)*p/100)
	return dur(s[i])
}

// pctKnown is pct over the measured values (the ones not -1).
func pctKnown(ds []time.Duration, p int) string {
	var known []time.Duration
	for _, d := range ds {
		if d >= 0 {
			known = append(known, d)
		}
	}
	return pct(known, p)
}

// timeline is a CSV, per 100 ms since the run started, of the jobs that
// fell due and the jobs first delivered then, with the kills marked.
func (b *bundle) timeline(o *outcome) string {
	const step = 100 * time.Millisecond
	slot := func(at time.Time) int { return max(0, int(at.Sub(b.start)/step)) }
	n := 0
	for i, s := range b.jobs {
		n = max(n, slot(s.due)+1)
		if got := o.delivered[i]; len(got) > 0 {
			n = max(n, slot(got[0].at)+1)
		}
	}
	due, sent, kills := make([]int, n), make([]int, n), make([]string, n)
	for i, s := range b.jobs {
		due[slot(s.due)]++
		if got := o.delivered[i]; len(got) > 0 {
			sent[slot(got[0].at)]++
		}
	}
	for _, k := range b.kills {
		if i := slot(k.at); i < n {
			kills[i] += fmt.Sprintf("kill %d (replica %d) ", k.n, k.replica)
		}
	}
	var w strings.Builder
	w.WriteString("t_seconds,due,first_delivered,event\n")
	for i := range n {
		fmt.Fprintf(&w, "%.1f,%d,%d,%s\n", float64(i)*step.Seconds(), due[i], sent[i], strings.TrimSpace(kills[i]))
	}
	return w.String()
}
