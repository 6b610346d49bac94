package core

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by a Store when a row does not exist.
var ErrNotFound = errors.New("not found")

// ErrTooManyPending is returned when a conversation already has as many
// pending scheduled messages as allowed.
var ErrTooManyPending = errors.New("too many pending scheduled messages")

// ErrDuplicateInbound is returned by RecordInbound for a user message the
// conversation already has (the same platform message id): a platform's
// redelivery, perhaps to another replica. Nothing is written.
var ErrDuplicateInbound = errors.New("the message is already stored")

// ErrDuplicateJob is returned by CreateJob for a job whose IdempotencyKey
// another job has.
var ErrDuplicateJob = errors.New("a job with this idempotency key exists")

// ErrTooManyRecurring is returned when a conversation already has as many
// recurring jobs as allowed.
var ErrTooManyRecurring = errors.New("too many recurring jobs")

// ErrNotPending is returned when a job to cancel is no longer pending.
var ErrNotPending = errors.New("the job is no longer pending")

// ErrNotFailed is returned when a job to retry has not failed.
var ErrNotFailed = errors.New("the job has not failed")

// ErrEmptyQuery is returned by a search whose keyword holds nothing to
// search for (only spaces or punctuation).
var ErrEmptyQuery = errors.New("the search has no words to look for")

// ErrStoreUnavailable is wrapped by a Store's error when the database
// cannot take a write now, whatever was written: its disk is full, it is
// read-only, an I/O error, it cannot be opened or reached, another process
// holds it locked. Trying the same write again later can succeed, so what
// must not be lost (a user's message, a run's outcome) is kept and tried
// again, never dropped as bad. Any other error may be the write's own
// fault.
var ErrStoreUnavailable = errors.New("the store cannot take writes")

// IsNotFound reports whether err is, or wraps, ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// ErrLostRun is returned when a run is completed by a worker that no longer
// owns it (it was reaped or cancelled meanwhile); nothing was written.
var ErrLostRun = errors.New("run is no longer owned by this worker")

// InboundRecord is an inbound user message to store.
type InboundRecord struct {
	Platform        Platform
	ChannelThreadID string
	ChannelUserID   string
	DisplayName     string
	// TimeZone is set on a conversation the store creates.
	TimeZone          string
	Text              string
	PlatformMessageID string
	Metadata          map[string]any
	// Source is the stored message's source (default SourceUser); a chat
	// command is SourceCommand, which no run planning counts as the user
	// writing.
	Source Source
	// Now is the time the core received the message: its CreatedAt.
	Now time.Time
	// PlanRun asks the store to plan a user_turn run for the message: a
	// queued run of the conversation is reused (its trigger, expected last
	// message and RunAfter move to this message; a queued cron_turn keeps
	// its kind), otherwise a new one is created.
	PlanRun bool
	// RunAfter is when the planned run may start (debounce); zero is Now.
	RunAfter time.Time
	// ClaimFor, when set, claims the planned run for that owner in the
	// same transaction if it is due at once (RunAfter not after Now) and
	// nothing runs in its conversation: InboundResult.Run comes back
	// running, for the caller to execute without a claim of its own.
	ClaimFor string
	// WhileRunning says what to do when the conversation has a running run
	// (runs.during_generation); empty is BusyQueue.
	WhileRunning BusyPolicy
	// SessionGap starts a new session record when the previous message is
	// more than this before Now (0: one record for ever).
	SessionGap time.Duration
	// Answers, when set, is the question (a bot message's id) this message
	// answers with its choice Choice (a tap, choices.go): the store checks
	// that the question is the conversation's and still open
	// (ErrStaleChoice, ErrAlreadyAnswered otherwise, storing nothing),
	// records it answered, and stores the choice's label as the text.
	Answers int64
	Choice  int
	// ChoiceData, when set, is the data of the button tapped: a button
	// the core answers itself (a command's), which the question must show
	// as its choice Choice. Empty for a question of the model's, whose
	// buttons carry ChoiceData of its id.
	ChoiceData string
}

// BusyPolicy is what a user message does to a conversation whose turn is
// being generated (runs.during_generation).
type BusyPolicy string

// Busy policies.
const (
	// BusyReject stores the message and plans no run; the user is told the
	// bot is still answering.
	BusyReject BusyPolicy = "reject"
	// BusyQueue plans one queued run that follows the running one.
	BusyQueue BusyPolicy = "queue"
	// BusyRestart asks the running run to cancel (cancel_requested_at) and
	// plans a queued run that answers everything.
	BusyRestart BusyPolicy = "restart"
)

// InboundResult is what RecordInbound wrote.
type InboundResult struct {
	Conversation Conversation
	Message      Message
	// Run is the planned run; nil when PlanRun was false or the message was
	// rejected.
	Run *Run
	// Running is the conversation's running run when the message arrived;
	// looked up only under BusyReject and BusyRestart, where it matters.
	Running *Run
	// Rejected is true when BusyReject kept the message from planning a run.
	Rejected bool
	// NewRecord is true when the message started a session record;
	// EndedRecordID is then the record it ended, if any.
	NewRecord     bool
	EndedRecordID *int64
}

