package jobs

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/parleybot/parley/core"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Scheduled private messages (JobMessage): the model wrote the text when
// it scheduled it; at the due time it is sent verbatim, with no model
// call, through the conversation's adapter, and stored in the
// conversation with source scheduled_send, so the next turn sees it. It is
// not user input: it plans no turn, so there is no reply loop.

// sendConcurrency bounds how many conversations' scheduled messages are
// sent at once to one platform; their writes share group commits (10,000
// due in one second go out in about one; see BENCHMARKS.md). A platform
// without idempotent sends has fewer at once: its doubt slots.
const sendConcurrency = 64

// leaseMargin is how much of its lease a claimed job must have left to be
// sent: a send may take up to a platform's timeout. A fifth of the lease,
// at most a minute, so that a short lease (a fast take-over) still sends.
func (e *Engine) leaseMargin() time.Duration { return min(time.Minute, e.cfg.JobLease/5) }

// maxInFlight bounds the scheduled messages claimed and not yet settled;
// the job loop claims no more until sends catch up.
const maxInFlight = jobClaimBatch

// lanes sends scheduled messages: one lane per conversation with messages
// in flight, which sends them in due order, lanes side by side (at most
// sendConcurrency at once per platform). The job loop hands claimed jobs
// over and goes on: a slow conversation holds up its own lane, never the
// loop or another platform.
type lanes struct {
	mu       sync.Mutex
	queues   map[int64][]core.Job
	inFlight int
	freed    chan struct{} // signalled when in-flight jobs settle
	// slots bound the lanes sending at once, per platform.
	slots map[core.Platform]chan struct{}
	// running counts the lane goroutines; Stop waits for them once the
	// job loop is over.
	running sync.WaitGroup
	// convs keeps the address of conversations recently sent to (platform,
	// thread, user never change): a read per send costs more than the
	// send's write on SQLite. It has its own lock.
	convs *lru.Cache[int64, core.Conversation]
}

// maxCachedConvs bounds lanes.convs; the least recently used goes first.
const maxCachedConvs = 10000

// sendConversation returns a conversation's address, from the cache or
// the store.
func (e *Engine) sendConversation(ctx context.Context, id int64) (core.Conversation, error) {
	if c, ok := e.lanes.convs.Get(id); ok {
		return c, nil
	}
	c, err := e.cfg.Store.Conversation(ctx, id)
	if err != nil {
		return core.Conversation{}, err
	}
	e.lanes.convs.Add(id, c)
	return c, nil
}

func newLanes() *lanes {
	// New fails only on a size below one.
	convs, _ := lru.New[int64, core.Conversation](maxCachedConvs)
	return &lanes{queues: map[int64][]core.Job{}, freed: make(chan struct{}, 1), slots: map[core.Platform]chan struct{}{},
		convs: convs}
}

// slotsOf returns platform p's lane slots.
func (l *lanes) slotsOf(p core.Platform) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.slots[p]
	if !ok {
		s = make(chan struct{}, sendConcurrency)
		l.slots[p] = s
	}
	return s
}

// sendScheduled hands claimed message jobs to their conversations' lanes,
// first waiting, while ctx lasts, until fewer than maxInFlight are in
// flight.
func (e *Engine) sendScheduled(ctx context.Context, jobs []core.Job) {
	if len(jobs) == 0 {
		return
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].DueAt.Before(jobs[b].DueAt) })
	l := e.lanes
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range jobs {
		q, busy := l.queues[j.ConversationID]
		l.queues[j.ConversationID] = append(q, j)
		l.inFlight++
		if !busy {
			conv := j.ConversationID
			l.running.Add(1)
			go e.runLane(ctx, conv)
		}
	}
}

// SendsInFlight is how many claimed scheduled messages this dispatcher has
// not settled yet (tests wait for 0 before they move a clock).
func (e *Engine) SendsInFlight() int {
	e.lanes.mu.Lock()
	defer e.lanes.mu.Unlock()
	return e.lanes.inFlight
}

// roomToClaim waits until at most half of maxInFlight messages are in
// flight; false when ctx ended first.
func (e *Engine) roomToClaim(ctx context.Context) bool {
	for {
		e.lanes.mu.Lock()
		n := e.lanes.inFlight
		e.lanes.mu.Unlock()
		// Claim again once half the claimed are settled: fewer, larger
		// claims leave SQLite's one writer to the sends' completions.
		if n <= maxInFlight/2 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-e.lanes.freed:
		}
	}
}

