package core

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/parleybot/parley/core/promise"
)

// Platform names a chat platform a conversation lives on: what its
// adapter's Platform returns ("telegram", "web"). core names no platform
// of its own: the platforms are those of the registered adapters (each
// adapter package declares its constant, e.g. telegram.Platform), so a new
// adapter needs no change here or anywhere above the adapters.
type Platform string

// Title is how a sentence names the platform when its adapter gives no
// title of its own (PlatformTitler): the name with its first letter
// upper-cased ("irc" is "Irc").
func (p Platform) Title() string {
	r, n := utf8.DecodeRuneInString(string(p))
	if n == 0 || r == utf8.RuneError {
		return string(p)
	}
	return string(unicode.ToUpper(r)) + string(p)[n:]
}

// Conversation is one direct-message channel between the bot and one user on
// one platform. (Platform, ChannelThreadID) is unique.
type Conversation struct {
	ID int64
	// BotID is the bot the conversation belongs to ("default" for a
	// config without bots:); one user talking to two bots is two
	// conversations.
	BotID           string
	Platform        Platform
	ChannelThreadID string
	ChannelUserID   string
	DisplayName     string
	// TimeZone is an IANA zone name; empty means the bot's default zone.
	TimeZone string
	// LastSeq is the seq of the conversation's newest message (0: none).
	LastSeq int64
	// CurrentRecordID is the session record new messages join; nil before
	// the first message.
	CurrentRecordID *int64
	// LastMessageAt is when the newest message was stored.
	LastMessageAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Role is the speaker of a stored message, as the LLM sees it.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// Source says how a message came to be in the conversation.
type Source string

// Message sources.
const (
	SourceUser          Source = "user"
	SourceReply         Source = "reply"
	SourceScheduledSend Source = "scheduled_send"
	SourceProactive     Source = "proactive"
	SourceCronTurn      Source = "cron_turn"
	SourceAPI           Source = "api"
	SourceSystem        Source = "system"
	// SourceCommand marks a chat command (/help, /new, …) and the answer
	// the core gave it without the model. Both stay in the transcript, so
	// the model knows what happened, but neither counts as a user turn.
	SourceCommand Source = "command"
)

// Message is one stored message of a conversation. Seq is unique per
// conversation and assigned by the store in the transaction that inserts it.
type Message struct {
	ID             int64
	ConversationID int64
	Seq            int64
	Role           Role
	Content        string
	Source         Source
	// PlatformMessageID is the platform's id of the (first) delivered part;
	// Metadata["platform_message_ids"] lists every part of a split message.
	PlatformMessageID string
	SessionRecordID   *int64
	RunID             *int64
	Metadata          map[string]any
	// Delivery is where a message the bot sends in a turn stands: stored
	// before it is sent, so that a crash between the two neither loses it
	// nor repeats it unbounded (DeliveryNone for everything else).
	Delivery  Delivery
	CreatedAt time.Time
	// Files are the files a bot message carries (outfile.go), with their
	// bytes: stored with it and kept until it is delivered, so that a
	// send retried after a crash sends the same files. Set them with
	// AttachFiles, which describes them in Metadata for good.
	Files []OutboundFile
}

// Delivery is the state of a turn's outbound message.
type Delivery string

// Delivery states. A message goes from sending to sent, failed or
// dropped; one left sending by a process that died is sent again, with
// the same idempotency key, by the next run of its conversation.
const (
	// DeliveryNone: a message that is not sent by a turn (the user's, a
	// command's answer, a scheduled message), or one stored before
	// delivery states were kept.
	DeliveryNone Delivery = ""
	// DeliverySending: stored, and the platform call may have begun.
	DeliverySending Delivery = "sending"
	// DeliverySent: the platform took it.
	DeliverySent Delivery = "sent"
	// DeliveryFailed: the platform refused it, or it was given up; its
	// metadata "undelivered" says why.
	DeliveryFailed Delivery = "failed"
	// DeliveryDropped: the turn was stopped before anything reached the
	// user (a newer message restarted it); kept out of later prompts.
	DeliveryDropped Delivery = "dropped"
)

// IdempotencyKey is the key a turn's outbound message is sent with, the
// same on every attempt: platforms with a nonce (Discord) drop a repeat.
func (m Message) IdempotencyKey() string {
	// A reply that grew while the model wrote it was created under its
	// stream's key, before it was stored: sent again, it keeps that key,
	// so that a platform that drops a repeated key (Discord's nonce)
	// drops the repeat.
	if k, ok := m.Metadata[IdempotencyKeyKey].(string); ok && k != "" {
		return k
	}
	return fmt.Sprintf("reply-%d", m.ID)
}

// IdempotencyKeyKey is the Message.Metadata key holding a key the message
// was sent under other than its own (IdempotencyKey).
const IdempotencyKeyKey = "idempotency_key"

// SessionRecord is a stretch of a conversation with no gap longer than the
// configured session gap.
type SessionRecord struct {
	ID             int64
	ConversationID int64
	StartedAt      time.Time
	EndedAt        *time.Time
	Summary        string
	// FinalMood is the mood plugin's JSON snapshot at the end of the record.
	FinalMood string
	// Prompt is the record's prompt stack above its messages (layers L0–L4,
	// JSON), rendered at its first turn and kept for the whole record.
	Prompt    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RunKind says why a run exists.
type RunKind string

// Run kinds.
const (
	RunUserTurn  RunKind = "user_turn"
	RunCronTurn  RunKind = "cron_turn"
	RunProactive RunKind = "proactive"
	RunContinue  RunKind = "continue"
)

// RunStatus is a run's place in its lifecycle.
type RunStatus string

// Run statuses.
const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCanceled  RunStatus = "canceled"
	RunSkipped   RunStatus = "skipped"
)

// Run is one LLM turn to execute for a conversation.
type Run struct {
	ID                    int64
	ConversationID        int64
	Kind                  RunKind
	Status                RunStatus
	TriggerMessageID      *int64
	ExpectedLastMessageID *int64
	RunAfter              time.Time
	// Owner identifies the worker (process) that claimed the run.
	Owner             string
	StartedAt         *time.Time
	HeartbeatAt       *time.Time
	FinishedAt        *time.Time
	CancelRequestedAt *time.Time
	Error             string
	PromptTokens      int
	CompletionTokens  int
	TotalTokens       int
	// Model is the model the run's tokens were spent on; "" when none was
	// called, and for runs stored before the store kept it.
	Model string
	// JobID is the job the run executes: a proactive follow-up, whose
	// outcome settles it, or a recurring job (a cron turn).
	JobID *int64
	// OccurrenceAt is the occurrence of its recurring job a cron turn runs.
	// (JobID, OccurrenceAt) is unique: no occurrence runs twice, whichever
	// process plans it.
	OccurrenceAt *time.Time
	// Grown are platform messages half written by a streamed reply: on
	// a running run, those its own stream grew until its reply is
	// stored; on a queued run, those a dead run of its conversation left,
	// which it deletes before it answers (Store.NoteGrown).
	Grown []string
	// Record is the internal record of what the run did; never shown to users.
	Record    RunRecord
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RunRecord is the internal record of a run: the rendered prompt, which
// prompt produced it, and the tool calls made.
type RunRecord struct {
	PromptID      string `json:"prompt_id,omitempty"`
	PromptVersion string `json:"prompt_version,omitempty"`
	// Prompt is the rendered prompt ahead of the conversation history (the
	// system prompt built from the layers).
	Prompt []RecordMessage `json:"prompt,omitempty"`
	// History says which stored messages followed Prompt. They are referred
	// to, not copied: a copy per run would grow the database by the whole
	// window on every turn.
	History   *HistoryRef      `json:"history,omitempty"`
	ToolCalls []ToolCallRecord `json:"tool_calls,omitempty"`
	Rounds    int              `json:"rounds,omitempty"`
	Output    string           `json:"output,omitempty"`
	// Reasoning is what the model thought before it answered (the
	// reasoning_content field, <think> blocks), taken out of Output. It
	// is kept here only: never sent, never in a later prompt.
	Reasoning string `json:"reasoning,omitempty"`
	// Notes say what output processors stripped or ignored (control
	// tokens), and why.
	Notes []string `json:"notes,omitempty"`
	// TurnNotes are the plugins' notes that ended this turn's system prompt.
	TurnNotes []string `json:"turn_notes,omitempty"`
	// Continuation is the second call of a turn whose reply asked to say
	// more: the hidden nudge it was given and what the model answered.
	Continuation *ContinuationRecord `json:"continuation,omitempty"`
	// Template is the execution prompt of a cron turn: which template made
	// it, from what, and what it said. It is never in the transcript.
	Template *TemplateRecord `json:"template,omitempty"`
	// Promise is the later message the reply promised without scheduling
	// it (bot.promise_check), and how the extra round kept it.
	Promise *promise.Record `json:"promise,omitempty"`
}

// TemplateRecord is a rendered prompt template as a run used it.
type TemplateRecord struct {
	ID        string            `json:"id"`
	Version   int               `json:"version"`
	SHA256    string            `json:"sha256"`
	Variables map[string]string `json:"variables,omitempty"`
	Rendered  string            `json:"rendered,omitempty"`
	Errors    []string          `json:"errors,omitempty"`
}

// ContinuationRecord is the second call of a turn that wanted to say more.
type ContinuationRecord struct {
	Nudge  string `json:"nudge"`
	Output string `json:"output"`
	// Reasoning is the continuation's reasoning, as RunRecord.Reasoning.
	Reasoning string `json:"reasoning,omitempty"`
	Dropped   string `json:"dropped,omitempty"`
	ToolCalls int    `json:"tool_calls,omitempty"`
}

// HistoryRef names the stored messages a prompt included: those of the
// conversation with FromSeq <= seq <= ToSeq, Count of them after filtering.
type HistoryRef struct {
	FromSeq int64 `json:"from_seq"`
	ToSeq   int64 `json:"to_seq"`
	Count   int   `json:"count"`
}

// RecordMessage is one message of a rendered prompt as kept in a RunRecord.
type RecordMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content,omitempty"`
	Name       string `json:"name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCallRecord is one tool call the model made during a run.
type ToolCallRecord struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Result    string `json:"result"`
	IsError   bool   `json:"is_error,omitempty"`
}

// JobKind says what a job does when it is due.
type JobKind string

// Job kinds.
const (
	// JobMessage sends its stored text verbatim.
	JobMessage JobKind = "message"
	// JobAgentTurn runs a turn of its conversation (recurring).
	JobAgentTurn JobKind = "agent_turn"
	// JobProactive asks the LLM whether to speak first.
	JobProactive JobKind = "proactive"
)

// JobStatus is a job's place in its lifecycle.
type JobStatus string

// Job statuses.
const (
	JobPending   JobStatus = "pending"
	JobSending   JobStatus = "sending"
	JobSent      JobStatus = "sent"
	JobCancelled JobStatus = "cancelled"
	JobFailed    JobStatus = "failed"
)

// Job is due work bound to a conversation.
type Job struct {
	ID             int64
	ConversationID int64
	Kind           JobKind
	Status         JobStatus
	// Text is sent verbatim by a message job; the instruction of a turn job.
	Text string
	Name string
	// DueAt is in UTC.
	DueAt time.Time
	// Recurrence is a cron expression or an interval, evaluated in the
	// conversation's time zone; empty for a one-off job.
	Recurrence string
	// NextRunAt is a recurring job's next occurrence. DueAt is when the
	// scheduler looks at the job: the same time, or later while the
	// conversation has a turn queued.
	NextRunAt *time.Time
	// CatchUp is what a recurring job does about occurrences missed while
	// no scheduler ran.
	CatchUp CatchUp
	// Format and ImageURL say how a message job's Text is sent (a message
	// routed by the API may be rich text or an image with a caption).
	Format   TextFormat
	ImageURL string
	// IdempotencyKey is the API caller's Idempotency-Key: a repeat within
	// 24 hours gets this job back instead of a new one.
	IdempotencyKey        string
	Attempts              int
	LastError             string
	Origin                string
	CreatedByToolCallID   string
	CancelledByToolCallID string
	// RetriedBy is who last gave the failed job a new attempt ("console"),
	// at RetriedAt; "" and nil when nobody did.
	RetriedBy         string
	RetriedAt         *time.Time
	Owner             string
	LeaseUntil        *time.Time
	PlatformMessageID string
	SentAt            *time.Time
	// SessionRecordID is the record a proactive job follows up on.
	SessionRecordID *int64
	// AfterSeq is the seq of the conversation's newest message when a
	// proactive job was requested; a user message after it makes the job
	// stale.
	AfterSeq  int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CatchUp is a recurring job's policy for occurrences missed while the bot
// was down.
type CatchUp string

// Catch-up policies.
const (
	// CatchUpLatest runs the most recent missed occurrence once, marked
	// late, if it is within scheduler.late_grace (the default).
	CatchUpLatest CatchUp = "latest"
	// CatchUpNone runs no missed occurrence: the job waits for its next.
	CatchUpNone CatchUp = "none"
)

// FormatOf says how an assistant message's Content is written, to show it
// again (the web chat's history, the console's transcript): what the model
// wrote (replies, cron and proactive turns) and the answers to chat
// commands are Markdown, a job's message has the job's format (kept in the
// message's metadata), and everything else (notices, the user's own text)
// is text as written.
func FormatOf(m Message) TextFormat {
	if f, ok := m.Metadata["format"].(string); ok {
		return TextFormat(f)
	}
	if m.Role != RoleAssistant || m.Metadata["failure_notice"] == true || m.Metadata["busy_notice"] == true {
		return FormatText
	}
	switch m.Source {
	case SourceReply, SourceCronTurn, SourceProactive, SourceCommand:
		return FormatRichText
	}
	return FormatText
}
