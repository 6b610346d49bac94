package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/parleybot/parley/console/chart"
	"github.com/parleybot/parley/console/words"
	"github.com/parleybot/parley/core"
)

// What the jobs page lists.
const (
	// timelineShown bounds each due-time window's list.
	timelineShown = 100
	// recentJobsShown is how many recently sent or failed jobs are listed.
	recentJobsShown = 50
	// jobsPerPage is a filtered list's page.
	jobsPerPage = 50
	// occurrencesShown is how many next occurrences a recurring job shows.
	occurrencesShown = 3
)

// jobsPage is GET /console/jobs: the jobs of every conversation.
var jobsPage = &pageDef{
	name:   "jobs",
	nav:    "jobs",
	build:  (*reader).buildJobs,
	perBot: true,
	live:   []string{"job-lists"},
}

// jobStatuses are the statuses the filter offers.
var jobStatuses = []core.JobStatus{core.JobPending, core.JobSending, core.JobSent, core.JobFailed, core.JobCancelled}

// platformPattern is what a platform name in the filter may be.
var platformPattern = regexp.MustCompile(`^[a-z0-9_.-]{1,40}$`)

type jobsView struct {
	layout
	Zone   string
	Notice string
	// The filter as given, and the choices the form offers.
	Status, Platform string
	Statuses         []option
	Platforms        []option
	// Filtered is true when a status is chosen: one list of that status
	// (List, Total, Prev, Next) instead of the timeline.
	Filtered   bool
	List       []jobRowItem
	Total      int64
	Page       int
	Prev, Next string
	// The timeline: due within a day (overdue included), due within a
	// week, recurring jobs, and what was recently sent or failed.
	Windows           []timeline
	Recurring, Recent []jobRowItem
}

type option struct {
	Value, Label string
	Selected     bool
}

// timeline is a window of due times: a strip chart and the list.
type timeline struct {
	ID, Title string
	Total     int64
	Jobs      []jobRowItem
	// Hidden is how many more are due than the list shows.
	Hidden int64
	Chart  chart.Timeline
}

// jobRowItem is a job in a list, with its conversation.
type jobRowItem struct {
	ID, ConversationID int64
	Conversation       string
	// Bot is its bot's id, with several bots ("" with one); Pick is the
	// bot picked, which its links keep.
	Bot, Pick    string
	Platform     string
	Kind, Status string
	// Due is in the owner's zone; DueUser in the user's, when it is
	// another ("" when the same); When is relative ("in 3 h").
	Due, DueUser, UserZone, When string
	Overdue                      bool
	Text, Name, Recurrence       string
	// Next are a recurring job's next occurrences, in the user's zone.
	Next        []string
	Attempts    int
	LastError   string
	Origin      string
	SentAt      string
	Updated     string
	CancelledBy string
	Cancellable bool
	Retryable   bool
	// Back is where its Cancel and Retry buttons come back to.
	Back string
}

// rowContext is a job row with what its forms need.
type rowContext struct {
	J    jobRowItem
	CSRF string
}

