package core

import (
	"context"
	"time"
)

// Per-user limits (bot.limits) bound what one user may cost the owner.
//
// A user is a conversation: one DM with one user on one platform. The
// windows slide: messages_per_minute counts the user's messages (those
// held by a limit too, so a script that keeps flooding stays held) in the
// last 60 s; turns_per_day counts the user turns that started in the last
// 24 h (a turn answers every message that arrived before it started);
// tokens_per_day sums the tokens of the conversation's runs, of every
// kind, that finished in the last 24 h. Chat commands neither count nor
// are ever limited.
//
// A message over a limit is stored, marked {"limited": LIMIT}, and plans
// no run: the model is not called. The user is told once per window: the
// notice says when the limit lifts (for messages_per_minute: after a
// minute's pause), and no other is sent until then. A later turn reads
// the held messages as part of the history.
//
// What is guaranteed under concurrency: the check and the store are not
// one transaction, so k messages of one user handled at the same instant
// (by one process or several replicas) may all pass: messages_per_minute
// lets at most N+k-1 through in a window. turns_per_day is exact when the
// executor also checks limitReached as a turn starts (a conversation runs
// one turn at a time, enforced by the database): at most N user turns
// start in any 24 h. tokens_per_day, checked there too, lets the turn
// that crosses it run to its end: usage exceeds the limit by at most one
// turn's tokens. Messages that race at the moment a limit is reached may
// each send a notice.
//
// With every limit 0 nothing is read: an inbound message costs no query
// more than without limits, and an exempt user none either. Otherwise an
// inbound message costs one read (LimitStore.LimitUsage), which finds the
// conversation by its thread too.

// The limits, as bot.limits names them: the values of the "limited" and
// "limit_notice" metadata and of the metric's label.
const (
	LimitMessagesPerMinute = "messages_per_minute"
	LimitTurnsPerDay       = "turns_per_day"
	LimitTokensPerDay      = "tokens_per_day"
)

// The windows the limits count in; both slide.
const (
	MessageLimitWindow = time.Minute
	DayLimitWindow     = 24 * time.Hour
)

// UserLimits bound what one user may cost (bot.limits); 0 is no limit.
type UserLimits struct {
	// MessagesPerMinute bounds the user's messages in any 60 s.
	MessagesPerMinute int
	// TurnsPerDay bounds the user turns that start in any 24 h.
	TurnsPerDay int
	// TokensPerDay bounds the tokens of the conversation's runs that
	// finished in any 24 h.
	TokensPerDay int
	// Exempt lists users no limit applies to, as "platform:user_id".
	Exempt []string
}

// Enabled reports whether any limit is set.
func (l UserLimits) Enabled() bool {
	return l.MessagesPerMinute > 0 || l.TurnsPerDay > 0 || l.TokensPerDay > 0
}

// LimitStore is what the limits read; *store.Store implements it. The
// intake engine asserts its store to it when a limit is set. Each read costs
// what the limits it asks about need, not the length of the history.
type LimitStore interface {
	// LimitUsage reads, in one round trip, what q asks about one
	// conversation.
	LimitUsage(ctx context.Context, q LimitQuery) (LimitUsage, error)
	// TokenSpends lists the runs of the conversation that finished after
	// since and used tokens, oldest first: when a tokens_per_day limit
	// lifts.
	TokenSpends(ctx context.Context, conversationID int64, since time.Time) ([]TokenSpend, error)
}

// LimitQuery says what LimitUsage reads; each part is read only when
// asked for.
type LimitQuery struct {
	// ConversationID names the conversation; or, when it is 0, Platform
	// and ChannelThreadID do (an inbound message, before it is stored).
	ConversationID  int64
	Platform        Platform
	ChannelThreadID string
	// NthMessage > 0 asks for the time of the NthMessage-th newest user
	// message (SourceUser: chat commands do not count).
	NthMessage int
	// NthTurn > 0 asks for the start of the NthTurn-th newest user turn
	// that started (queued and skipped runs do not count); NotRunning
	// leaves the running one out (it is the turn being checked).
	NthTurn    int
	NotRunning bool
	// TokensSince, when not zero, asks for the tokens of the runs that
	// finished after it.
	TokensSince time.Time
	// Last asks for the metadata of the newest user message or notice
	// (SourceUser or SourceSystem): whether a limit notice is in force.
	Last bool
}

// LimitUsage is what LimitUsage read; all zero, ConversationID too,
// when the conversation does not exist.
type LimitUsage struct {
	ConversationID int64
	// NthMessageAt and NthTurnAt are nil when there are fewer such
	// messages or turns, or when they were not asked for.
	NthMessageAt *time.Time
	NthTurnAt    *time.Time
	Tokens       int64
	// Last is the newest user message's or notice's metadata; nil when
	// there is none or it has none.
	Last map[string]any
}

// TokenSpend is the tokens one run used, when it finished.
type TokenSpend struct {
	At     time.Time
	Tokens int64
}

// LimitMetrics is an optional Metrics capability: told about each
// message a limit held.
type LimitMetrics interface {
	Limited(limit string)
}

// LimitedSummary is what the limits held in a span, for the console.
type LimitedSummary struct {
	// ByLimit counts the held messages per limit.
	ByLimit map[string]int64
	// Users are the users with the most held messages, most first.
	Users []LimitedUser
}

// LimitedUser is one user's messages held by limits.
type LimitedUser struct {
	ConversationID int64
	Platform       Platform
	ChannelUserID  string
	DisplayName    string
	// Held counts the messages; ByLimit splits them per limit.
	Held    int64
	ByLimit map[string]int64
	// Last is when the newest was held.
	Last time.Time
}