// RunCompletion finishes a claimed run.
type RunCompletion struct {
	Status RunStatus
	Error  string
	// Messages are appended to the conversation (with fresh seqs, RunID set
	// to the run) in the same transaction that finishes the run; one
	// already stored (ID set: a reply stored before it was sent) has its
	// delivery settled there instead (see SettleDelivery).
	Messages                                    []*Message
	Record                                      RunRecord
	PromptTokens, CompletionTokens, TotalTokens int
	// Model is the model that answered (the server's name for it when it
	// gave one, else the one asked for); "" when no model was called.
	Model string
	Now   time.Time
	// Jobs are created in the same transaction (proactive follow-ups);
	// each gets its ConversationID and AfterSeq (the conversation's newest
	// seq once Messages are in) filled.
	Jobs []*Job
	// JobOutcome settles the run's job (Run.JobID), if it has one.
	JobOutcome *JobOutcome
}

// JobOutcome is what a finished run makes of the job it executed.
type JobOutcome struct {
	// Status is the job's new status: sent, cancelled or failed when it is
	// over, pending to try again at DueAt.
	Status JobStatus
	DueAt  time.Time
	Error  string
}

// JobPlan is what PlanJobRun did with a claimed proactive job.
type JobPlan struct {
	// RunID is the queued run that executes the job; 0 when none was planned.
	RunID int64
	// Dropped says why the job was cancelled as stale ("" when it was not).
	Dropped string
	// Busy is true when the conversation already had a queued run; the job
	// was put back to pending at the retry time.
	Busy bool
}

// CronStart is what the scheduler decided about a due recurring job.
type CronStart struct {
	// Occurrence is the occurrence to run now; nil runs none (every one
	// due was missed and the job's catch-up policy runs none of them).
	Occurrence *time.Time
	// Next is the job's next occurrence after now.
	Next time.Time
	// Note is kept as the job's last error: what was skipped, and why.
	Note string
	// RetryAt is when to look again if the conversation already has a
	// queued turn (the occurrence is kept).
	RetryAt time.Time
	Now     time.Time
}

// CronPlan is what StartCronTurn did.
type CronPlan struct {
	// RunID is the queued cron_turn run; 0 when none was planned.
	RunID int64
	// Busy is true when the conversation already had a queued run: the job
	// waits until RetryAt with its occurrence kept.
	Busy bool
	// Duplicate is true when the occurrence already had its run (another
	// scheduler planned it); the job moved on to Next.
	Duplicate bool
	// Lost is true when the job was no longer this scheduler's (cancelled,
	// or its lease taken over); nothing was written.
	Lost bool
}

// Store is what the engines need from persistence: the union of the roles
// they take (RunStore, MessageStore, JobStore), so that each may be given
// only the roles it uses. store implements it on gorm (SQLite,
// PostgreSQL).
type Store interface {
	RunStore
	MessageStore
	JobStore
}

// RunStore is the run queue: the turn engine claims due runs, keeps
// them alive, completes them, and reaps those whose process died.
type RunStore interface {
	// ClaimRun marks the oldest due queued run whose conversation has no
	// running run as running for owner and returns it; nil when none is due.
	// Given platforms, only conversations on them are considered. A due
	// proactive or continue run whose conversation has moved on since it
	// was planned (its newest message is not the run's expected last
	// message) is marked skipped instead, and the next one is tried.
	ClaimRun(ctx context.Context, owner string, now time.Time, platforms ...Platform) (*Run, error)
	// ClaimRuns is ClaimRun up to limit times at once; it returns the runs
	// claimed, fewer than limit when fewer were due.
	ClaimRuns(ctx context.Context, owner string, now time.Time, limit int, platforms ...Platform) ([]*Run, error)
	// NextRunAfter is the earliest RunAfter of a queued run that a claim
	// could take once due (its conversation has no running run; on one of
	// platforms when any are given), nil if none.
	NextRunAfter(ctx context.Context, platforms ...Platform) (*time.Time, error)
	// HeartbeatRuns refreshes the heartbeat of those of runIDs that owner
	// still holds as running. It returns the ids whose work must stop: the
	// ones with a cancel requested and the ones owner no longer holds.
	HeartbeatRuns(ctx context.Context, owner string, now time.Time, runIDs []int64) (stop []int64, err error)
	// CompleteRun finishes a run that owner still holds as running, appending
	// c.Messages; it returns ErrLostRun, writing nothing, otherwise.
	CompleteRun(ctx context.Context, runID int64, owner string, c RunCompletion) error
	// CompleteRunAndClaim is CompleteRun and then, in the same transaction,
	// ClaimRun(owner, c.Now); it returns the claimed run, nil if none is due.
	CompleteRunAndClaim(ctx context.Context, runID int64, owner string, c RunCompletion, platforms ...Platform) (*Run, error)
	// ReapStaleRuns fails running runs whose heartbeat is older than
	// before, and queues a user's turn among them again once when nothing
	// else would answer it; it returns how many it failed and queued.
	ReapStaleRuns(ctx context.Context, now, before time.Time) (reaped, retried int, err error)
	// NoteGrown records the platform messages a run's streamed reply has
	// grown so far (Run.Grown), while owner holds it running. The reaper
	// hands a dead run's to the run queued in its conversation, unless
	// the dead run stored a reply (which carries them itself).
	NoteGrown(ctx context.Context, runID int64, owner string, grown []string) error
}

