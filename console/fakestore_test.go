package console_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/console"
	"github.com/parleybot/parley/core"
)

var _ console.Store = (*fakeStore)(nil)

// fakeStore is the console's store in memory, for the pages' tests: what
// it holds is set by the test, and the filters the console asks for are
// kept to be checked.
type fakeStore struct {
	mu        sync.Mutex
	convs     []core.Conversation
	msgs      map[int64][]core.Message
	jobs      []core.Job
	runs      map[int64]core.Run
	buckets   map[time.Duration][]core.ActivityBucket
	failures  []core.Failure
	tokenDays []core.TokenDay
	tokens    map[int64][2]int64
	// filters are the JobFilters JobsAcross and CountJobs were asked.
	filters []core.JobFilter
	// searches are the queries SearchConversations was asked.
	searches []string
	// retried are the RetryJob calls: id, now and by.
	retried []retryCall
	// retryTo is the status a retried job gets (default pending).
	retryTo core.JobStatus
	// revoked are the logged-out sessions; revokeErr fails both calls.
	revoked   map[string]time.Time
	revokeErr error
}

func (f *fakeStore) RevokeConsoleSession(_ context.Context, id string, expires, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revokeErr != nil {
		return f.revokeErr
	}
	if f.revoked == nil {
		f.revoked = map[string]time.Time{}
	}
	f.revoked[id] = expires
	return nil
}

func (f *fakeStore) ConsoleSessionRevoked(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revokeErr != nil {
		return false, f.revokeErr
	}
	_, ok := f.revoked[id]
	return ok, nil
}

type retryCall struct {
	id  int64
	now time.Time
	by  string
}

func newFakeStore() *fakeStore {
	return &fakeStore{msgs: map[int64][]core.Message{}, runs: map[int64]core.Run{},
		buckets: map[time.Duration][]core.ActivityBucket{}, tokens: map[int64][2]int64{}, retryTo: core.JobPending}
}

// addConversation adds c with an id and returns it.
func (f *fakeStore) addConversation(c core.Conversation) core.Conversation {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.ID = int64(len(f.convs) + 1)
	f.convs = append(f.convs, c)
	return c
}

// addMessage appends m to its conversation with the next seq.
func (f *fakeStore) addMessage(m core.Message) core.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.convs {
		if f.convs[i].ID == m.ConversationID {
			f.convs[i].LastSeq++
			m.Seq = f.convs[i].LastSeq
			at := m.CreatedAt
			f.convs[i].LastMessageAt = &at
		}
	}
	m.ID = m.Seq*1000 + m.ConversationID
	f.msgs[m.ConversationID] = append(f.msgs[m.ConversationID], m)
	return m
}

func (f *fakeStore) addJob(j core.Job) core.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	j.ID = int64(len(f.jobs) + 1)
	if j.Kind == "" {
		j.Kind = core.JobMessage
	}
	if j.Status == "" {
		j.Status = core.JobPending
	}
	f.jobs = append(f.jobs, j)
	return j
}

func (f *fakeStore) setJob(id int64, change func(*core.Job)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.jobs[id-1])
}

func (f *fakeStore) lastFilters() []core.JobFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.filters)
}

func (f *fakeStore) conv(id int64) (core.Conversation, bool) {
	for _, c := range f.convs {
		if c.ID == id {
			return c, true
		}
	}
	return core.Conversation{}, false
}

func (f *fakeStore) ConversationsByActivity(_ context.Context, limit, offset int) ([]core.Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.convs)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].LastMessageAt, out[j].LastMessageAt
		switch {
		case a == nil:
			return false
		case b == nil:
			return true
		}
		return a.After(*b)
	})
	return page(out, limit, offset), nil
}

func (f *fakeStore) SearchConversations(ctx context.Context, q string, limit, offset int) ([]core.Conversation, error) {
	all, _ := f.ConversationsByActivity(ctx, 1<<30, 0)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.searches = append(f.searches, q)
	q = strings.ToLower(q)
	var out []core.Conversation
	for _, c := range all {
		hit := strings.Contains(strings.ToLower(c.DisplayName), q) || strings.Contains(c.ChannelUserID, q)
		for _, m := range f.msgs[c.ID] {
			hit = hit || strings.Contains(strings.ToLower(m.Content), q)
		}
		if hit {
			out = append(out, c)
		}
	}
	return page(out, limit, offset), nil
}

func page[T any](all []T, limit, offset int) []T {
	if offset >= len(all) {
		return nil
	}
	all = all[offset:]
	if limit < len(all) {
		all = all[:limit]
	}
	return all
}

func (f *fakeStore) Conversation(_ context.Context, id int64) (core.Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.conv(id)
	if !ok {
		return c, core.ErrNotFound
	}
	return c, nil
}

func (f *fakeStore) ConversationTokens(_ context.Context, id int64) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tokens[id]
	return t[0], t[1], nil
}

