package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

// instructions is the memory part of L1.
const instructions = `## Memory
- "What you remember" lists facts about this person, each with an id like F01. Use them naturally; never recite the list or the ids.
- When they ask you to remember something, call remember_fact. When they ask what you remember, call list_facts and tell them in your own words. When they ask you to forget something, call forget_fact with its id. Never claim to remember what is not listed.
- "Earlier sessions" summarises your past conversations, each with its record id: retrieve_record reads one in full, retrieve_history searches everything you both said for a word.`

// sessionLayer is L2's session metadata: who the user is, when the
// session started in their zone, how long since the last one, and how
// often they have talked lately.
func (p *Plugin) sessionLayer(ctx context.Context, t *core.Turn) (core.PromptLayer, error) {
	loc := t.Location
	if loc == nil {
		loc = time.UTC
	}
	start := t.Now
	if t.Record.ID != 0 {
		start = t.Record.StartedAt
	}
	var b strings.Builder
	b.WriteString("## This session\n")
	// The name is the user's own text: one short line, nothing more.
	if name := cut(oneLine(t.Conversation.DisplayName), 64); name != "" {
		fmt.Fprintf(&b, "- You are talking with %s on %s.\n", name, platformTitle(t))
	} else {
		fmt.Fprintf(&b, "- You are talking with one person on %s.\n", platformTitle(t))
	}
	fmt.Fprintf(&b, "- The session started %s (%s).\n", start.In(loc).Format("Monday 2 January 2006, 15:04"), loc)
	recs, err := p.store.SessionRecordsSince(ctx, t.Conversation.ID, start.AddDate(0, 0, -31))
	if err != nil {
		return core.PromptLayer{}, fmt.Errorf("memory: reading recent session records: %w", err)
	}
	if t.Record.ID != 0 {
		// The previous record is most often among the recent ones.
		var prev *core.SessionRecord
		for i := range recs {
			if recs[i].StartedAt.Before(start) && recs[i].ID != t.Record.ID {
				prev = &recs[i]
			}
		}
		if prev == nil {
			r, err := p.store.PreviousSessionRecord(ctx, t.Conversation.ID, start)
			switch {
			case err == nil:
				prev = &r
			case !core.IsNotFound(err):
				return core.PromptLayer{}, fmt.Errorf("memory: reading the previous session record: %w", err)
			}
		}
		switch {
		case prev == nil:
			b.WriteString("- This is your first session together.\n")
		case prev.EndedAt != nil:
			fmt.Fprintf(&b, "- Your previous session ended %s before this one.\n", core.About(start.Sub(*prev.EndedAt)))
		default:
			b.WriteString("- You have talked before.\n")
		}
	}
	week, month := ActiveDays(recs, start, loc)
	fmt.Fprintf(&b, "- Active %s in the last 7, %d of the last 30.", days(week), month)
	return core.PromptLayer{Level: core.LayerSession, Name: "session", Text: b.String()}, nil
}

// factsLayer is L3: the user's facts, by id.
func (p *Plugin) factsLayer(ctx context.Context, t *core.Turn) (core.PromptLayer, error) {
	facts, err := p.facts.Facts(ctx, t.Conversation.ID)
	if err != nil {
		return core.PromptLayer{}, fmt.Errorf("memory: %w", err)
	}
	var b strings.Builder
	b.WriteString("## What you remember")
	if len(facts) == 0 {
		b.WriteString("\n(nothing yet)")
	}
	for i, f := range facts {
		if i == p.MaxFacts {
			break
		}
		fmt.Fprintf(&b, "\n- [%s] %s", f.Key, oneLine(f.Content))
	}
	return core.PromptLayer{Level: core.LayerFacts, Name: "facts", Text: b.String()}, nil
}

// summariesLayer is L4: the newest summaries of earlier sessions, oldest
// first, with their record ids.
func (p *Plugin) summariesLayer(ctx context.Context, t *core.Turn) (core.PromptLayer, error) {
	recs, err := summariesShown(ctx, p.store, p.SummariesInPrompt, t)
	if err != nil {
		return core.PromptLayer{}, err
	}
	loc := t.Location
	if loc == nil {
		loc = time.UTC
	}
	var b strings.Builder
	b.WriteString("## Earlier sessions")
	if len(recs) == 0 {
		b.WriteString("\n(none yet)")
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		fmt.Fprintf(&b, "\n- [Record %d, %s] %s", r.ID, r.StartedAt.In(loc).Format("Mon 2 Jan 2006"), oneLine(r.Summary))
	}
	return core.PromptLayer{Level: core.LayerSummaries, Name: "summaries", Text: b.String()}, nil
}

// summariesShown is the records whose summaries L4 shows in the turn's
// stack: the newest n before its session began, newest first.
func summariesShown(ctx context.Context, st Store, n int, t *core.Turn) ([]core.SessionRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	before := t.Now.Add(time.Nanosecond)
	if t.Record.ID != 0 {
		before = t.Record.StartedAt
	}
	recs, err := st.SummarizedRecords(ctx, t.Conversation.ID, before, n)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return recs, nil
}

// cut keeps the first n runes of s.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// oneLine keeps a stored text on one line of the prompt.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ActiveDays counts the days, in loc, on which a record was active: of
// the 7 and of the 30 days that end with now's day. A record spans the
// days from its start to its end (an open one to now).
func ActiveDays(recs []core.SessionRecord, now time.Time, loc *time.Location) (week, month int) {
	today := civilDay(now, loc)
	seen := map[int]bool{}
	for _, r := range recs {
		end := now
		if r.EndedAt != nil && r.EndedAt.Before(now) {
			end = *r.EndedAt
		}
		for d := civilDay(r.StartedAt, loc); d <= civilDay(end, loc) && d <= today; d++ {
			if age := today - d; age < 30 && !seen[d] {
				seen[d] = true
				month++
				if age < 7 {
					week++
				}
			}
		}
	}
	return week, month
}

// civilDay numbers t's calendar day in loc (days since 1970-01-01 there).
func civilDay(t time.Time, loc *time.Location) int {
	y, m, d := t.In(loc).Date()
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func days(n int) string {
	if n == 1 {
		return "1 day"
	}
	return fmt.Sprintf("%d days", n)
}

// platformTitle names the turn's platform as its adapter does ("Telegram",
// "the web chat"); a turn built without one gets the platform's name,
// capitalised.
func platformTitle(t *core.Turn) string {
	if t.PlatformTitle != "" {
		return t.PlatformTitle
	}
	return t.Conversation.Platform.Title()
}
