package jobs

import (
	"context"
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

// SendsInFlight is how many claimed scheduled messages this engine has
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
