package userdata

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/parleybot/parley/core"
)

// Source is what Gather reads; *store.Store implements it. Lookups are by
// the conversation's id, whichever bot's view the store is: the caller
// checks that the conversation is its bot's (Data.BotID) before it hands
// the data over.
type Source interface {
	// Conversation returns a conversation by id (core.ErrNotFound).
	Conversation(ctx context.Context, id int64) (core.Conversation, error)
	// MessagesPage returns up to limit of the conversation's messages
	// with a seq above afterSeq, oldest first.
	MessagesPage(ctx context.Context, conversationID, afterSeq int64, limit int) ([]core.Message, error)
	// SessionRecords returns the conversation's session records by start.
	SessionRecords(ctx context.Context, conversationID int64) ([]core.SessionRecord, error)
	// Jobs lists jobs by id, newest first: the conversation's of every
	// kind, with any status when status is "".
	Jobs(ctx context.Context, conversationID int64, status core.JobStatus, limit int) ([]core.Job, error)
}

// WithMood is src that also reads the conversation's mood points from
// mood (the mood plugin's keeper; nil: src as it is). The store does not
// read them itself: the mood plugin owns its table.
func WithMood(src Source, mood core.MoodKeeper) Source {
	if mood == nil {
		return src
	}
	return moodSource{Source: src, MoodKeeper: mood}
}

type moodSource struct {
	Source
	core.MoodKeeper
}

// pageSize is how many messages Gather reads at once: a long history is
// read in bounded queries rather than one.
const pageSize = 1000

// every is the limit that reads all of a list the store bounds by a limit
// (a conversation's jobs, its mood points).
const every = math.MaxInt32

// Gather reads everything stored about the user of a conversation: its
// messages, the facts facts keeps (nil: no plugin keeps any), its session
// records, its jobs, its mood points (when src is a core.MoodKeeper too,
// see WithMood) and the messages limits held. now is the export's time.
// An unknown conversation is an error wrapping core.ErrNotFound.
func Gather(ctx context.Context, src Source, facts core.FactKeeper, conversationID int64, now time.Time) (Data, error) {
	conv, err := src.Conversation(ctx, conversationID)
	if err != nil {
		return Data{}, fmt.Errorf("exporting conversation %d: %w", conversationID, err)
	}
	loc := location(conv.TimeZone)
	d := Data{ExportedAt: now.In(loc), BotID: conv.BotID, Platform: string(conv.Platform), ConversationID: conv.ID,
		UserID: conv.ChannelUserID, DisplayName: conv.DisplayName, TimeZone: loc.String()}
	err = readMessages(ctx, src, &d, loc)
	if err == nil {
		err = readFacts(ctx, facts, &d, loc)
	}
	if err == nil {
		err = readSummaries(ctx, src, &d, loc)
	}
	if err == nil {
		err = readJobs(ctx, src, &d, loc)
	}
	if err == nil {
		err = readMood(ctx, src, &d, loc)
	}
	if err != nil {
		return Data{}, fmt.Errorf("exporting conversation %d: %w", conversationID, err)
	}
	return d, nil
}