// runLane sends a conversation's queued messages in order until its queue
// is empty.
func (e *Engine) runLane(ctx context.Context, conv int64) {
	l := e.lanes
	defer l.running.Done()
	// A conversation stays on its platform: the lane takes that platform's
	// slot, so a platform whose sends wait (for a doubt slot, on a hung
	// request) holds up no other.
	var platform core.Platform
	if c, err := e.sendConversation(ctx, conv); err == nil {
		platform = c.Platform
	}
	slots := l.slotsOf(platform)
	acquired := false
	select {
	case slots <- struct{}{}:
		acquired = true
	case <-ctx.Done():
	}
	defer func() {
		if acquired {
			<-slots
		}
	}()
	for {
		l.mu.Lock()
		q := l.queues[conv]
		if len(q) == 0 {
			delete(l.queues, conv)
			l.mu.Unlock()
			return
		}
		j := q[0]
		l.queues[conv] = q[1:]
		l.mu.Unlock()
		if ctx.Err() == nil {
			// A send that has begun is let finish (the adapter bounds it):
			// cut off, its job would be sent again after the lease.
			e.sendOne(context.WithoutCancel(ctx), j)
		} else if _, err := e.cfg.Store.ReleaseJob(context.WithoutCancel(ctx), j.ID, e.cfg.Owner, core.JobPending, j.DueAt, j.LastError); err != nil {
			// Stopping: handed back unsent, the next start sends it at once
			// (or, failing that, once its lease runs out).
			e.log.Warn("handing back a scheduled message at stop", "job", j.ID, "err", err)
		}
		l.mu.Lock()
		l.inFlight--
		l.mu.Unlock()
		select {
		case l.freed <- struct{}{}:
		default:
		}
	}
}

