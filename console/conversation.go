package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/console/chart"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/promise"
)

// conversationPage is GET /console/conversations/{id}: one conversation's
// jobs, transcript, mood, facts and summaries.
var conversationPage = &pageDef{
	name:  "conversation",
	nav:   "conversations",
	build: (*reader).buildConversation,
	live:  []string{"conv-stats", "jobs", "transcript", "mood", "facts", "summaries"},
}

// runCache keeps the runs a live page has read that cannot change any
// more (finished), so a tick reads only the new ones. It holds as many as
// a page can show (one per message at most); the least recently used goes
// first, so a page left open on a busy conversation does not grow without
// bound. A nil cache keeps nothing.
type runCache struct {
	runs *lru.Cache[int64, core.Run]
}

func newRunCache() *runCache {
	// New fails only on a size below one.
	runs, _ := lru.New[int64, core.Run](messagesShown)
	return &runCache{runs: runs}
}

func (c *runCache) get(id int64) (core.Run, bool) {
	if c == nil {
		return core.Run{}, false
	}
	return c.runs.Get(id)
}

func (c *runCache) put(r core.Run) {
	if c == nil || r.FinishedAt == nil {
		return
	}
	c.runs.Add(r.ID, r)
}

// conversationData is what the conversation page is built from.
type conversationData struct {
	conv      core.Conversation
	now       time.Time
	messages  []core.Message
	jobs      []core.Job
	facts     []core.Fact
	summaries []core.SessionRecord
	mood      []core.MoodPoint
	// runs are the runs that wrote the messages, by id.
	runs               map[int64]core.Run
	prompt, completion int64
}

func (s *reader) buildConversation(ctx context.Context, r *http.Request, cache *runCache) (framed, error) {
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	conv, err := s.store.Conversation(ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return nil, pageError{http.StatusNotFound, "There is no conversation " + strconv.FormatInt(id, 10) + "."}
	}
	if err != nil {
		return nil, fmt.Errorf("reading conversation %d: %w", id, err)
	}
	d := conversationData{conv: conv, now: s.clock.Now()}
	steps := []struct {
		what string
		run  func() error
	}{
		{"reading messages", func() (err error) { d.messages, err = s.store.RecentMessages(ctx, id, messagesShown); return }},
		{"reading jobs", func() (err error) { d.jobs, err = s.store.Jobs(ctx, id, "", jobsShown); return }},
		{"reading facts", func() (err error) { d.facts, err = s.readFacts(ctx, id); return }},
		{"reading summaries", func() (err error) {
			d.summaries, err = s.store.SummarizedRecords(ctx, id, d.now, summariesShown)
			return
		}},
		{"reading the mood history", func() (err error) { d.mood, err = s.readMood(ctx, id); return }},
		{"reading token usage", func() (err error) { d.prompt, d.completion, err = s.store.ConversationTokens(ctx, id); return }},
		{"reading run records", func() (err error) { d.runs, err = s.runsOf(ctx, d.messages, cache); return }},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			return nil, fmt.Errorf("%s of conversation %d: %w", st.what, id, err)
		}
	}
	v := s.conversationView(d)
	v.Notice = notice(r.URL.Query(), "this conversation")
	v.UserData = s.userData != nil
	return v, nil
}

// readFacts reads the conversation's facts from the plugin that keeps
// them; none without one.
func (s *reader) readFacts(ctx context.Context, id int64) ([]core.Fact, error) {
	if s.facts == nil {
		return nil, nil
	}
	return s.facts.Facts(ctx, id)
}

// readMood reads the conversation's mood history from the plugin that
// keeps it; none without one.
func (s *reader) readMood(ctx context.Context, id int64) ([]core.MoodPoint, error) {
	if s.mood == nil {
		return nil, nil
	}
	return s.mood.MoodHistory(ctx, id, moodPointsShown)
}

