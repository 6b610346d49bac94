package core

import "time"

// What the owner's console shows of the whole bot. The store computes
// these; the console renders them.

// ActivityBucket counts what happened in one interval starting at Start.
type ActivityBucket struct {
	Start time.Time
	// Inbound is user messages stored; Outbound messages the bot sent
	// (replies, scheduled messages, notices; not a turn's chosen silence).
	Inbound, Outbound int64
	// Turns is runs that finished (canceled ones included; a skipped
	// run, which never called the model, is not a turn); Failed those of
	// them that failed.
	Turns, Failed int64
}

// Failure is one thing that went wrong, with where it happened.
type Failure struct {
	// Kind is "turn" (a failed run), "send" (a reply or message that could
	// not be delivered) or "job" (a scheduled job that failed).
	Kind           string
	At             time.Time
	ConversationID int64
	// RunID is set for a turn, JobID for a job; either may be set for a
	// send.
	RunID, JobID int64
	Error        string
}

// TokenDay is one model's token usage on one day.
type TokenDay struct {
	// Day is YYYY-MM-DD in the zone it was asked for.
	Day                string
	Model              string
	Prompt, Completion int64
}

// JobFilter selects jobs across all conversations.
type JobFilter struct {
	Statuses []JobStatus // none: every status
	Kinds    []JobKind   // none: every kind
	Platform Platform    // "": every platform
	// DueFrom and DueTo bound the due time: DueFrom <= due < DueTo (nil:
	// open).
	DueFrom, DueTo *time.Time
	// Recent orders by the last change, newest first (what was just sent
	// or failed); otherwise by due time, soonest first.
	Recent        bool
	Limit, Offset int
}

// JobRow is a job with the conversation it belongs to.
type JobRow struct {
	Job
	Platform    Platform
	DisplayName string
	// TimeZone is the user's zone ("" when unknown).
	TimeZone string
	// BotID is the bot whose conversation the job is in.
	BotID string
}
