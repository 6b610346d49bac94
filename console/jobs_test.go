package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/httpapi"
)

func TestJobsPageIsATimelineOfWhatIsDue(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	body, _ := b.page(t, "/console/jobs", b.login(t))

	day := section(t, body, `<section aria-labelledby="due-day-title" id="due-day">`, `</section>`)
	require.Contains(t, day, "(3)", "the overdue one, the one in 2 hours, the recurring one in 6")
	require.Regexp(t, fmt.Sprintf(`(?s)id="job-%d".*id="job-%d".*id="job-%d"`, s.late.ID, s.soon.ID, s.recurring.ID), day, "soonest first")
	require.Contains(t, day, "overdue: due 10 min ago")
	// Ada is in New York: her time is shown under the owner's.
	soon := section(t, day, fmt.Sprintf(`<tr class="job job-pending" id="job-%d"`, s.soon.ID), `</tr>`)
	require.Contains(t, soon, "Tue 15 Jan 12:00 CET")
	require.Contains(t, soon, "Tue 15 Jan 06:00 EST for the user")
	require.Contains(t, soon, fmt.Sprintf(`id="cancel-%d"`, s.soon.ID))
	require.NotContains(t, soon, "retry-")
	// Bob has no zone: his time is the owner's, said once.
	late := section(t, day, fmt.Sprintf(`id="job-%d"`, s.late.ID), `</tr>`)
	require.NotContains(t, late, "for the user")
	require.Equal(t, 3, strings.Count(section(t, day, `<svg id="due-day-chart"`, `</svg>`), `<circle class="due`), "a dot per job on the strip")

	week := section(t, body, `<section aria-labelledby="due-week-title" id="due-week">`, `</section>`)
	require.Contains(t, week, "(1)")
	require.Contains(t, week, "Dentist on Friday")
	require.Contains(t, week, "Fri 18 Jan 10:00 CET")

	recurring := section(t, body, `<section aria-labelledby="recurring-title" id="recurring">`, `</section>`)
	require.Contains(t, recurring, "<strong>check-in</strong> <code>every 6h</code>")
	require.Contains(t, recurring, "next: Tue 15 Jan 10:00 EST · Tue 15 Jan 16:00 EST · Tue 15 Jan 22:00 EST (America/New_York)",
		"its next occurrences, in the user's zone")

	recent := section(t, body, `<section aria-labelledby="recent-title" id="recent-jobs">`, `</section>`)
	require.Regexp(t, fmt.Sprintf(`(?s)id="job-%d" data-status="failed".*unauthorized \(is the token revoked\?\).*id="retry-%d".*id="job-%d" data-status="sent"`,
		s.failed.ID, s.failed.ID, s.sent.ID), recent, "newest change first, the failed one with its error and a Retry button")
	require.NotContains(t, recent, "cancel-")
}

func TestJobsFilterByStatusAndPlatform(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	c := b.login(t)

	body, _ := b.page(t, "/console/jobs?status=pending&platform=web", c)
	list := section(t, body, `<section aria-labelledby="list-title">`, `</section>`)
	require.Contains(t, list, "2 pending job(s) on web")
	require.Contains(t, list, "Water the plants")
	require.Contains(t, list, "Dentist on Friday")
	require.NotContains(t, list, "Stretch your legs", "Ada is on Telegram")
	require.Contains(t, body, `<option value="pending" selected>pending</option>`, "the form shows the filter")
	require.Contains(t, body, `<option value="web" selected>web</option>`)
	require.Contains(t, body, `<label for="filter-status">Status`)
	require.Contains(t, body, `<label for="filter-platform">Platform`)
	last := b.fs.lastFilters()
	got := last[len(last)-1]
	require.Equal(t, []core.JobStatus{core.JobPending}, got.Statuses)
	require.Equal(t, web, got.Platform)
	require.False(t, got.Recent, "what is to come is listed by due time")

	body, _ = b.page(t, "/console/jobs?status=failed", c)
	require.Contains(t, body, "1 failed job(s)")
	require.Contains(t, body, fmt.Sprintf(`id="retry-%d"`, s.failed.ID))
	last = b.fs.lastFilters()
	require.True(t, last[len(last)-1].Recent, "what is done is listed newest first")

	for _, q := range []string{"status=lost", "platform=Tele%20gram", "status=sent&page=0"} {
		resp, _ := b.do(t, http.MethodGet, "/console/jobs?"+q, nil, c)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
	}
}