// runsOf reads the runs that wrote the assistant messages shown, by id,
// one query per run: a page shows a few hundred messages at most, and
// reading every run of a long conversation (each record holds a rendered
// prompt) would cost more. A run gone from the store is left out.
func (s *reader) runsOf(ctx context.Context, msgs []core.Message, cache *runCache) (map[int64]core.Run, error) {
	runs := map[int64]core.Run{}
	for _, m := range msgs {
		if m.RunID == nil || m.Role != core.RoleAssistant {
			continue
		}
		id := *m.RunID
		if _, done := runs[id]; done {
			continue
		}
		if run, ok := cache.get(id); ok {
			runs[id] = run
			continue
		}
		run, err := s.store.Run(ctx, id)
		if errors.Is(err, core.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cache.put(run)
		runs[id] = run
	}
	return runs, nil
}

type conversationView struct {
	layout
	Conversation conversationItem
	// Zone names the zone the page's times are in, and ZoneFrom why.
	Zone, ZoneFrom string
	Notice         string
	// Tokens the conversation's runs used.
	PromptTokens, CompletionTokens string
	Messages                       []messageItem
	// Older is how many older messages the page leaves out.
	Older     int64
	Jobs      []jobItem
	Facts     []factItem
	Summaries []summaryItem
	Mood      chart.Mood
	// UserData offers the user's data: export and erase.
	UserData bool
}

type messageItem struct {
	Seq     int64
	Time    string
	Role    string
	Source  string
	Content string
	// HTML is Content rendered, for a message in Markdown (the model's
	// replies): markup.HTML sanitises it, so it is safe as markup.
	HTML template.HTML
	// Flags say what kind of message it is beyond its source; each is a
	// fixed label.
	Silent, Failure, Busy bool
	Status                string
	Undelivered           string
	// Held names the per-user limit that held a user's message (stored,
	// no turn); LimitNotice the limit a notice told the user of.
	Held, LimitNotice string
	// Spoken marks a voice note's transcript; Files are the files the
	// user sent with the message.
	Spoken bool
	Files  []fileItem
	// Reactions are the emoji the user put on a bot message; Edited
	// when the user last changed their message, Deleted that they
	// deleted it (marks.go).
	Reactions []string
	Edited    string
	Deleted   bool
	// Run is the record of the run that wrote the message, under the
	// run's last message; nil elsewhere.
	Run *runItem
}

// fileItem is a file a user sent: a line describing it, and for an image
// the console can fetch, its thumbnail's address.
type fileItem struct {
	Line  string
	Thumb string
}

// runItem is a run record as the transcript shows it, collapsed.
type runItem struct {
	ID            int64
	Kind          string
	Status        string
	Error         string
	Model         string
	Started       string
	Duration      string
	PromptID      string
	PromptVersion string
	PromptTokens  int
	OutputTokens  int
	TotalTokens   int
	Rounds        int
	Notes         []string
	TurnNotes     []string
	Reasoning     string
	Tools         []toolItem
	Template      *core.TemplateRecord
	// Continuation is what the turn said more, when it asked to.
	Continuation *core.ContinuationRecord
	// Promise is the later message the reply promised unscheduled, and
	// Kept how the extra round kept it, in words.
	Promise *promise.Record
	Kept    string
}

// keptWords says how a caught promise was kept.
func keptWords(rec *promise.Record) string {
	switch rec.Kept {
	case promise.KeptScheduled:
		return "kept: the model scheduled it"
	case promise.KeptFollowUp:
		return "kept: the bot will write first (a follow-up)"
	case promise.KeptReworded:
		return "reworded: the reply sent promises nothing"
	}
	return "not kept"
}

// toolItem is one tool call of a run: its arguments (indented when they
// are JSON) and result.
type toolItem struct {
	ID, Name          string
	Arguments, Result string
	IsError           bool
}

func (s *reader) newRunItem(r core.Run, at func(time.Time) string) *runItem {
	it := &runItem{ID: r.ID, Kind: string(r.Kind), Status: string(r.Status), Error: r.Error, Model: r.Model,
		PromptID: r.Record.PromptID, PromptVersion: r.Record.PromptVersion,
		PromptTokens: r.PromptTokens, OutputTokens: r.CompletionTokens, TotalTokens: r.TotalTokens,
		Rounds: r.Record.Rounds, Notes: r.Record.Notes, TurnNotes: r.Record.TurnNotes, Reasoning: r.Record.Reasoning,
		Template: r.Record.Template, Continuation: r.Record.Continuation, Promise: r.Record.Promise}
	if it.Promise != nil {
		it.Kept = keptWords(it.Promise)
	}
	if r.StartedAt != nil {
		it.Started = at(*r.StartedAt)
		if r.FinishedAt != nil {
			it.Duration = r.FinishedAt.Sub(*r.StartedAt).Round(10 * time.Millisecond).String()
		}
	}
	for _, c := range r.Record.ToolCalls {
		it.Tools = append(it.Tools, toolItem{ID: c.ID, Name: c.Name, Arguments: indentJSON(c.Arguments),
			Result: indentJSON(c.Result), IsError: c.IsError})
	}
	return it
}

// indentJSON is s indented when it is a JSON object or array, else s.
func indentJSON(s string) string {
	var buf bytes.Buffer
	if len(s) > 0 && (s[0] == '{' || s[0] == '[') && json.Indent(&buf, []byte(s), "", "  ") == nil {
		return buf.String()
	}
	return s
}

type jobItem struct {
	ID          int64
	Kind        string
	Status      string
	Due         string
	Text        string
	Name        string
	Recurrence  string
	Attempts    int
	LastError   string
	Origin      string
	SentAt      string
	CancelledBy string
	Cancellable bool
	Retryable   bool
	// NowBefore marks the first job due after now: the timeline draws
	// "now" above it.
	NowBefore bool
}

type factItem struct {
	Key, Content, LastUsed string
}

type summaryItem struct {
	ID            int64
	Started, Span string
	Summary       string
}

// conversationView builds the conversation page, times in the
// conversation's zone (the bot's default when it has none).
func (s *reader) conversationView(d conversationData) *conversationView {
	loc, from := s.loc, "the bot's default zone: the conversation has none"
	if d.conv.TimeZone != "" {
		if l, err := time.LoadLocation(d.conv.TimeZone); err == nil {
			loc, from = l, "the conversation's zone"
		} else {
			from = fmt.Sprintf("the bot's default zone: the conversation's %q is not a known zone", d.conv.TimeZone)
		}
	}
	at := func(t time.Time) string { return t.In(loc).Format(timeLayout) }
	v := &conversationView{Conversation: s.conversationRow(d.conv), Zone: loc.String(), ZoneFrom: from,
		PromptTokens: chart.Count(d.prompt), CompletionTokens: chart.Count(d.completion)}
	if len(d.messages) > 0 {
		v.Older = max(d.messages[0].Seq-1, 0)
	}
	// A run's record goes under the last message it wrote.
	lastOfRun := map[int64]int{}
	for i, m := range d.messages {
		if m.RunID != nil && m.Role == core.RoleAssistant {
			lastOfRun[*m.RunID] = i
		}
	}
	for i, m := range d.messages {
		it := messageItem{Seq: m.Seq, Time: at(m.CreatedAt), Role: string(m.Role), Source: string(m.Source), Content: m.Content,
			Silent: m.Metadata["silent"] == true, Failure: m.Metadata["failure_notice"] == true, Busy: m.Metadata["busy_notice"] == true}
		if m.Role == core.RoleAssistant && core.FormatOf(m) == core.FormatRichText {
			// markup.HTML's output is sanitised: safe to insert as markup.
			it.HTML = template.HTML(markup.HTML(m.Content))
		}
		if st, ok := m.Metadata["status_notice"].(string); ok {
			it.Status = st
		}
		it.Spoken = m.Metadata["spoken"] == true
		it.Reactions, it.Edited, it.Deleted = changeMarks(m, at)
		for n, a := range core.AttachmentsOf(m) {
			f := fileItem{Line: fileLine(a)}
			if a.Kind == core.AttachImage && a.Ref != "" && s.fetch != nil {
				f.Thumb = fmt.Sprintf("%sconversations/%d/files/%d/%d", Prefix, d.conv.ID, m.Seq, n)
			}
			it.Files = append(it.Files, f)
		}
		if e, ok := m.Metadata["undelivered"].(string); ok {
			it.Undelivered = e
		}
		it.Held, _ = m.Metadata["limited"].(string)
		it.LimitNotice, _ = m.Metadata["limit_notice"].(string)
		if m.RunID != nil && lastOfRun[*m.RunID] == i {
			if r, ok := d.runs[*m.RunID]; ok {
				it.Run = s.newRunItem(r, at)
			}
		}
		v.Messages = append(v.Messages, it)
	}
	v.Jobs = jobTimeline(d.jobs, d.now, at)
	for _, f := range d.facts {
		v.Facts = append(v.Facts, factItem{Key: f.Key, Content: f.Content, LastUsed: at(f.LastAccessedAt)})
	}
	for _, r := range d.summaries {
		it := summaryItem{ID: r.ID, Started: at(r.StartedAt), Summary: r.Summary}
		if r.EndedAt != nil {
			it.Span = r.EndedAt.Sub(r.StartedAt).Round(time.Minute).String()
		}
		v.Summaries = append(v.Summaries, it)
	}
	v.Mood = chart.NewMood(d.mood, at)
	return v
}

// jobTimeline orders jobs by when they are (or were) due, oldest first,
// and marks where now falls.
func jobTimeline(jobs []core.Job, now time.Time, at func(time.Time) string) []jobItem {
	type dated struct {
		job core.Job
		due time.Time
	}
	ds := make([]dated, len(jobs))
	for i, j := range jobs {
		due := j.DueAt
		if j.NextRunAt != nil && j.Status == core.JobPending {
			due = *j.NextRunAt // a recurring job's next occurrence
		}
		ds[i] = dated{j, due}
	}
	sort.SliceStable(ds, func(a, b int) bool {
		if !ds[a].due.Equal(ds[b].due) {
			return ds[a].due.Before(ds[b].due)
		}
		return ds[a].job.ID < ds[b].job.ID
	})
	out := make([]jobItem, len(ds))
	marked := false
	for i, d := range ds {
		j := d.job
		it := jobItem{ID: j.ID, Kind: string(j.Kind), Status: string(j.Status), Due: at(d.due), Text: j.Text, Name: j.Name,
			Recurrence: j.Recurrence, Attempts: j.Attempts, LastError: j.LastError, Origin: j.Origin,
			CancelledBy: j.CancelledByToolCallID,
			// The store's rule: pending, or a recurring job the scheduler
			// holds (it then plans no run).
			Cancellable: j.Status == core.JobPending || (j.Kind == core.JobAgentTurn && j.Status == core.JobSending),
			Retryable:   j.Status == core.JobFailed}
		if j.SentAt != nil {
			it.SentAt = at(*j.SentAt)
		}
		if !marked && d.due.After(now) {
			it.NowBefore, marked = true, true
		}
		out[i] = it
	}
	return out
}

// fileLine describes a file a user sent: "image (cat.png, image/png,
// 12 KB)", a sticker with its emoji.
func fileLine(a core.Attachment) string {
	line := string(a.Kind)
	if a.Emoji != "" {
		line += " " + a.Emoji
	}
	if d := a.Details(); d != "" {
		line += " (" + d + ")"
	}
	return line
}