// sendOne sends one scheduled message and settles its job: sent (stored
// in the conversation), failed (permanent error, too many attempts, or
// missed: later than LateGrace after its time), or pending again after a
// backoff.
func (e *Engine) sendOne(ctx context.Context, j core.Job) {
	log := e.log.With("job", j.ID, "conversation", j.ConversationID)
	now := e.cfg.Clock.Now().UTC()
	settle := func(status core.JobStatus, due time.Time, note string) {
		if _, err := e.cfg.Store.ReleaseJob(context.WithoutCancel(ctx), j.ID, e.cfg.Owner, status, due, note); err != nil {
			log.Error("settling a scheduled message", "err", err)
		}
	}
	if j.LeaseUntil != nil && now.After(j.LeaseUntil.Add(-e.leaseMargin())) {
		// Claimed in a batch that took too long to reach this job: its
		// lease is (nearly) over and another process may take it; sending
		// now could send it twice.
		settle(core.JobPending, now, "lease ran out before the send")
		return
	}
	late := now.Sub(j.DueAt)
	if late > e.cfg.LateGrace {
		log.Warn("scheduled message missed: too late after downtime", "due", j.DueAt, "late_by", late)
		settle(core.JobFailed, j.DueAt, fmt.Sprintf("missed: due %s, %s past scheduler.late_grace", j.DueAt.Format(time.RFC3339), late.Round(time.Second)))
		return
	}
	conv, err := e.sendConversation(ctx, j.ConversationID)
	if err != nil {
		if core.IsNotFound(err) {
			settle(core.JobCancelled, j.DueAt, "the conversation is gone")
		} else {
			settle(core.JobPending, now.Add(time.Minute), "loading the conversation: "+err.Error())
		}
		return
	}
	a, ok := e.cfg.Outbox.Adapter(conv.Platform)
	if !ok {
		// Another process serves that platform; hand it back.
		settle(core.JobPending, now, "no adapter here for "+string(conv.Platform))
		return
	}
	if h, ok := a.(core.HealthReporter); ok {
		if err := h.Health(); err != nil {
			// The platform is down here (a revoked token): wait for it
			// without spending an attempt; late_grace still bounds it.
			settle(core.JobPending, now.Add(time.Minute), "waiting for the platform: "+err.Error())
			return
		}
	}
	// The send must end while the lease holds, or another process (or
	// this one) may claim the job again and send it twice: a platform's
	// flood-control waits could otherwise outlast it.
	sendCtx, cancel := ctx, context.CancelFunc(func() {})
	if j.LeaseUntil != nil {
		// Relative to the Clock's now: a test's clock is not the wall's.
		sendCtx, cancel = context.WithTimeout(ctx, j.LeaseUntil.Sub(now)-e.leaseMargin()/2)
	}
	defer cancel()
	if !e.cfg.Outbox.DropsRepeats(a) {
		// Held until the job is settled: from the request until then, a
		// crash would send the message again (outbox/doubt.go). A slot not
		// free while the lease leaves time for a send hands the job back.
		slotCtx, cancelSlot := sendCtx, context.CancelFunc(func() {})
		if j.LeaseUntil != nil {
			slotCtx, cancelSlot = context.WithTimeout(sendCtx, j.LeaseUntil.Sub(now)-e.leaseMargin())
		}
		slot, err := e.cfg.Outbox.TakeSlot(slotCtx, a)
		cancelSlot()
		if err != nil {
			settle(core.JobPending, e.cfg.Clock.Now().UTC(), "no send slot free before its lease ran out: handed back")
			return
		}
		defer slot.Give()
		sendCtx = slot.In(sendCtx)
	}
	// Background: a paced platform lets waiting users' replies go first.
	res, sendErr := e.cfg.Outbox.Send(core.WithBackground(sendCtx), a, core.OutboundMessage{
		ConversationID:  conv.ID,
		ChannelThreadID: conv.ChannelThreadID,
		ChannelUserID:   conv.ChannelUserID,
		Text:            j.Text,
		Format:          j.Format,
		ImageURL:        j.ImageURL,
		IdempotencyKey:  fmt.Sprintf("job-%d", j.ID),
	})
	if sendErr != nil {
		e.cfg.Metrics.SendFailed(conv.Platform)
	}
	if sendErr != nil && len(res.PlatformMessageIDs) == 0 && ctx.Err() == nil && sendCtx.Err() != nil {
		// Not the platform's failure: the lease's time was up. Handed back
		// to be sent afresh, no attempt spent.
		log.Warn("a scheduled send outlasted its lease; handed back", "err", sendErr)
		settle(core.JobPending, e.cfg.Clock.Now().UTC(), "the send outlasted its lease: handed back")
		return
	}
	if sendErr != nil && len(res.PlatformMessageIDs) == 0 {
		attempts := j.Attempts + 1
		switch {
		case core.IsPermanent(sendErr):
			log.Error("scheduled message cannot be delivered", "err", sendErr)
			e.noteAttempt(ctx, j, core.JobFailed, j.DueAt, sendErr.Error())
		case attempts >= e.cfg.JobMaxAttempts:
			log.Error("scheduled message failed; no attempts left", "attempts", attempts, "err", sendErr)
			e.noteAttempt(ctx, j, core.JobFailed, j.DueAt, sendErr.Error())
		default:
			wait := sendRetry().Delay(attempts - 1)
			log.Warn("scheduled message failed; trying again", "attempts", attempts, "retry_in", wait, "err", sendErr)
			e.noteAttempt(ctx, j, core.JobPending, now.Add(wait), sendErr.Error())
		}
		return
	}
	meta := map[string]any{"job_id": j.ID}
	if late > time.Minute {
		meta["late_by_seconds"] = int64(late.Seconds())
	}
	source := core.SourceScheduledSend
	if core.RoutedOrigin(j.Origin) {
		// Routed by the owner's systems: the next turn sees who said it.
		source = core.SourceAPI
		meta["origin"] = j.Origin
	}
	if j.Format != core.FormatText {
		meta["format"] = string(j.Format)
	}
	if j.ImageURL != "" {
		meta["image_url"] = j.ImageURL
	}
	msg := &core.Message{
		ConversationID:  conv.ID,
		Role:            core.RoleAssistant,
		Content:         j.Text,
		Source:          source,
		SessionRecordID: nil, // the conversation's current record
		Metadata:        meta,
		CreatedAt:       e.cfg.Clock.Now().UTC(),
	}
	if len(res.PlatformMessageIDs) > 0 {
		msg.PlatformMessageID = res.PlatformMessageIDs[0]
		if len(res.PlatformMessageIDs) > 1 {
			meta["platform_message_ids"] = res.PlatformMessageIDs
		}
	}
	if sendErr != nil {
		// Some parts went out: it is sent, and the rest of the error kept.
		meta["undelivered"] = sendErr.Error()
	}
	ok, err = e.cfg.Store.CompleteMessageJob(context.WithoutCancel(ctx), j.ID, e.cfg.Owner, msg)
	switch {
	case err != nil:
		log.Error("recording a sent scheduled message", "err", err)
	case !ok:
		log.Warn("a scheduled message was sent after its lease ran out; another process may send it again")
	default:
		e.cfg.Outbox.Appended(conv, *msg)
		e.cfg.Metrics.Fired(core.JobMessage, e.cfg.Clock.Now().Sub(j.DueAt))
		log.Info("scheduled message sent", "late_by", late.Round(time.Millisecond))
	}
}

// noteAttempt counts a failed send and settles the job.
func (e *Engine) noteAttempt(ctx context.Context, j core.Job, status core.JobStatus, due time.Time, note string) {
	if _, err := e.cfg.Store.FailJobAttempt(context.WithoutCancel(ctx), j.ID, e.cfg.Owner, status, due, note); err != nil {
		e.log.Error("settling a scheduled message", "job", j.ID, "err", err)
	}
}
