package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/parleybot/parley/core"
)

// jobPage is GET /console/jobs/{id}: one job, what happened to it, and
// Cancel or Retry.
var jobPage = &pageDef{
	name:  "job",
	nav:   "jobs",
	build: (*reader).buildJob,
	live:  []string{"job"},
}

type jobView struct {
	layout
	Zone   string
	Notice string
	Job    jobRowItem
	// The job's particulars beyond its row.
	UserID, Thread    string
	Created, Format   string
	ImageURL          string
	CreatedBy         string
	PlatformMessageID string
	CatchUp           string
	// Retried says who gave the failed job a new attempt, and when.
	Retried string
	// Gone is true when its conversation was deleted.
	Gone bool
	// PlatformDown is the failing health of its platform's adapter ("":
	// well, or unknown): the scheduler holds its sends until it works.
	PlatformDown string
}

func (s *reader) buildJob(ctx context.Context, r *http.Request, _ *runCache) (framed, error) {
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	j, err := s.store.Job(ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return nil, pageError{http.StatusNotFound, "There is no job " + strconv.FormatInt(id, 10) + "."}
	}
	if err != nil {
		return nil, fmt.Errorf("reading job %d: %w", id, err)
	}
	now := s.clock.Now()
	row := core.JobRow{Job: j}
	v := &jobView{Zone: s.loc.String(), Notice: notice(r.URL.Query(), ""), Format: string(j.Format), ImageURL: j.ImageURL,
		CreatedBy: j.CreatedByToolCallID, PlatformMessageID: j.PlatformMessageID, CatchUp: string(j.CatchUp)}
	c, err := s.store.Conversation(ctx, j.ConversationID)
	switch {
	case errors.Is(err, core.ErrNotFound):
		v.Gone = true
	case err != nil:
		return nil, fmt.Errorf("reading conversation %d: %w", j.ConversationID, err)
	default:
		row.Platform, row.DisplayName, row.TimeZone, row.BotID = c.Platform, c.DisplayName, c.TimeZone, c.BotID
		v.UserID, v.Thread = c.ChannelUserID, c.ChannelThreadID
	}
	if !j.CreatedAt.IsZero() {
		v.Created = j.CreatedAt.In(s.loc).Format(timeLayout)
	}
	if j.RetriedBy != "" && j.RetriedAt != nil {
		v.Retried = "from the " + j.RetriedBy + " at " + j.RetriedAt.In(s.loc).Format(timeLayout)
	}
	v.Job = s.jobRow(row, now, s.pick.link(pagePath(r)))
	if row.Platform != "" && s.health != nil && (j.Status == core.JobFailed || j.Status == core.JobPending) {
		v.PlatformDown = s.adapterDown(ctx, row.BotID, row.Platform)
	}
	return v, nil
}

// adapterDown is the error of bot's failing adapter of p ("" when none
// fails): /healthz names it adapter:BOT/PLATFORM for a bot but the default.
func (s *reader) adapterDown(ctx context.Context, bot string, p core.Platform) string {
	name := "adapter:" + string(p)
	if bot != "" && bot != "default" {
		name = "adapter:" + bot + "/" + string(p)
	}
	for _, c := range s.health(ctx) {
		if c.Decides && !c.Healthy() && (c.Name == name || strings.HasPrefix(c.Name, name+".")) {
			return c.Error
		}
	}
	return ""
}