func (s *reader) buildJobs(ctx context.Context, r *http.Request, _ *runCache) (framed, error) {
	q := r.URL.Query()
	v := &jobsView{Zone: s.loc.String(), Status: q.Get("status"), Platform: q.Get("platform"),
		Notice: notice(q, "")}
	base, err := s.jobsFilter(v)
	if err != nil {
		return nil, err
	}
	back := pagePath(r)
	if enc := filterQuery(s.pick.id, v.Status, v.Platform, 0); enc != "" {
		back += "?" + enc
	}
	l := jobLists{s: s, base: base, now: s.clock.Now(), back: back}
	if v.Status != "" {
		err = l.filtered(ctx, r, v)
	} else {
		err = l.timeline(ctx, v)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// jobsFilter checks the filter v was asked for, fills in the choices its
// form offers and returns it as the store's filter (without a status).
func (s *reader) jobsFilter(v *jobsView) (core.JobFilter, error) {
	base := core.JobFilter{}
	if v.Platform != "" {
		if !platformPattern.MatchString(v.Platform) {
			return base, pageError{http.StatusBadRequest, "The platform must be a platform's name, such as telegram."}
		}
		base.Platform = core.Platform(v.Platform)
	}
	v.Statuses = append(v.Statuses, option{Value: "", Label: "any status", Selected: v.Status == ""})
	known := false
	for _, st := range jobStatuses {
		sel := string(st) == v.Status
		known = known || sel
		v.Statuses = append(v.Statuses, option{Value: string(st), Label: string(st), Selected: sel})
	}
	if v.Status != "" && !known {
		return base, pageError{http.StatusBadRequest, "The status must be pending, sending, sent, failed or cancelled."}
	}
	if len(s.platforms) > 0 {
		v.Platforms = append(v.Platforms, option{Value: "", Label: "any platform", Selected: v.Platform == ""})
		for _, p := range s.platforms {
			v.Platforms = append(v.Platforms, option{Value: string(p), Label: string(p), Selected: string(p) == v.Platform})
		}
	}
	return base, nil
}

// jobLists fills the jobs page's lists: jobs within base (the platform
// filter), as rows whose buttons come back to back.
type jobLists struct {
	s    *reader
	base core.JobFilter
	now  time.Time
	back string
}

func (l jobLists) row(j core.JobRow) jobRowItem { return l.s.jobRow(j, l.now, l.back) }

// filtered fills v's one list of v.Status, a page of it.
func (l jobLists) filtered(ctx context.Context, r *http.Request, v *jobsView) error {
	v.Filtered = true
	v.Page = 1
	if p := r.URL.Query().Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return pageError{http.StatusBadRequest, "The page number must be a positive integer."}
		}
		v.Page = n
	}
	f := l.base
	f.Statuses = []core.JobStatus{core.JobStatus(v.Status)}
	// What is done is listed by when it was done, newest first; what
	// is to come by when it is due.
	f.Recent = v.Status != string(core.JobPending) && v.Status != string(core.JobSending)
	total, err := l.s.store.CountJobs(ctx, f)
	if err != nil {
		return fmt.Errorf("counting jobs: %w", err)
	}
	v.Total = total
	f.Limit, f.Offset = jobsPerPage+1, (v.Page-1)*jobsPerPage
	rows, err := l.s.store.JobsAcross(ctx, f)
	if err != nil {
		return fmt.Errorf("listing jobs: %w", err)
	}
	if len(rows) > jobsPerPage {
		rows = rows[:jobsPerPage]
		v.Next = pagePath(r) + "?" + filterQuery(l.s.pick.id, v.Status, v.Platform, v.Page+1)
	}
	if v.Page > 1 {
		v.Prev = pagePath(r) + "?" + filterQuery(l.s.pick.id, v.Status, v.Platform, v.Page-1)
	}
	for _, j := range rows {
		v.List = append(v.List, l.row(j))
	}
	return nil
}

// timeline fills v's timeline: what is due within a day and within a
// week, the recurring jobs, and what was recently sent or failed.
func (l jobLists) timeline(ctx context.Context, v *jobsView) error {
	dayEnd, weekEnd := l.now.Add(24*time.Hour), l.now.Add(7*24*time.Hour)
	day, err := l.window(ctx, "due-day", "Overdue and due in the next 24 hours", nil, dayEnd, 24*time.Hour)
	if err != nil {
		return err
	}
	// After the first day: a job due exactly at its end is in the first.
	after := dayEnd.Add(time.Nanosecond)
	week, err := l.window(ctx, "due-week", "Due in 1 to 7 days", &after, weekEnd, 7*24*time.Hour)
	if err != nil {
		return err
	}
	v.Windows = []timeline{day, week}

	rec := l.base
	rec.Statuses = []core.JobStatus{core.JobPending, core.JobSending}
	rec.Kinds = []core.JobKind{core.JobAgentTurn}
	rec.Limit = timelineShown
	rows, err := l.s.store.JobsAcross(ctx, rec)
	if err != nil {
		return fmt.Errorf("listing recurring jobs: %w", err)
	}
	for _, j := range rows {
		if j.Recurrence != "" {
			v.Recurring = append(v.Recurring, l.row(j))
		}
	}

	recent := l.base
	recent.Statuses = []core.JobStatus{core.JobSent, core.JobFailed}
	recent.Recent, recent.Limit = true, recentJobsShown
	if rows, err = l.s.store.JobsAcross(ctx, recent); err != nil {
		return fmt.Errorf("listing recent jobs: %w", err)
	}
	for _, j := range rows {
		v.Recent = append(v.Recent, l.row(j))
	}
	return nil
}