func (f *fakeStore) RecentMessages(_ context.Context, id int64, limit int) ([]core.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ms := f.msgs[id]
	if len(ms) > limit {
		ms = ms[len(ms)-limit:]
	}
	return slices.Clone(ms), nil
}

func (f *fakeStore) MessagesBetween(_ context.Context, id, from, to int64, limit int) ([]core.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []core.Message
	for _, m := range f.msgs[id] {
		if m.Seq > from && m.Seq <= to {
			out = append(out, m)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (f *fakeStore) Jobs(_ context.Context, id int64, status core.JobStatus, limit int) ([]core.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []core.Job
	for i := len(f.jobs) - 1; i >= 0 && len(out) < limit; i-- {
		j := f.jobs[i]
		if j.ConversationID == id && (status == "" || j.Status == status) {
			out = append(out, j)
		}
	}
	return out, nil
}

func (f *fakeStore) Job(_ context.Context, id int64) (core.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id < 1 || id > int64(len(f.jobs)) {
		return core.Job{}, core.ErrNotFound
	}
	return f.jobs[id-1], nil
}

// across is every job f selects, in its order, before limit and offset.
func (f *fakeStore) across(fl core.JobFilter) []core.JobRow {
	var out []core.JobRow
	for _, j := range f.jobs {
		c, _ := f.conv(j.ConversationID)
		switch {
		case len(fl.Statuses) > 0 && !slices.Contains(fl.Statuses, j.Status),
			len(fl.Kinds) > 0 && !slices.Contains(fl.Kinds, j.Kind),
			fl.Platform != "" && c.Platform != fl.Platform,
			fl.DueFrom != nil && j.DueAt.Before(*fl.DueFrom),
			fl.DueTo != nil && !j.DueAt.Before(*fl.DueTo): // DueTo is exclusive, as in the store
			continue
		}
		out = append(out, core.JobRow{Job: j, Platform: c.Platform, DisplayName: c.DisplayName, TimeZone: c.TimeZone})
	}
	sort.SliceStable(out, func(a, b int) bool {
		if fl.Recent {
			return out[a].UpdatedAt.After(out[b].UpdatedAt)
		}
		return out[a].DueAt.Before(out[b].DueAt)
	})
	return out
}

func (f *fakeStore) JobsAcross(_ context.Context, fl core.JobFilter) ([]core.JobRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filters = append(f.filters, fl)
	limit := fl.Limit
	if limit <= 0 {
		limit = 1 << 30
	}
	return page(f.across(fl), limit, fl.Offset), nil
}

func (f *fakeStore) CountJobs(_ context.Context, fl core.JobFilter) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filters = append(f.filters, fl)
	return int64(len(f.across(fl))), nil
}

func (f *fakeStore) CancelJob(_ context.Context, convID, id int64, by string) (core.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id < 1 || id > int64(len(f.jobs)) || f.jobs[id-1].ConversationID != convID {
		return core.Job{}, core.ErrNotFound
	}
	j := &f.jobs[id-1]
	if j.Status != core.JobPending {
		return *j, core.ErrNotPending
	}
	j.Status, j.CancelledByToolCallID = core.JobCancelled, by
	return *j, nil
}

func (f *fakeStore) RetryJob(_ context.Context, id int64, now time.Time, by string) (core.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retried = append(f.retried, retryCall{id, now, by})
	if id < 1 || id > int64(len(f.jobs)) {
		return core.Job{}, core.ErrNotFound
	}
	j := &f.jobs[id-1]
	if j.Status != core.JobFailed {
		return *j, core.ErrNotFailed
	}
	j.Status, j.DueAt, j.UpdatedAt = f.retryTo, now, now
	return *j, nil
}

func (f *fakeStore) Facts(context.Context, int64) ([]core.Fact, error) { return nil, nil }

func (f *fakeStore) SummarizedRecords(context.Context, int64, time.Time, int) ([]core.SessionRecord, error) {
	return nil, nil
}

func (f *fakeStore) MoodHistory(context.Context, int64, int) ([]core.MoodPoint, error) {
	return nil, nil
}

func (f *fakeStore) Run(_ context.Context, id int64) (core.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return r, core.ErrNotFound
	}
	return r, nil
}

func (f *fakeStore) Activity(_ context.Context, since, now time.Time, bucket time.Duration) ([]core.ActivityBucket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []core.ActivityBucket
	for _, b := range f.buckets[bucket] {
		if !b.Start.Before(since) && b.Start.Before(now) {
			out = append(out, b)
		}
	}
	return out, nil
}

func (f *fakeStore) RecentFailures(_ context.Context, since time.Time, limit int) ([]core.Failure, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []core.Failure
	for _, x := range f.failures {
		if !x.At.Before(since) && len(out) < limit {
			out = append(out, x)
		}
	}
	return out, nil
}

func (f *fakeStore) TokensByDay(context.Context, time.Time, *time.Location) ([]core.TokenDay, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tokenDays), nil
}
