package core

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

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
func (d *Dispatcher) leaseMargin() time.Duration { return min(time.Minute, d.cfg.JobLease/5) }

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
	queues   map[int64][]Job
	inFlight int
	freed    chan struct{} // signalled when in-flight jobs settle
	// slots bound the lanes sending at once, per platform; doubt bounds
	// the sends in doubt to a platform without idempotent sends (doubt.go).
	slots map[Platform]chan struct{}
	doubt map[Platform]doubtSlots
	// running counts the lane goroutines; Stop waits for them once the
	// job loop is over.
	running sync.WaitGroup
	// convs keeps the address of conversations recently sent to (platform,
	// thread, user never change): a read per send costs more than the
	// send's write on SQLite. It has its own lock.
	convs *lru.Cache[int64, Conversation]
}

// maxCachedConvs bounds lanes.convs; the least recently used goes first.
const maxCachedConvs = 10000

// sendConversation returns a conversation's address, from the cache or
// the store.
func (d *Dispatcher) sendConversation(ctx context.Context, id int64) (Conversation, error) {
	if c, ok := d.lanes.convs.Get(id); ok {
		return c, nil
	}
	c, err := d.cfg.Store.Conversation(ctx, id)
	if err != nil {
		return Conversation{}, err
	}
	d.lanes.convs.Add(id, c)
	return c, nil
}

func newLanes() *lanes {
	// New fails only on a size below one.
	convs, _ := lru.New[int64, Conversation](maxCachedConvs)
	return &lanes{queues: map[int64][]Job{}, freed: make(chan struct{}, 1), slots: map[Platform]chan struct{}{},
		doubt: map[Platform]doubtSlots{}, convs: convs}
}

// slotsOf returns platform p's lane slots.
func (l *lanes) slotsOf(p Platform) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.slots[p]
	if !ok {
		s = make(chan struct{}, sendConcurrency)
		l.slots[p] = s
	}
	return s
}

// doubtOf returns platform p's doubt slots, n of them.
func (l *lanes) doubtOf(p Platform, n int) doubtSlots {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.doubt[p]
	if !ok {
		s = make(doubtSlots, n)
		l.doubt[p] = s
	}
	return s
}

// sendScheduled hands claimed message jobs to their conversations' lanes,
// first waiting, while ctx lasts, until fewer than maxInFlight are in
// flight.
func (d *Dispatcher) sendScheduled(ctx context.Context, jobs []Job) {
	if len(jobs) == 0 {
		return
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].DueAt.Before(jobs[b].DueAt) })
	l := d.lanes
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range jobs {
		q, busy := l.queues[j.ConversationID]
		l.queues[j.ConversationID] = append(q, j)
		l.inFlight++
		if !busy {
			conv := j.ConversationID
			l.running.Add(1)
			go d.runLane(ctx, conv)
		}
	}
}

// SendsInFlight is how many claimed scheduled messages this dispatcher has
// not settled yet (tests wait for 0 before they move a clock).
func (d *Dispatcher) SendsInFlight() int {
	d.lanes.mu.Lock()
	defer d.lanes.mu.Unlock()
	return d.lanes.inFlight
}

// roomToClaim waits until at most half of maxInFlight messages are in
// flight; false when ctx ended first.
func (d *Dispatcher) roomToClaim(ctx context.Context) bool {
	for {
		d.lanes.mu.Lock()
		n := d.lanes.inFlight
		d.lanes.mu.Unlock()
		// Claim again once half the claimed are settled: fewer, larger
		// claims leave SQLite's one writer to the sends' completions.
		if n <= maxInFlight/2 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-d.lanes.freed:
		}
	}
}

