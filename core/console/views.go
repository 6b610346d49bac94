package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/markup"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages are the console's templates, each parsed with the layout. Parsed
// once: a template error is a bug found by any test, not at request time.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{"login", "error", "conversations", "conversation"} {
		out[name] = template.Must(template.New(name).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}()

// render writes page with v. html/template escapes every value for its
// context, so user text is always text, never markup.
func (s *Console) render(w http.ResponseWriter, r *http.Request, code int, page string, v any) {
	var buf bytes.Buffer
	if err := pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		// Rendered into a buffer first so a failure is a clean 500, not
		// half a page.
		s.log.Error("console: rendering a page", "page", page, "path", r.URL.Path, "err", err)
		http.Error(w, "internal error rendering the page; see the bot's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

// layout is what every page's frame needs.
type layout struct {
	// CSRF is the session's CSRF token; empty when logged out (no logout
	// button then).
	CSRF string
}

type loginView struct {
	layout
	Next  string
	Error string
}

type errorView struct {
	layout
	Code    int
	Status  string
	Message string
}

type conversationsView struct {
	layout
	Conversations []conversationItem
	Page          int
	Prev, Next    int
}

type conversationItem struct {
	ID           int64
	Platform     string
	Name         string
	UserID       string
	TimeZone     string
	Messages     int64
	LastActivity string
}

// utcLayout is how the conversations list shows times (always UTC).
const utcLayout = "2006-01-02 15:04 UTC"

// timeLayout is how a conversation's page shows times, in its zone.
const timeLayout = "2006-01-02 15:04:05 MST"

func conversationRow(c core.Conversation) conversationItem {
	it := conversationItem{ID: c.ID, Platform: string(c.Platform), Name: c.DisplayName, UserID: c.ChannelUserID,
		TimeZone: c.TimeZone, Messages: c.LastSeq}
	if c.LastMessageAt != nil {
		it.LastActivity = c.LastMessageAt.UTC().Format(utcLayout)
	}
	return it
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
	runs map[int64]core.Run
}

type conversationView struct {
	layout
	Conversation conversationItem
	// Zone names the zone the page's times are in, and ZoneFrom why.
	Zone, ZoneFrom string
	Notice         string
	Messages       []messageItem
	// Older is how many older messages the page leaves out.
	Older     int64
	Jobs      []jobItem
	Facts     []factItem
	Summaries []summaryItem
	Mood      moodChart
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
	// Spoken marks a voice note's transcript; Files lists the files the
	// user sent with the message, one line each.
	Spoken bool
	Files  []string
	// Run is the record of the run that wrote the message, under the
	// run's last message; nil elsewhere.
	Run *runItem
}

// runItem is a run record as the transcript shows it, collapsed.
type runItem struct {
	ID            int64
	Kind          string
	Status        string
	Error         string
	PromptID      string
	PromptVersion string
	PromptTokens  int
	OutputTokens  int
	TotalTokens   int
	Rounds        int
	ToolCalls     int
	Notes         []string
	Reasoning     string
}

func newRunItem(r core.Run) *runItem {
	return &runItem{ID: r.ID, Kind: string(r.Kind), Status: string(r.Status), Error: r.Error,
		PromptID: r.Record.PromptID, PromptVersion: r.Record.PromptVersion,
		PromptTokens: r.PromptTokens, OutputTokens: r.CompletionTokens, TotalTokens: r.TotalTokens,
		Rounds: r.Record.Rounds, ToolCalls: len(r.Record.ToolCalls), Notes: r.Record.Notes, Reasoning: r.Record.Reasoning}
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
func (s *Console) conversationView(d conversationData) conversationView {
	loc, from := s.loc, "the bot's default zone: the conversation has none"
	if d.conv.TimeZone != "" {
		if l, err := time.LoadLocation(d.conv.TimeZone); err == nil {
			loc, from = l, "the conversation's zone"
		} else {
			from = fmt.Sprintf("the bot's default zone: the conversation's %q is not a known zone", d.conv.TimeZone)
		}
	}
	at := func(t time.Time) string { return t.In(loc).Format(timeLayout) }
	v := conversationView{Conversation: conversationRow(d.conv), Zone: loc.String(), ZoneFrom: from}
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
		for _, a := range core.AttachmentsOf(m) {
			it.Files = append(it.Files, fileLine(a))
		}
		if e, ok := m.Metadata["undelivered"].(string); ok {
			it.Undelivered = e
		}
		if m.RunID != nil && lastOfRun[*m.RunID] == i {
			if r, ok := d.runs[*m.RunID]; ok {
				it.Run = newRunItem(r)
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
	v.Mood = newMoodChart(d.mood, at)
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
			Cancellable: j.Status == core.JobPending || (j.Kind == core.JobAgentTurn && j.Status == core.JobSending)}
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
