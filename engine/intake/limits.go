package intake

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
)

// limitHit is one limit a conversation is over.
type limitHit struct {
	limit string
	// max is the limit's value.
	max int
	// until is when the limit lifts, as far as is known now (the zero
	// time for tokens until lastToLift works it out).
	until time.Time
}

// newLimits checks the limits l: the store must count usage when a
// limit is set. It returns the exempt users as a set.
func newLimits(l core.UserLimits, st Store) (core.LimitStore, map[string]bool, error) {
	if l.MessagesPerMinute < 0 || l.TurnsPerDay < 0 || l.TokensPerDay < 0 {
		return nil, nil, fmt.Errorf("dispatcher: negative per-user limit %+v", l)
	}
	if !l.Enabled() {
		return nil, nil, nil
	}
	ls, ok := st.(core.LimitStore)
	if !ok {
		return nil, nil, fmt.Errorf("dispatcher: per-user limits need a store that counts usage (core.LimitStore); %T does not", st)
	}
	exempt := make(map[string]bool, len(l.Exempt))
	for _, u := range l.Exempt {
		exempt[u] = true
	}
	return ls, exempt, nil
}

// limitsApply reports whether any limit applies to the user.
func (e *Engine) limitsApply(p core.Platform, user string) bool {
	return e.limitStore != nil && !e.limitExempt[string(p)+":"+user]
}

// overLimits returns the limits the conversation q names is over at now,
// tokens first, then turns, then messages; and what LimitUsage read (the
// newest user message's or notice's metadata when last is asked for).
// atStart is the check of a turn about to start: the running run is that
// turn, and messages are not counted.
func (e *Engine) overLimits(ctx context.Context, q core.LimitQuery, now time.Time, atStart, last bool) ([]limitHit, core.LimitUsage, error) {
	l := e.cfg.Limits
	q.NthTurn, q.NotRunning, q.Last = l.TurnsPerDay, atStart, last
	if !atStart {
		q.NthMessage = l.MessagesPerMinute
	}
	if l.TokensPerDay > 0 {
		q.TokensSince = now.Add(-core.DayLimitWindow)
	}
	u, err := e.limitStore.LimitUsage(ctx, q)
	if err != nil {
		return nil, core.LimitUsage{}, err
	}
	var hits []limitHit
	if l.TokensPerDay > 0 && u.Tokens >= int64(l.TokensPerDay) {
		hits = append(hits, limitHit{limit: core.LimitTokensPerDay, max: l.TokensPerDay})
	}
	if u.NthTurnAt != nil && u.NthTurnAt.After(now.Add(-core.DayLimitWindow)) {
		hits = append(hits, limitHit{limit: core.LimitTurnsPerDay, max: l.TurnsPerDay, until: u.NthTurnAt.Add(core.DayLimitWindow)})
	}
	if u.NthMessageAt != nil && u.NthMessageAt.After(now.Add(-core.MessageLimitWindow)) {
		// Held messages count too, so it lifts once the user pauses for
		// a minute: what the notice asks, and how long it is in force.
		hits = append(hits, limitHit{limit: core.LimitMessagesPerMinute, max: l.MessagesPerMinute, until: now.Add(core.MessageLimitWindow)})
	}
	return hits, u, nil
}

// LimitReached reports the limit (turns_per_day or tokens_per_day) that
// keeps a user turn of conv from starting at now, "" when none does: a
// turn planned before the limit was reached (a race between replicas, a
// message queued while the last allowed turn ran) must not call the
// model. Call it for user_turn runs as they start, with the run claimed:
// the running run of conv is that turn and is not counted. (A
// continuation finishes the answer it follows; cron and proactive turns
// are the owner's, and their tokens count all the same.) An exempt user,
// or limits off, costs no query.
func (e *Engine) LimitReached(ctx context.Context, conv core.Conversation, now time.Time) (limit string, err error) {
	l := e.cfg.Limits
	if (l.TurnsPerDay == 0 && l.TokensPerDay == 0) || !e.limitsApply(conv.Platform, conv.ChannelUserID) {
		return "", nil
	}
	hits, _, err := e.overLimits(ctx, core.LimitQuery{ConversationID: conv.ID}, now, true, false)
	if err != nil {
		return "", fmt.Errorf("reading the usage of conversation %d: %w", conv.ID, err)
	}
	if len(hits) == 0 {
		return "", nil
	}
	return hits[0].limit, nil
}