// runLane sends a conversation's queued messages in order until its queue
// is empty.
func (d *Dispatcher) runLane(ctx context.Context, conv int64) {
	l := d.lanes
	defer l.running.Done()
	// A conversation stays on its platform: the lane takes that platform's
	// slot, so a platform whose sends wait (for a doubt slot, on a hung
	// request) holds up no other.
	var platform Platform
	if c, err := d.sendConversation(ctx, conv); err == nil {
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
			d.sendOne(context.WithoutCancel(ctx), j)
		} else if _, err := d.cfg.Store.ReleaseJob(context.WithoutCancel(ctx), j.ID, d.cfg.Owner, JobPending, j.DueAt, j.LastError); err != nil {
			// Stopping: handed back unsent, the next start sends it at once
			// (or, failing that, once its lease runs out).
			d.log.Warn("handing back a scheduled message at stop", "job", j.ID, "err", err)
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
func (d *Dispatcher) sendOne(ctx context.Context, j Job) {
	log := d.log.With("job", j.ID, "conversation", j.ConversationID)
	now := d.cfg.Clock.Now().UTC()
	settle := func(status JobStatus, due time.Time, note string) {
		if _, err := d.cfg.Store.ReleaseJob(context.WithoutCancel(ctx), j.ID, d.cfg.Owner, status, due, note); err != nil {
			log.Error("settling a scheduled message", "err", err)
		}
	}
	if j.LeaseUntil != nil && now.After(j.LeaseUntil.Add(-d.leaseMargin())) {
		// Claimed in a batch that took too long to reach this job: its
		// lease is (nearly) over and another process may take it; sending
		// now could send it twice.
		settle(JobPending, now, "lease ran out before the send")
		return
	}
	late := now.Sub(j.DueAt)
	if late > d.cfg.LateGrace {
		log.Warn("scheduled message missed: too late after downtime", "due", j.DueAt, "late_by", late)
		settle(JobFailed, j.DueAt, fmt.Sprintf("missed: due %s, %s past scheduler.late_grace", j.DueAt.Format(time.RFC3339), late.Round(time.Second)))
		return
	}
	conv, err := d.sendConversation(ctx, j.ConversationID)
	if err != nil {
		if IsNotFound(err) {
			settle(JobCancelled, j.DueAt, "the conversation is gone")
		} else {
			settle(JobPending, now.Add(time.Minute), "loading the conversation: "+err.Error())
		}
		return
	}
	a, ok := d.adapters[conv.Platform]
	if !ok {
		// Another process serves that platform; hand it back.
		settle(JobPending, now, "no adapter here for "+string(conv.Platform))
		return
	}
	if h, ok := a.(HealthReporter); ok {
		if err := h.Health(); err != nil {
			// The platform is down here (a revoked token): wait for it
			// without spending an attempt; late_grace still bounds it.
			settle(JobPending, now.Add(time.Minute), "waiting for the platform: "+err.Error())
			return
		}
	}
	// The send must end while the lease holds, or another process (or
	// this one) may claim the job again and send it twice: a platform's
	// flood-control waits could otherwise outlast it.
	sendCtx, cancel := ctx, context.CancelFunc(func() {})
	if j.LeaseUntil != nil {
		// Relative to the Clock's now: a test's clock is not the wall's.
		sendCtx, cancel = context.WithTimeout(ctx, j.LeaseUntil.Sub(now)-d.leaseMargin()/2)
	}
	defer cancel()
	if !d.dropsRepeats(a) {
		// Held until the job is settled: from the request until then, a
		// crash would send the message again (doubt.go). A slot not free
		// while the lease leaves time for a send hands the job back.
		slotCtx, cancelSlot := sendCtx, context.CancelFunc(func() {})
		if j.LeaseUntil != nil {
			slotCtx, cancelSlot = context.WithTimeout(sendCtx, j.LeaseUntil.Sub(now)-d.leaseMargin())
		}
		slot, err := takeDoubtSlot(slotCtx, d.lanes.doubtOf(conv.Platform, d.cfg.MaxSendsInDoubt))
		cancelSlot()
		if err != nil {
			settle(JobPending, d.cfg.Clock.Now().UTC(), "no send slot free before its lease ran out: handed back")
			return
		}
		defer slot.give()
		sendCtx = slot.in(sendCtx)
	}
	// Background: a paced platform lets waiting users' replies go first.
	res, sendErr := d.send(WithBackground(sendCtx), a, OutboundMessage{
		ConversationID:  conv.ID,
		ChannelThreadID: conv.ChannelThreadID,
		ChannelUserID:   conv.ChannelUserID,
		Text:            j.Text,
		Format:          j.Format,
		ImageURL:        j.ImageURL,
		IdempotencyKey:  fmt.Sprintf("job-%d", j.ID),
	})
	if sendErr != nil {
		d.cfg.Metrics.SendFailed(conv.Platform)
	}
	if sendErr != nil && len(res.PlatformMessageIDs) == 0 && ctx.Err() == nil && sendCtx.Err() != nil {
		// Not the platform's failure: the lease's time was up. Handed back
		// to be sent afresh, no attempt spent.
		log.Warn("a scheduled send outlasted its lease; handed back", "err", sendErr)
		settle(JobPending, d.cfg.Clock.Now().UTC(), "the send outlasted its lease: handed back")
		return
	}
	if sendErr != nil && len(res.PlatformMessageIDs) == 0 {
		attempts := j.Attempts + 1
		switch {
		case IsPermanent(sendErr):
			log.Error("scheduled message cannot be delivered", "err", sendErr)
			d.noteAttempt(ctx, j, JobFailed, j.DueAt, sendErr.Error())
		case attempts >= d.cfg.JobMaxAttempts:
			log.Error("scheduled message failed; no attempts left", "attempts", attempts, "err", sendErr)
			d.noteAttempt(ctx, j, JobFailed, j.DueAt, sendErr.Error())
		default:
			wait := sendRetry().Delay(attempts - 1)
			log.Warn("scheduled message failed; trying again", "attempts", attempts, "retry_in", wait, "err", sendErr)
			d.noteAttempt(ctx, j, JobPending, now.Add(wait), sendErr.Error())
		}
		return
	}
	meta := map[string]any{"job_id": j.ID}
	if late > time.Minute {
		meta["late_by_seconds"] = int64(late.Seconds())
	}
	source := SourceScheduledSend
	if RoutedOrigin(j.Origin) {
		// Routed by the owner's systems: the next turn sees who said it.
		source = SourceAPI
		meta["origin"] = j.Origin
	}
	if j.Format != FormatText {
		meta["format"] = string(j.Format)
	}
	if j.ImageURL != "" {
		meta["image_url"] = j.ImageURL
	}
	msg := &Message{
		ConversationID:  conv.ID,
		Role:            RoleAssistant,
		Content:         j.Text,
		Source:          source,
		SessionRecordID: nil, // the conversation's current record
		Metadata:        meta,
		CreatedAt:       d.cfg.Clock.Now().UTC(),
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
	ok, err = d.cfg.Store.CompleteMessageJob(context.WithoutCancel(ctx), j.ID, d.cfg.Owner, msg)
	switch {
	case err != nil:
		log.Error("recording a sent scheduled message", "err", err)
	case !ok:
		log.Warn("a scheduled message was sent after its lease ran out; another process may send it again")
	default:
		d.history.appended(conv, *msg)
		d.cfg.Metrics.Fired(JobMessage, d.cfg.Clock.Now().Sub(j.DueAt))
		log.Info("scheduled message sent", "late_by", late.Round(time.Millisecond))
	}
}

// noteAttempt counts a failed send and settles the job.
func (d *Dispatcher) noteAttempt(ctx context.Context, j Job, status JobStatus, due time.Time, note string) {
	if _, err := d.cfg.Store.FailJobAttempt(context.WithoutCancel(ctx), j.ID, d.cfg.Owner, status, due, note); err != nil {
		d.log.Error("settling a scheduled message", "job", j.ID, "err", err)
	}
}
