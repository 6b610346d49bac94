package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

// timeLayout is how SQLite stores times: UTC, fixed width, microseconds, so
// text order is time order and range queries work on the index.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// fallbackLayouts parse times written by other tools (go-sqlite3's own
// format, SQLite's datetime()).
var fallbackLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05",
}

func parseTime(s string) (time.Time, error) {
	if t, ok := parseTimeLayout(s); ok {
		return t, nil
	}
	for _, l := range fallbackLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised time %q", s)
}

// parseTimeLayout parses timeLayout by hand: it is read for every row, and
// time.Parse costs several times more.
func parseTimeLayout(s string) (time.Time, bool) {
	// 2006-01-02T15:04:05.000000Z
	if len(s) != 27 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
		s[19] != '.' || s[26] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, j int) (int, bool) {
		n := 0
		for k := i; k < j; k++ {
			c := s[k]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	h, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	us, ok7 := num(20, 26)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || mo < 1 || mo > 12 || d < 1 || d > 31 ||
		h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, us*1000, time.UTC), true
}

func scanTime(src any) (time.Time, bool, error) {
	switch v := src.(type) {
	case nil:
		return time.Time{}, false, nil
	case time.Time:
		return v.UTC(), true, nil
	case string:
		t, err := parseTime(v)
		return t, true, err
	case []byte:
		t, err := parseTime(string(v))
		return t, true, err
	default:
		return time.Time{}, false, fmt.Errorf("cannot scan %T into a time", src)
	}
}

// timeCol scans a NOT NULL time column.
type timeCol struct{ p *time.Time }

func (c timeCol) Scan(src any) error {
	t, _, err := scanTime(src)
	*c.p = t
	return err
}

// nullTimeCol scans a nullable time column.
type nullTimeCol struct{ p **time.Time }

func (c nullTimeCol) Scan(src any) error {
	t, ok, err := scanTime(src)
	if err != nil || !ok {
		*c.p = nil
		return err
	}
	*c.p = &t
	return nil
}

// strCol scans a text column into a string type without database/sql's
// reflection.
type strCol[T ~string] struct{ p *T }

func (c strCol[T]) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*c.p = T(v)
	case []byte:
		*c.p = T(v)
	case nil:
		*c.p = ""
	default:
		return fmt.Errorf("cannot scan %T into a string", src)
	}
	return nil
}

// intCol scans an integer column into an int without database/sql's
// int64 → string → int round trip.
type intCol struct{ p *int }

func (c intCol) Scan(src any) error {
	v, ok := src.(int64)
	if !ok {
		return fmt.Errorf("cannot scan %T into an int", src)
	}
	*c.p = int(v)
	return nil
}

// nullIDCol scans a nullable id column.
type nullIDCol struct{ p **int64 }

func (c nullIDCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.p = nil
	case int64:
		*c.p = &v
	default:
		return fmt.Errorf("cannot scan %T into an id", src)
	}
	return nil
}

// metadataCol scans message metadata JSON; "{}" decodes to a nil map so the
// common case costs no allocation.
type metadataCol struct{ p *map[string]any }

func (c metadataCol) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*c.p = nil
		return nil
	case string:
		if v == "" || v == "{}" || v == "null" {
			*c.p = nil
			return nil
		}
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("cannot scan %T into metadata", src)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("decoding metadata: %w", err)
	}
	if len(m) == 0 {
		m = nil
	}
	*c.p = m
	return nil
}

// recordCol scans a run record JSON.
// linesCol reads a column of lines ("" for none) into a slice.
type linesCol struct{ p *[]string }

func (c linesCol) Scan(src any) error {
	var v string
	switch x := src.(type) {
	case nil:
	case string:
		v = x
	case []byte:
		v = string(x)
	default:
		return fmt.Errorf("cannot scan %T into lines", src)
	}
	if v == "" {
		*c.p = nil
		return nil
	}
	*c.p = strings.Split(v, "\n")
	return nil
}

type recordCol struct{ p *core.RunRecord }

func (c recordCol) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*c.p = core.RunRecord{}
		return nil
	case string:
		if v == "" || v == "{}" {
			*c.p = core.RunRecord{}
			return nil
		}
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("cannot scan %T into a run record", src)
	}
	var r core.RunRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decoding run record: %w", err)
	}
	*c.p = r
	return nil
}

func encodeMetadata(m map[string]any) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding metadata: %w", err)
	}
	return string(b), nil
}

func encodeRecord(r core.RunRecord) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding run record: %w", err)
	}
	return string(b), nil
}

const conversationCols = `id, platform, channel_thread_id, channel_user_id, display_name, time_zone, last_seq,
	current_record_id, last_message_at, created_at, updated_at, bot_id`

func conversationDest(c *core.Conversation) []any {
	return []any{&c.ID, strCol[core.Platform]{&c.Platform}, &c.ChannelThreadID, &c.ChannelUserID, &c.DisplayName, &c.TimeZone,
		&c.LastSeq, nullIDCol{&c.CurrentRecordID}, nullTimeCol{&c.LastMessageAt}, timeCol{&c.CreatedAt}, timeCol{&c.UpdatedAt}, &c.BotID}
}