// TellLimit tells the user of conv that limit (as LimitReached returned
// it) keeps their turn from starting, unless a limit notice is in force.
// For a turn held as it starts; a message held on arrival is told by
// HandleInbound.
func (e *Engine) TellLimit(ctx context.Context, conv core.Conversation, limit string, now time.Time) {
	hits, u, err := e.overLimits(ctx, core.LimitQuery{ConversationID: conv.ID}, now, true, true)
	if err != nil {
		e.log.Warn("reading per-user limits for a notice", "conversation", conv.ID, "err", err)
		return
	}
	if _, inForce := noticeInForce(u.Last, now); inForce {
		return
	}
	for _, h := range hits {
		if h.limit == limit {
			hit := e.lastToLift(ctx, conv.ID, hits, now)
			e.sendLimitNotice(ctx, conv, hit, now, fmt.Sprintf("limit-run-%d-%d", conv.ID, conv.LastSeq))
			return
		}
	}
}

// heldMessage is an inbound message a limit holds: stored, no run.
type heldMessage struct {
	// limit names the hold: the limit the user is told of.
	limit string
	// notice is the notice to send; nil when one is in force, which
	// ends at until.
	notice *limitHit
	until  time.Time
}

// checkInbound returns how an inbound message of (p, thread) from user
// is held at now; nil when no limit holds it. One read: the conversation
// is found by its thread in the same statement (a new user has used
// nothing).
func (e *Engine) checkInbound(ctx context.Context, p core.Platform, thread, user string, now time.Time) (*heldMessage, error) {
	if !e.limitsApply(p, user) {
		return nil, nil
	}
	hits, u, err := e.overLimits(ctx, core.LimitQuery{Platform: p, ChannelThreadID: thread}, now, false, true)
	if err != nil {
		return nil, fmt.Errorf("reading the usage of %s %s: %w", p, thread, err)
	}
	if len(hits) == 0 {
		return nil, nil
	}
	last := u.Last
	until, inForce := noticeInForce(last, now)
	if !inForce {
		hit := e.lastToLift(ctx, u.ConversationID, hits, now)
		return &heldMessage{limit: hit.limit, notice: &hit}, nil
	}
	// Named after the limit the user was told of, if it still holds.
	h := &heldMessage{limit: hits[0].limit, until: until}
	told, _ := last["limit_notice"].(string)
	if told == "" {
		told, _ = last["limited"].(string)
	}
	for _, x := range hits {
		if x.limit == told {
			h.limit = told
		}
	}
	return h, nil
}

// metadata is the held message's metadata: which limit held it, and the
// end of the notice in force (copied forward, so that the next message
// held knows a notice was sent).
func (h *heldMessage) metadata(meta map[string]any) map[string]any {
	if meta == nil {
		meta = map[string]any{}
	}
	meta["limited"] = h.limit
	if h.notice == nil {
		meta["limit_until"] = h.until.UTC().Format(time.RFC3339Nano)
	}
	return meta
}

// lastToLift works out when each of hits lifts (reading the token usage
// for tokens_per_day) and returns the one that lifts last: what a notice
// tells of.
func (e *Engine) lastToLift(ctx context.Context, convID int64, hits []limitHit, now time.Time) limitHit {
	hit := hits[0]
	for i, h := range hits {
		if h.limit == core.LimitTokensPerDay {
			h.until = e.tokensLift(ctx, convID, now)
			hits[i] = h
		}
		if i == 0 || h.until.After(hit.until) {
			hit = h
		}
	}
	if !hit.until.After(now) {
		// Usage fell under the limit meanwhile (a race): the notice is
		// over at once.
		hit.until = now.Add(time.Second)
	}
	return hit
}

// noticeInForce reports the end of the limit notice meta tells of (a
// notice's own metadata, or a held message's copy), if it is after now.
func noticeInForce(meta map[string]any, now time.Time) (time.Time, bool) {
	s, _ := meta["limit_until"].(string)
	if s == "" {
		return time.Time{}, false
	}
	until, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !until.After(now) {
		return time.Time{}, false
	}
	return until, true
}