// window is the pending jobs due from from (nil: overdue ones too) to to,
// charted over span from now.
func (l jobLists) window(ctx context.Context, id, title string, from *time.Time, to time.Time, span time.Duration) (timeline, error) {
	f := l.base
	f.Statuses = []core.JobStatus{core.JobPending}
	f.DueFrom, f.DueTo = from, &to
	t := timeline{ID: id, Title: title}
	var err error
	if t.Total, err = l.s.store.CountJobs(ctx, f); err != nil {
		return t, fmt.Errorf("counting jobs due: %w", err)
	}
	f.Limit = timelineShown
	rows, err := l.s.store.JobsAcross(ctx, f)
	if err != nil {
		return t, fmt.Errorf("listing jobs due: %w", err)
	}
	for _, j := range rows {
		t.Jobs = append(t.Jobs, l.row(j))
	}
	t.Hidden = max(t.Total-int64(len(rows)), 0)
	t.Chart = chart.NewTimeline(id+"-chart", rows, l.now, span, l.now, l.s.loc)
	return t, nil
}

// filterQuery is the jobs page's query for a filter (page 0: none), with
// the bot picked.
func filterQuery(bot, status, platform string, page int) string {
	q := url.Values{}
	if bot != "" {
		q.Set("bot", bot)
	}
	if status != "" {
		q.Set("status", status)
	}
	if platform != "" {
		q.Set("platform", platform)
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	return q.Encode()
}

// jobRow describes a job for a list: due in the owner's zone and, when
// it is another, the user's; a recurring job's next occurrences.
func (s *reader) jobRow(j core.JobRow, now time.Time, back string) jobRowItem {
	userLoc := words.Zone(j.TimeZone, s.loc)
	due := j.DueAt
	if j.NextRunAt != nil && j.Status == core.JobPending {
		due = *j.NextRunAt // a recurring job's next occurrence
	}
	it := jobRowItem{ID: j.ID, ConversationID: j.ConversationID, Conversation: j.DisplayName, Bot: s.pick.of(j.BotID),
		Platform: string(j.Platform),
		Kind:     string(j.Kind), Status: string(j.Status), Due: due.In(s.loc).Format(shortLayout), UserZone: userLoc.String(),
		Text: j.Text, Name: j.Name, Recurrence: j.Recurrence, Attempts: j.Attempts, LastError: j.LastError,
		Origin: j.Origin, CancelledBy: j.CancelledByToolCallID, Back: back, Pick: s.pick.id,
		// The store's rule: pending, or a recurring job the scheduler
		// holds (it then plans no run).
		Cancellable: j.Status == core.JobPending || (j.Kind == core.JobAgentTurn && j.Status == core.JobSending),
		Retryable:   j.Status == core.JobFailed}
	if it.Conversation == "" {
		it.Conversation = fmt.Sprintf("conversation %d", j.ConversationID)
	}
	if words.SameZone(userLoc, s.loc, due) {
		it.DueUser = ""
	} else {
		it.DueUser = due.In(userLoc).Format(shortLayout)
	}
	switch j.Status {
	case core.JobPending, core.JobSending:
		it.When = words.Ago(due, now)
		it.Overdue = due.Before(now.Add(-time.Minute))
	default:
		if !j.UpdatedAt.IsZero() {
			it.Updated = j.UpdatedAt.In(s.loc).Format(shortLayout)
			it.When = words.Ago(j.UpdatedAt, now)
		}
	}
	if j.SentAt != nil {
		it.SentAt = j.SentAt.In(s.loc).Format(shortLayout)
	}
	if j.Recurrence != "" && (j.Status == core.JobPending || j.Status == core.JobSending) {
		it.Next = words.NextOccurrences(j.Recurrence, due, userLoc, occurrencesShown, shortLayout)
	}
	return it
}