func TestCancelFromTheJobsPage(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	c := b.login(t)
	_, csrf := b.page(t, "/console/jobs", c)
	path := fmt.Sprintf("/console/jobs/%d/cancel", s.soon.ID)

	resp, _ := b.do(t, http.MethodPost, path, url.Values{"back": {"/console/jobs?status=pending"}}, c)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	resp, _ = b.do(t, http.MethodPost, path, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no session")

	resp, _ = b.do(t, http.MethodPost, path, url.Values{"csrf": {csrf}, "back": {"/console/jobs?status=pending"}}, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, fmt.Sprintf("/console/jobs?job=%d&notice=cancelled&status=pending#job-%d", s.soon.ID, s.soon.ID), resp.Header.Get("Location"))
	j, err := b.fs.Job(t.Context(), s.soon.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, j.Status)
	require.Equal(t, "console", j.CancelledByToolCallID)
	body, _ := b.page(t, resp.Header.Get("Location"), c)
	require.Contains(t, body, fmt.Sprintf(`id="notice" role="status">Job %d cancelled.`, s.soon.ID))

	// Back never leaves the console.
	resp, _ = b.do(t, http.MethodPost, fmt.Sprintf("/console/jobs/%d/cancel", s.late.ID),
		url.Values{"csrf": {csrf}, "back": {"https://evil.example/"}}, c)
	require.Equal(t, fmt.Sprintf("/console/?job=%d&notice=cancelled#job-%d", s.late.ID, s.late.ID), resp.Header.Get("Location"))

	resp, _ = b.do(t, http.MethodPost, path, url.Values{"csrf": {csrf}}, c)
	require.Equal(t, fmt.Sprintf("/console/jobs/%d?job=%d&notice=not_pending#job-%d", s.soon.ID, s.soon.ID, s.soon.ID), resp.Header.Get("Location"))
	resp, _ = b.do(t, http.MethodPost, "/console/jobs/999/cancel", url.Values{"csrf": {csrf}}, c)
	require.Contains(t, resp.Header.Get("Location"), "notice=not_found")
}

func TestRetryAFailedJob(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	c := b.login(t)
	body, csrf := b.page(t, fmt.Sprintf("/console/jobs/%d", s.failed.ID), c)
	require.Contains(t, body, `id="job-status">failed<`)
	require.Contains(t, body, `id="job-error">Failed after 1 attempt(s): sending scheduled message: unauthorized (is the token revoked?)`)
	require.Contains(t, body, fmt.Sprintf(`<a href="/console/conversations/%d" id="job-conversation">Ada</a>`, s.ada.ID))
	require.Contains(t, body, "<dt>Due</dt><dd>Tue 15 Jan 09:00 CET<br>")
	require.Contains(t, body, "<dt>Last change</dt><dd>Tue 15 Jan 09:30 CET <span class=\"muted\">(30 min ago)</span>")
	require.Contains(t, body, "Tue 15 Jan 03:00 EST in the user's zone (America/New_York)")
	require.Contains(t, body, fmt.Sprintf(`id="retry-%d">Retry now<`, s.failed.ID))
	require.NotContains(t, body, "cancel-", "a failed job cannot be cancelled")
	require.Contains(t, body, `id="platform-down">The telegram adapter is failing: telegram adapter: polling failing`,
		"the owner sees why before retrying")

	path := fmt.Sprintf("/console/jobs/%d/retry", s.failed.ID)
	resp, _ := b.do(t, http.MethodPost, path, url.Values{}, c)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	resp, _ = b.do(t, http.MethodPost, path, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no session")
	require.Empty(t, b.fs.retried, "nothing refused reaches the store")
	require.Zero(t, b.woken.Load())

	b.clock.Advance(time.Minute)
	resp, _ = b.do(t, http.MethodPost, path, url.Values{"csrf": {csrf}}, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, fmt.Sprintf("/console/jobs/%d?job=%d&notice=retried#job-%d", s.failed.ID, s.failed.ID, s.failed.ID), resp.Header.Get("Location"))
	require.Equal(t, []retryCall{{s.failed.ID, t0.Add(time.Minute), "console"}}, b.fs.retried, "a new attempt, now, by the console")
	require.EqualValues(t, 1, b.woken.Load(), "the scheduler is woken")
	require.Contains(t, b.logs.String(), "job retried in the console")

	b.setHealth(httpapi.Component{Name: "adapter:telegram", State: "ok", Decides: true})
	body, _ = b.page(t, resp.Header.Get("Location"), c)
	require.NotContains(t, body, "platform-down")
	require.Contains(t, body, fmt.Sprintf("Job %d will be tried again now.", s.failed.ID))
	require.Contains(t, body, `id="job-status">pending<`)
	require.NotContains(t, body, "retry-")

	// Again: it has not failed (any more).
	resp, _ = b.do(t, http.MethodPost, path, url.Values{"csrf": {csrf}}, c)
	require.Contains(t, resp.Header.Get("Location"), "notice=not_failed")
	require.EqualValues(t, 1, b.woken.Load())
	resp, _ = b.do(t, http.MethodPost, "/console/jobs/999/retry", url.Values{"csrf": {csrf}}, c)
	require.Contains(t, resp.Header.Get("Location"), "notice=not_found")
	resp, _ = b.do(t, http.MethodGet, "/console/jobs/999", nil, c)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestJobPageIsLive(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	b.fs.retryTo = core.JobPending
	c := b.login(t)
	body, _ := b.page(t, fmt.Sprintf("/console/jobs/%d", s.failed.ID), c)
	es := b.openStream(t, liveURL(t, body), c, "")
	b.clock.WaitForTimer(t, t0.Add(liveEvery), 5*time.Second)
	es.none(t)

	// The scheduler sends it.
	sent := t0.Add(time.Second)
	b.fs.setJob(s.failed.ID, func(j *core.Job) { j.Status, j.SentAt, j.UpdatedAt, j.LastError = core.JobSent, &sent, sent, "" })
	b.clock.Advance(liveEvery)
	ev := es.next(t)
	require.Equal(t, "update", ev.name)
	require.Contains(t, ev.data, `id=\"job-status\"\u003esent\u003c`)
	require.Contains(t, ev.data, "Tue 15 Jan 10:00 CET", "when it was sent")
}