// held finishes a held inbound message once stored: counted, and the user
// told unless a notice is in force.
func (e *Engine) held(ctx context.Context, log *slog.Logger, h *heldMessage, res core.InboundResult, now time.Time) {
	limit, _ := res.Message.Metadata["limited"].(string)
	log.Info("message held by a per-user limit", "conversation", res.Conversation.ID, "seq", res.Message.Seq, "limit", limit)
	if m, ok := e.cfg.Metrics.(core.LimitMetrics); ok {
		m.Limited(limit)
	}
	if h.notice != nil {
		// The notice is stored after the message: the next message held
		// finds it the newest and copies its end.
		e.sendLimitNotice(ctx, res.Conversation, *h.notice, now, fmt.Sprintf("limit-%d", res.Message.ID))
	}
}

// sendLimitNotice tells the user of conv that hit holds their messages
// until it lifts, with key as the send's idempotency key, and stores the
// notice, kept out of the model's prompt.
func (e *Engine) sendLimitNotice(ctx context.Context, conv core.Conversation, hit limitHit, now time.Time, key string) {
	if _, ok := e.cfg.Outbox.Adapter(conv.Platform); !ok {
		return
	}
	msg := &core.Message{
		ConversationID:  conv.ID,
		Role:            core.RoleAssistant,
		Content:         limitNoticeText(hit, now, core.LocationOf(conv, e.cfg.Location)),
		Source:          core.SourceSystem,
		SessionRecordID: conv.CurrentRecordID,
		Metadata: map[string]any{
			"limit_notice": hit.limit,
			"limit_until":  hit.until.UTC().Format(time.RFC3339Nano),
		},
		CreatedAt: now,
	}
	if err := e.cfg.Outbox.Notice(ctx, conv, msg, core.FormatText, key, "a limit notice"); err != nil {
		e.log.Error("storing a limit notice", "conversation", conv.ID, "err", err)
	}
}

// tokensLift is when the conversation's tokens of the last 24 h fall
// under tokens_per_day: the end of the day of the oldest runs whose
// tokens, gone, leave less than the limit. On an error it guesses a full
// day.
func (e *Engine) tokensLift(ctx context.Context, convID int64, now time.Time) time.Time {
	spends, err := e.limitStore.TokenSpends(ctx, convID, now.Add(-core.DayLimitWindow))
	if err != nil {
		e.log.Warn("reading token usage for a limit notice", "conversation", convID, "err", err)
		return now.Add(core.DayLimitWindow)
	}
	return tokensLiftFrom(spends, int64(e.cfg.Limits.TokensPerDay), now)
}

// tokensLiftFrom is when spends (oldest first, all within the window)
// leave less than limit in the window: now if they already do.
func tokensLiftFrom(spends []core.TokenSpend, limit int64, now time.Time) time.Time {
	var sum int64
	for _, s := range spends {
		sum += s.Tokens
	}
	lift := now
	for _, s := range spends {
		if sum < limit {
			break
		}
		sum -= s.Tokens
		lift = s.At.Add(core.DayLimitWindow)
	}
	return lift
}

// limitNoticeText is the short notice of hit, its end in the user's zone.
func limitNoticeText(hit limitHit, now time.Time, loc *time.Location) string {
	switch hit.limit {
	case core.LimitMessagesPerMinute:
		return fmt.Sprintf("You're writing faster than I can keep up with (more than %s a minute). "+
			"Give me a minute, then write again.", plural(hit.max, "message", "messages"))
	case core.LimitTurnsPerDay:
		return fmt.Sprintf("You've reached the limit of %s in 24 hours. I'll answer again after %s.",
			plural(hit.max, "reply", "replies"), liftTime(hit.until, now, loc))
	default:
		return fmt.Sprintf("You've reached the usage limit for 24 hours. I'll answer again after %s.",
			liftTime(hit.until, now, loc))
	}
}

// liftTime says when until is, from now, in loc: "14:05 (Europe/Berlin
// time)", with "tomorrow" or the date when it is not today there. The
// minute is rounded up, so the time said is never early.
func liftTime(until, now time.Time, loc *time.Location) string {
	u, n := until.In(loc), now.In(loc)
	if t := u.Truncate(time.Minute); !t.Equal(u) {
		u = t.Add(time.Minute)
	}
	uy, um, ud := u.Date()
	ny, nm, nd := n.Date()
	day := ""
	switch {
	case uy == ny && um == nm && ud == nd:
	case n.AddDate(0, 0, 1).Format(time.DateOnly) == u.Format(time.DateOnly):
		day = " tomorrow"
	default:
		day = " on " + u.Format("Mon 2 Jan")
	}
	return fmt.Sprintf("%s%s (%s time)", u.Format("15:04"), day, loc)
}

// plural writes n with the word's singular or plural.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