// MessageStore is the conversations and their messages: recording an
// inbound message, reading the history a turn needs, appending and
// delivering replies, and the session record whose prompt a turn freezes.
type MessageStore interface {
	// RecordInbound finds or creates the conversation, appends the user
	// message with the next seq and plans a run, in one transaction.
	RecordInbound(ctx context.Context, in InboundRecord) (InboundResult, error)
	// Conversation returns a conversation by id (ErrNotFound).
	Conversation(ctx context.Context, id int64) (Conversation, error)
	// ConversationByThread returns a conversation by its platform address.
	ConversationByThread(ctx context.Context, p Platform, channelThreadID string) (Conversation, error)
	// RecentMessages returns up to limit of the newest messages, oldest first.
	RecentMessages(ctx context.Context, conversationID int64, limit int) ([]Message, error)
	// MessagesAfter is RecentMessages limited to messages with a seq above
	// afterSeq.
	MessagesAfter(ctx context.Context, conversationID, afterSeq int64, limit int) ([]Message, error)
	// AppendMessage appends m with the next seq and sets its ID and Seq.
	AppendMessage(ctx context.Context, m *Message) error
	// SetMessageText replaces a stored message's content and metadata
	// (by m.ID) and its search entry; its seq and time stay.
	SetMessageText(ctx context.Context, m Message) error
	// MessageByPlatformID returns the conversation's message of role
	// with that platform id (ErrNotFound if none).
	MessageByPlatformID(ctx context.Context, conversationID int64, platformMessageID string, role Role) (Message, error)
	// SettleDelivery records where a stored outbound message now stands:
	// its Delivery, PlatformMessageID and Metadata (by m.ID).
	SettleDelivery(ctx context.Context, m Message) error
	// PendingDeliveries returns the conversation's outbound messages left
	// DeliverySending by runs other than exceptRun (their process died
	// mid-send), oldest first.
	PendingDeliveries(ctx context.Context, conversationID, exceptRun int64) ([]Message, error)
	// SessionRecord returns a session record by id (ErrNotFound).
	SessionRecord(ctx context.Context, id int64) (SessionRecord, error)
	// FreezePrompt stores prompt as the record's prompt stack unless it has
	// one, and returns the one kept.
	FreezePrompt(ctx context.Context, recordID int64, prompt string) (string, error)
}

// JobStore is the job queue: the scheduler claims due jobs, plans the run
// of a proactive job or a cron turn, sends a message job and settles it.
type JobStore interface {
	// Job returns a job by id (ErrNotFound).
	Job(ctx context.Context, id int64) (Job, error)
	// ClaimDueJobs marks up to limit due jobs of kinds (and sending ones
	// whose lease expired) as sending for owner until leaseUntil.
	// Given platforms, only jobs of conversations on them.
	ClaimDueJobs(ctx context.Context, owner string, now, leaseUntil time.Time, kinds []JobKind, limit int, platforms ...Platform) ([]Job, error)
	// NextJobDue is when the next job of kinds (on platforms, if given)
	// becomes claimable, nil if never.
	NextJobDue(ctx context.Context, kinds []JobKind, platforms ...Platform) (*time.Time, error)
	// ReleaseJob hands back a job owner holds with a new status, due time
	// and note; false when it was no longer owner's.
	ReleaseJob(ctx context.Context, id int64, owner string, status JobStatus, dueAt time.Time, note string) (bool, error)
	// CompleteMessageJob stores the sent message m of a message job owner
	// holds (next seq, the conversation's current record) and marks the job
	// sent, in one transaction; false, writing nothing, when the job is no
	// longer owner's.
	CompleteMessageJob(ctx context.Context, jobID int64, owner string, m *Message) (bool, error)
	// FailJobAttempt counts a failed attempt of a job owner holds and sets
	// it to status (pending again at dueAt, or failed) with note.
	FailJobAttempt(ctx context.Context, id int64, owner string, status JobStatus, dueAt time.Time, note string) (bool, error)
	// StartCronTurn plans the cron_turn run of a recurring job owner holds
	// (one per occurrence, whichever process asks) and moves the job on
	// to its next occurrence, in one transaction.
	StartCronTurn(ctx context.Context, job Job, owner string, c CronStart) (CronPlan, error)
	// AppendTrigger appends a cron turn's trigger event to its
	// conversation like an inbound message: the next seq, and a new session
	// record when the previous message is more than gap before it. It sets
	// m's ID, Seq and SessionRecordID and returns the conversation as it
	// now is.
	AppendTrigger(ctx context.Context, m *Message, gap time.Duration) (Conversation, error)
	// PlanJobRun plans the run of a proactive job owner holds, or drops
	// the job as stale, or puts it back until retryAt when the
	// conversation already has a queued run.
	PlanJobRun(ctx context.Context, job Job, owner string, now, retryAt time.Time) (JobPlan, error)
}
