package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/parleybot/parley/console/chart"
	"github.com/parleybot/parley/console/tokens"
	"github.com/parleybot/parley/console/words"
	"github.com/parleybot/parley/core"
)

// The overview's windows.
const (
	// failuresSince is how far back the failures go, and failuresShown
	// how many are listed.
	failuresSince = 7 * 24 * time.Hour
	failuresShown = 20
	// tokenDays is how many days of token usage are shown, today included.
	tokenDays = 7
	// recentShown is how many recently active conversations are listed.
	recentShown = 8
)

// overviewPage is GET /console/: how the bot is doing.
var overviewPage = &pageDef{
	name:   "overview",
	nav:    "overview",
	build:  (*reader).buildOverview,
	perBot: true,
	live:   []string{"health", "activity", "failures", "limits", "tokens", "pending", "recent"},
}

type overviewView struct {
	layout
	// Zone is the owner's zone, which the page's times are in.
	Zone string
	Now  string
	// Status is /healthz's status: "ok" or "unhealthy" ("" without
	// health checks).
	Status     string
	Components []componentItem
	HourChart  chart.Activity
	DayChart   chart.Activity
	Failures   []failureItem
	Limits     limitsView
	Tokens     tokens.Table
	Pending    int64
	Next       *jobRowItem
	Recent     []conversationItem
	// Pairings are the codes waiting for an owner (bot.dm_policy:
	// pairing), PairingNotice the word on the last one answered.
	Pairings      []pairingItem
	PairingNotice string
}

// componentItem is one component of /healthz.
type componentItem struct {
	Name string
	// State is the component's own word; Class how to show it (ok,
	// failing, unknown).
	State, Class string
	Error        string
	Since        string
	// Decides is true for a component that decides /healthz's status.
	Decides bool
}

// failureItem is one failure with a link to where it happened.
type failureItem struct {
	Kind, At, Ago  string
	ConversationID int64
	Conversation   string
	Error          string
	Link, Where    string
}

func (s *reader) buildOverview(ctx context.Context, r *http.Request, _ *runCache) (framed, error) {
	now := s.clock.Now()
	v := &overviewView{Zone: s.loc.String(), Now: now.In(s.loc).Format(timeLayout)}
	if s.health != nil {
		v.Status, v.Components = s.components(ctx, now)
	}
	var err error
	if v.HourChart, v.DayChart, err = s.activityCharts(ctx, now); err != nil {
		return nil, err
	}
	if v.Failures, err = s.failures(ctx, now); err != nil {
		return nil, err
	}
	if v.Limits, err = s.buildLimits(ctx, now); err != nil {
		return nil, err
	}
	if v.Tokens, err = s.tokens(ctx, now); err != nil {
		return nil, err
	}
	if v.Pending, v.Next, err = s.pendingJobs(ctx, now); err != nil {
		return nil, err
	}
	if v.Recent, err = s.recentConversations(ctx, now); err != nil {
		return nil, err
	}
	if v.Pairings, v.PairingNotice, err = s.waiting(ctx, r, now); err != nil {
		return nil, err
	}
	return v, nil
}

// components are /healthz's status and its components, but another bot's
// than the one picked.
func (s *reader) components(ctx context.Context, now time.Time) (string, []componentItem) {
	status := "ok"
	var out []componentItem
	for _, c := range s.health(ctx) {
		if c.Decides && !c.Healthy() {
			status = "unhealthy"
		}
		if s.pick.others(c.Name) {
			continue
		}
		it := componentItem{Name: c.Name, State: c.State, Error: c.Error, Decides: c.Decides, Class: healthClass(c.State)}
		if c.Error != "" {
			// "down: refused" with the error "refused": the badge
			// says down, the error column why.
			it.State = strings.TrimSuffix(c.State, ": "+c.Error)
		}
		if !c.Since.IsZero() {
			it.Since = c.Since.In(s.loc).Format(timeLayout) + " (" + words.Ago(c.Since, now) + ")"
		}
		out = append(out, it)
	}
	return status, out
}

// activityCharts are the last hour's activity in five-minute bars and the
// last day's in hourly ones.
func (s *reader) activityCharts(ctx context.Context, now time.Time) (hourChart, dayChart chart.Activity, err error) {
	hourSince := now.Truncate(5 * time.Minute).Add(-55 * time.Minute)
	hour, err := s.store.Activity(ctx, hourSince, now, 5*time.Minute)
	if err != nil {
		return hourChart, dayChart, fmt.Errorf("reading the last hour's activity: %w", err)
	}
	hourChart = chart.NewActivity("chart-hour", "The last hour", hour, hourSince, 5*time.Minute, 12, 3, s.loc)
	daySince := now.Truncate(time.Hour).Add(-23 * time.Hour)
	day, err := s.store.Activity(ctx, daySince, now, time.Hour)
	if err != nil {
		return hourChart, dayChart, fmt.Errorf("reading the last day's activity: %w", err)
	}
	dayChart = chart.NewActivity("chart-day", "The last 24 hours", day, daySince, time.Hour, 24, 4, s.loc)
	return hourChart, dayChart, nil
}