// location is the zone named, UTC when it is empty or unknown here.
func location(zone string) *time.Location {
	if zone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// readMessages reads the conversation's messages page by page, and the
// limits that held any of them.
func readMessages(ctx context.Context, src Source, d *Data, loc *time.Location) error {
	d.Messages, d.Limits = []Message{}, []Limit{}
	var after int64
	for {
		page, err := src.MessagesPage(ctx, d.ConversationID, after, pageSize)
		if err != nil {
			return fmt.Errorf("reading messages after seq %d: %w", after, err)
		}
		for _, m := range page {
			msg := message(m, loc)
			d.Messages = append(d.Messages, msg)
			if msg.Limited != "" {
				d.Limits = append(d.Limits, Limit{Time: msg.Time, Limit: msg.Limited, Seq: msg.Seq})
			}
		}
		if len(page) < pageSize {
			return nil
		}
		after = page[len(page)-1].Seq
	}
}

func readFacts(ctx context.Context, facts core.FactKeeper, d *Data, loc *time.Location) error {
	d.Facts = []Fact{}
	if facts == nil {
		return nil
	}
	fs, err := facts.Facts(ctx, d.ConversationID)
	if err != nil {
		return fmt.Errorf("reading facts: %w", err)
	}
	for _, f := range fs {
		d.Facts = append(d.Facts, Fact{Key: f.Key, Text: f.Content, Created: f.CreatedAt.In(loc),
			LastUsed: f.LastAccessedAt.In(loc)})
	}
	return nil
}

func readSummaries(ctx context.Context, src Source, d *Data, loc *time.Location) error {
	recs, err := src.SessionRecords(ctx, d.ConversationID)
	if err != nil {
		return fmt.Errorf("reading session records: %w", err)
	}
	d.Summaries = make([]Summary, 0, len(recs))
	for _, r := range recs {
		d.Summaries = append(d.Summaries, Summary{RecordID: r.ID, Started: r.StartedAt.In(loc), Ended: in(r.EndedAt, loc),
			Summary: r.Summary})
	}
	return nil
}

func readJobs(ctx context.Context, src Source, d *Data, loc *time.Location) error {
	jobs, err := src.Jobs(ctx, d.ConversationID, "", every)
	if err != nil {
		return fmt.Errorf("reading jobs: %w", err)
	}
	// Oldest first, as every other list.
	slices.SortFunc(jobs, func(a, b core.Job) int { return cmp.Compare(a.ID, b.ID) })
	d.Jobs = make([]Job, 0, len(jobs))
	for _, j := range jobs {
		d.Jobs = append(d.Jobs, Job{ID: j.ID, Kind: string(j.Kind), Status: string(j.Status), Name: j.Name, Text: j.Text,
			ImageURL: j.ImageURL, Due: j.DueAt.In(loc), Recurrence: j.Recurrence, Sent: in(j.SentAt, loc),
			Created: j.CreatedAt.In(loc)})
	}
	return nil
}

func readMood(ctx context.Context, src Source, d *Data, loc *time.Location) error {
	d.Mood = []Mood{}
	mood, ok := src.(core.MoodKeeper)
	if !ok {
		return nil
	}
	points, err := mood.MoodHistory(ctx, d.ConversationID, every)
	if err != nil {
		return fmt.Errorf("reading moods: %w", err)
	}
	for _, p := range points {
		d.Mood = append(d.Mood, Mood{Time: p.CreatedAt.In(loc), Valence: p.Valence, Arousal: p.Arousal, Source: p.Source,
			Reason: p.Reason})
	}
	return nil
}

// message is m as exported: its text and what its metadata tells the
// user (edited, deleted, held, files), nothing else of it.
func message(m core.Message, loc *time.Location) Message {
	out := Message{Seq: m.Seq, Role: string(m.Role), Source: string(m.Source), Text: m.Content, Time: m.CreatedAt.In(loc),
		Deleted: m.Deleted(), Delivery: string(m.Delivery)}
	if m.Delivery == core.DeliverySent {
		out.Delivery = "" // the usual case: no news
	}
	if s, ok := m.Metadata[core.EditedAtKey].(string); ok {
		out.Edited = true
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			t = t.In(loc)
			out.EditedAt = &t
		}
	}
	out.Limited, _ = m.Metadata["limited"].(string)
	// A user's attachments and a bot message's files; neither's
	// platform reference (Attachment.Ref), which is the adapter's.
	for _, a := range append(core.AttachmentsOf(m), core.FilesOf(m)...) {
		out.Files = append(out.Files, File{Name: a.Name, Kind: string(a.Kind), MIME: a.MIME, Size: a.Size})
	}
	return out
}

// in is t in loc; nil for nil.
func in(t *time.Time, loc *time.Location) *time.Time {
	if t == nil {
		return nil
	}
	v := t.In(loc)
	return &v
}