const messageCols = `id, conversation_id, seq, role, content, source, platform_message_id, session_record_id, run_id, metadata, delivery, created_at`

func messageDest(m *core.Message) []any {
	return []any{&m.ID, &m.ConversationID, &m.Seq, strCol[core.Role]{&m.Role}, &m.Content, strCol[core.Source]{&m.Source}, &m.PlatformMessageID,
		nullIDCol{&m.SessionRecordID}, nullIDCol{&m.RunID}, metadataCol{&m.Metadata}, strCol[core.Delivery]{&m.Delivery}, timeCol{&m.CreatedAt}}
}

// messageColsV3 are the messages' columns before migration 11, for the
// backfill of an older migration.
const messageColsV3 = `id, conversation_id, seq, role, content, source, platform_message_id, session_record_id, run_id, metadata, created_at`

func messageDestV3(m *core.Message) []any {
	return []any{&m.ID, &m.ConversationID, &m.Seq, strCol[core.Role]{&m.Role}, &m.Content, strCol[core.Source]{&m.Source}, &m.PlatformMessageID,
		nullIDCol{&m.SessionRecordID}, nullIDCol{&m.RunID}, metadataCol{&m.Metadata}, timeCol{&m.CreatedAt}}
}

const runCols = `id, conversation_id, kind, status, trigger_message_id, expected_last_message_id, run_after, owner,
	started_at, heartbeat_at, finished_at, cancel_requested_at, error, prompt_tokens, completion_tokens,
	total_tokens, model, record, job_id, occurrence_at, grown, created_at, updated_at`

func runDest(r *core.Run) []any {
	return []any{&r.ID, &r.ConversationID, strCol[core.RunKind]{&r.Kind}, strCol[core.RunStatus]{&r.Status}, nullIDCol{&r.TriggerMessageID},
		nullIDCol{&r.ExpectedLastMessageID}, timeCol{&r.RunAfter}, &r.Owner, nullTimeCol{&r.StartedAt},
		nullTimeCol{&r.HeartbeatAt}, nullTimeCol{&r.FinishedAt}, nullTimeCol{&r.CancelRequestedAt}, &r.Error,
		intCol{&r.PromptTokens}, intCol{&r.CompletionTokens}, intCol{&r.TotalTokens}, &r.Model, recordCol{&r.Record},
		nullIDCol{&r.JobID}, nullTimeCol{&r.OccurrenceAt}, linesCol{&r.Grown}, timeCol{&r.CreatedAt}, timeCol{&r.UpdatedAt}}
}

const jobCols = `id, conversation_id, kind, status, text, name, due_at, recurrence, attempts, last_error, origin,
	created_by_tool_call_id, cancelled_by_tool_call_id, owner, lease_until, platform_message_id, sent_at,
	session_record_id, after_seq, next_run_at, catch_up, format, image_url, COALESCE(idempotency_key, ''),
	retried_by, retried_at, created_at, updated_at`

func jobDest(j *core.Job) []any {
	return []any{&j.ID, &j.ConversationID, strCol[core.JobKind]{&j.Kind}, strCol[core.JobStatus]{&j.Status}, &j.Text, &j.Name, timeCol{&j.DueAt},
		&j.Recurrence, intCol{&j.Attempts}, &j.LastError, &j.Origin, &j.CreatedByToolCallID, &j.CancelledByToolCallID,
		&j.Owner, nullTimeCol{&j.LeaseUntil}, &j.PlatformMessageID, nullTimeCol{&j.SentAt},
		nullIDCol{&j.SessionRecordID}, &j.AfterSeq, nullTimeCol{&j.NextRunAt}, strCol[core.CatchUp]{&j.CatchUp},
		strCol[core.TextFormat]{&j.Format}, &j.ImageURL, &j.IdempotencyKey,
		&j.RetriedBy, nullTimeCol{&j.RetriedAt}, timeCol{&j.CreatedAt}, timeCol{&j.UpdatedAt}}
}

const sessionRecordCols = `id, conversation_id, started_at, ended_at, summary, final_mood, prompt, created_at, updated_at`

func sessionRecordDest(r *core.SessionRecord) []any {
	return []any{&r.ID, &r.ConversationID, timeCol{&r.StartedAt}, nullTimeCol{&r.EndedAt}, &r.Summary,
		&r.FinalMood, &r.Prompt, timeCol{&r.CreatedAt}, timeCol{&r.UpdatedAt}}
}

// sessionRecordSpanCols and sessionRecordSummaryCols read what a prompt
// needs of older records into sessionRecordDest, leaving the long texts
// (the frozen stack above all) unread.
const (
	sessionRecordSpanCols    = `id, conversation_id, started_at, ended_at, '', '', '', created_at, updated_at`
	sessionRecordSummaryCols = `id, conversation_id, started_at, ended_at, summary, '', '', created_at, updated_at`
)