// tokens are the tokens used on each of the last tokenDays days.
func (s *reader) tokens(ctx context.Context, now time.Time) (tokens.Table, error) {
	y, m, d := now.In(s.loc).Date()
	tokensSince := time.Date(y, m, d-(tokenDays-1), 0, 0, 0, 0, s.loc)
	days, err := s.store.TokensByDay(ctx, tokensSince, s.loc)
	if err != nil {
		return tokens.Table{}, fmt.Errorf("reading token usage: %w", err)
	}
	return tokens.NewTable(days, s.prices, tokenDays), nil
}

// pendingJobs is how many jobs are pending and the next one due (nil:
// none).
func (s *reader) pendingJobs(ctx context.Context, now time.Time) (int64, *jobRowItem, error) {
	pending := core.JobFilter{Statuses: []core.JobStatus{core.JobPending}}
	n, err := s.store.CountJobs(ctx, pending)
	if err != nil {
		return 0, nil, fmt.Errorf("counting pending jobs: %w", err)
	}
	pending.Limit = 1
	next, err := s.store.JobsAcross(ctx, pending)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the next job: %w", err)
	}
	if len(next) == 0 {
		return n, nil, nil
	}
	it := s.jobRow(next[0], now, "")
	return n, &it, nil
}

// recentConversations are the recentShown conversations active last, each
// with its last message.
func (s *reader) recentConversations(ctx context.Context, now time.Time) ([]conversationItem, error) {
	convs, err := s.store.ConversationsByActivity(ctx, recentShown, 0)
	if err != nil {
		return nil, fmt.Errorf("listing conversations: %w", err)
	}
	var out []conversationItem
	for _, c := range convs {
		it := s.conversationRow(c)
		if c.LastMessageAt != nil {
			it.LastActivity = words.Ago(*c.LastMessageAt, now)
		}
		last, err := s.store.RecentMessages(ctx, c.ID, 1)
		if err != nil {
			return nil, fmt.Errorf("reading the last message of conversation %d: %w", c.ID, err)
		}
		if len(last) > 0 {
			it.Last, it.LastRole = messagePreview(last[0]), string(last[0].Role)
		}
		out = append(out, it)
	}
	return out, nil
}

// healthClass is how a state is shown: ok, failing, or unknown for a
// component that has not said yet.
func healthClass(state string) string {
	switch {
	case state == "ok":
		return "ok"
	case state == "unknown" || state == "starting" || state == "":
		return "unknown"
	default:
		return "failing"
	}
}

// failures lists what failed in the last failuresSince, each linked to
// where it happened.
func (s *reader) failures(ctx context.Context, now time.Time) ([]failureItem, error) {
	fs, err := s.store.RecentFailures(ctx, now.Add(-failuresSince), failuresShown)
	if err != nil {
		return nil, fmt.Errorf("reading failures: %w", err)
	}
	names := map[int64]string{}
	out := make([]failureItem, 0, len(fs))
	for _, f := range fs {
		name, seen := names[f.ConversationID]
		if !seen && f.ConversationID > 0 {
			c, err := s.store.Conversation(ctx, f.ConversationID)
			switch {
			case errors.Is(err, core.ErrNotFound):
				name = "(deleted)"
			case err != nil:
				return nil, fmt.Errorf("reading conversation %d: %w", f.ConversationID, err)
			default:
				name = c.DisplayName
				if name == "" {
					name = c.ChannelUserID
				}
				name += " (" + string(c.Platform) + ")"
			}
			names[f.ConversationID] = name
		}
		it := failureItem{Kind: f.Kind, At: f.At.In(s.loc).Format(timeLayout), Ago: words.Ago(f.At, now),
			ConversationID: f.ConversationID, Conversation: name, Error: f.Error}
		conv := s.pick.link(fmt.Sprintf("%sconversations/%d", Prefix, f.ConversationID))
		switch {
		case f.JobID > 0:
			it.Link, it.Where = s.pick.link(fmt.Sprintf("%sjobs/%d", Prefix, f.JobID)), fmt.Sprintf("job %d", f.JobID)
		case f.RunID > 0 && f.ConversationID > 0:
			it.Link, it.Where = fmt.Sprintf("%s#run-%d", conv, f.RunID), fmt.Sprintf("run %d", f.RunID)
		case f.ConversationID > 0:
			it.Link, it.Where = conv+"#transcript", "the transcript"
		}
		out = append(out, it)
	}
	return out, nil
}

// messagePreview is a message shortened for a list.
func messagePreview(m core.Message) string {
	switch {
	case m.Metadata["silent"] == true:
		return "(stayed silent)"
	case strings.TrimSpace(m.Content) != "":
		return words.Shorten(m.Content, 90)
	case len(core.AttachmentsOf(m)) > 0:
		return "(" + fileLine(core.AttachmentsOf(m)[0]) + ")"
	}
	return ""
}
