package commands_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/parleybot/parley/commands"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// fuzzStore is a commands.Store that never fails and records every change
// a command asks of it. It holds one /reminders listing of the ids in
// listing (none at all when listed is false), two pending recurring jobs
// and two facts.
type fuzzStore struct {
	listed  bool
	listing []int64
	calls   []string
}

func (s *fuzzStore) ConversationJobs(_ context.Context, conv int64, kind core.JobKind, _ ...core.JobStatus) ([]core.Job, error) {
	if kind != core.JobAgentTurn {
		return []core.Job{{ID: 11, ConversationID: conv, Kind: kind, Status: core.JobPending, Text: "call *mum*", DueAt: t0.Add(time.Hour)}}, nil
	}
	return []core.Job{
		{ID: 21, ConversationID: conv, Kind: kind, Status: core.JobPending, Name: "news", Recurrence: "0 9 * * *", DueAt: t0},
		{ID: 22, ConversationID: conv, Kind: kind, Status: core.JobPending, Name: "ping", Recurrence: "every 2h", DueAt: t0},
	}, nil
}

func (s *fuzzStore) CancelJob(_ context.Context, conv, id int64, by string) (core.Job, error) {
	s.calls = append(s.calls, fmt.Sprintf("cancel %d", id))
	return core.Job{ID: id, ConversationID: conv, Kind: core.JobMessage, Status: core.JobCancelled, Text: "call mum", DueAt: t0}, nil
}

func (s *fuzzStore) MoveRecurringJob(_ context.Context, id int64, _ time.Time) (bool, error) {
	s.calls = append(s.calls, fmt.Sprintf("move %d", id))
	return true, nil
}

func (s *fuzzStore) SetTimeZone(_ context.Context, _ int64, zone string) error {
	s.calls = append(s.calls, "zone "+zone)
	return nil
}

func (s *fuzzStore) Facts(_ context.Context, conv int64) ([]core.Fact, error) {
	return []core.Fact{{ID: 1, ConversationID: conv, Key: "F01", Content: "likes *tea*"}, {ID: 2, Key: "F02", Content: "lives in Paris"}}, nil
}

func (s *fuzzStore) ForgetAllFacts(context.Context, int64) (int, error) {
	s.calls = append(s.calls, "forget")
	return 2, nil
}

func (s *fuzzStore) EndSessionRecord(context.Context, int64, time.Time) (*int64, error) {
	s.calls = append(s.calls, "end session")
	return nil, nil
}

func (s *fuzzStore) RecentMessages(_ context.Context, conv int64, _ int) ([]core.Message, error) {
	msgs := []core.Message{{ID: 1, ConversationID: conv, Role: core.RoleUser, Content: "/reminders", Source: core.SourceCommand}}
	if s.listed {
		// As read back from the database: JSON numbers.
		ids := make([]any, len(s.listing))
		for i, id := range s.listing {
			ids[i] = float64(id)
		}
		msgs = append(msgs, core.Message{ID: 2, ConversationID: conv, Role: core.RoleAssistant, Content: "…",
			Source: core.SourceCommand, Metadata: map[string]any{"reminders": ids}})
	}
	return msgs, nil
}

// commandNameRE is what a command's name is: what Telegram's menu takes.
var commandNameRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// commandWordRE is what a command's name may be typed as.
var commandWordRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// zoneSegmentRE is one "/"-separated part of an IANA zone name.
var zoneSegmentRE = regexp.MustCompile(`^[A-Za-z0-9_+-]+$`)

// FuzzCommand checks the chat commands' parsing and answers on any text.
// core.CommandName is "" or a lowercase name of letters, digits and
// underscores that the first word spells (after its slash, before any
// "@botname"), whatever the leading space, the case of its letters or an
// "@botname" added; IsCommand holds exactly when that name is one of
// Commands(). Reply refuses anything else and changes nothing; a command
// always gets an answer (the store never fails here) of valid UTF-8 and
// bounded length, however long the text, and changes only what it is
// for: /cancel N cancels the N-th job of the last listing only when N is
// a number on it, /timezone ZONE stores a zone only when it is a real
// IANA name spelled as the user typed it (in any case), and refuses
// anything else with a message; /forget erases only on "all confirm",
// /new only ends the session.
func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		"/help", "/HELP@SomeBot", "  /start", "/cancel 2", "/cancel #1", "/cancel +1", "/cancel 0", "/cancel -1",
		"/cancel 99999999999999999999", "/cancel two", "/cancel\t1 extra", "/timezone europe/paris",
		"/timezone AMERICA/PORT-AU-PRINCE", "/timezone Local", "/timezone ../../etc/passwd", "/timezone /etc/localtime",
		"/timezone Europe//Paris", "/timezone Europe/./Paris", "/timezone utc", "/timezone Etc/GMT+5",
		"/timezone antarctica/mcmurdo", "/timezone a/b/c/d", "/timezone", "/forget", "/forget ALL", "/forget all  Confirm",
		"/new", "/reminders", "/helpme", "/ help", "/", "//help", "/help@", "/@bot", "/st\u0430rt", "/\u212aelvin",
		"hello /help", "\u00a0/help", "/help\u2028x", "/cancel\u00a01", "/timezone \xff", "/cancel \x00",
		strings.Repeat("/cancel ", 200), "/timezone " + strings.Repeat("é", 300),
	} {
		f.Add(s, uint8(3), uint8(0))
	}
	f.Fuzz(func(t *testing.T, text string, listed, zone uint8) {
		st := &fuzzStore{listed: listed < 200, listing: []int64{101, 102, 103, 104, 105}[:listed%6]}
		changed := 0
		h := commands.New(commands.Config{Store: st, Facts: st, BotName: "Subaru", Clock: coretest.NewClock(t0),
			JobsChanged: func() { changed++ }})
		conv := core.Conversation{ID: 7, Platform: telegram, ChannelThreadID: "42", DisplayName: "Ada *",
			TimeZone: []string{"", "Europe/Paris", "America/New_York", "Mars/Olympus"}[zone%4]}

		name := core.CommandName(text)
		checkName(t, text, name)
		known := slices.ContainsFunc(h.Commands(), func(c core.CommandInfo) bool { return c.Name == name })
		if h.IsCommand(text) != known {
			t.Fatalf("%q: IsCommand is %t, yet its name %q is a command: %t", text, h.IsCommand(text), name, known)
		}

		r, err := h.Reply(context.Background(), conv, text)
		switch {
		case !known && (err == nil || len(st.calls) > 0 || changed > 0):
			t.Fatalf("%q is not a command, yet it was answered %q (%v), changing %q", text, r.Text, err, st.calls)
		case !known:
			return
		case err != nil || strings.TrimSpace(r.Text) == "":
			t.Fatalf("%q: answered %q, %v", text, r.Text, err)
		case !utf8.ValidString(r.Text) || utf8.RuneCountInString(r.Text) > 1500:
			t.Fatalf("%q: an answer of %d runes, valid UTF-8 %t: %q", text, utf8.RuneCountInString(r.Text), utf8.ValidString(r.Text), r.Text)
		}
		for _, c := range st.calls {
			if what, _, _ := strings.Cut(c, " "); !slices.Contains(changes[name], what) {
				t.Fatalf("%q: /%s made the store %s", text, name, c)
			}
		}
		args := strings.TrimSpace(strings.TrimLeftFunc(text, unicode.IsSpace))
		if i := strings.IndexFunc(args, unicode.IsSpace); i >= 0 {
			args = strings.TrimSpace(args[i:])
		} else {
			args = ""
		}
		switch name {
		case "cancel":
			checkCancel(t, text, args, st, r.Text, changed)
		case "timezone":
			checkTimezone(t, text, args, st, r.Text)
		case "forget":
			erased := slices.Contains(st.calls, "forget")
			if erased != (strings.Join(strings.Fields(strings.ToLower(args)), " ") == "all confirm") {
				t.Fatalf("%q: facts erased: %t", text, erased)
			}
		case "new":
			if !slices.Equal(st.calls, []string{"end session"}) {
				t.Fatalf("%q: the store was asked %q", text, st.calls)
			}
		}
	})
}

// changes are the store changes each command may ask for.
var changes = map[string][]string{
	"cancel":   {"cancel"},
	"timezone": {"zone", "move"},
	"forget":   {"forget"},
	"new":      {"end"},
}

// checkName checks the name core.CommandName found in text.
func checkName(t *testing.T, text, name string) {
	t.Helper()
	first := strings.TrimLeftFunc(text, unicode.IsSpace)
	if i := strings.IndexFunc(first, unicode.IsSpace); i >= 0 {
		first = first[:i]
	}
	spelled, _, _ := strings.Cut(strings.TrimPrefix(first, "/"), "@")
	switch {
	case name != "" && (!commandNameRE.MatchString(name) || !strings.HasPrefix(first, "/") || strings.ToLower(spelled) != name):
		t.Fatalf("%q: name %q is not what its first word %q spells", text, name, first)
	case name == "" && strings.HasPrefix(first, "/") && commandWordRE.MatchString(spelled):
		t.Fatalf("%q starts with the command %q, yet has no name", text, first)
	case core.CommandName(" \t\n"+text) != name:
		t.Fatalf("%q: leading space changes its name from %q to %q", text, name, core.CommandName(" \t\n"+text))
	case core.CommandName(strings.Map(asciiUpper, text)) != name:
		t.Fatalf("%q: in capitals, its name %q becomes %q", text, name, core.CommandName(strings.Map(asciiUpper, text)))
	}
	if name != "" && !strings.Contains(first, "@") {
		with := strings.Replace(text, first, first+"@Some_Bot", 1)
		if got := core.CommandName(with); got != name {
			t.Fatalf("%q: with @Some_Bot (%q) its name %q becomes %q", text, with, name, got)
		}
	}
}

func asciiUpper(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - 'a' + 'A'
	}
	return r
}

// checkCancel checks what /cancel did with args: a job is cancelled only
// for a number N (optionally "#N") that is on the last listing, and it is
// then its N-th job; any other argument gets an answer and cancels
// nothing.
func checkCancel(t *testing.T, text, args string, st *fuzzStore, reply string, changed int) {
	t.Helper()
	digits := strings.TrimPrefix(strings.TrimPrefix(args, "#"), "+")
	n, err := strconv.Atoi(digits)
	number := err == nil && n >= 1 && strings.Trim(digits, "0123456789") == ""
	onList := number && st.listed && n <= len(st.listing)
	switch {
	case onList && (!slices.Equal(st.calls, []string{fmt.Sprintf("cancel %d", st.listing[n-1])}) || changed != 1):
		t.Fatalf("%q: want job %d cancelled, the store was asked %q", text, st.listing[n-1], st.calls)
	case !onList && len(st.calls) > 0:
		t.Fatalf("%q: %q is not a number on the list %v (listed %t), yet the store was asked %q", text, args, st.listing, st.listed, st.calls)
	case !number && args != "" && !strings.Contains(reply, "is not a number"):
		t.Fatalf("%q: %q is not a number, answered %q", text, args, reply)
	}
}

// checkTimezone checks what /timezone did with args: a zone is stored
// only when args name a real IANA zone in any case, spelled as the
// database spells it, and the recurring jobs move with it; anything else
// is refused with a message.
func checkTimezone(t *testing.T, text, args string, st *fuzzStore, reply string) {
	t.Helper()
	var stored []string
	for _, c := range st.calls {
		if z, ok := strings.CutPrefix(c, "zone "); ok {
			stored = append(stored, z)
		}
	}
	switch {
	case args == "" && len(st.calls) > 0:
		t.Fatalf("%q only asks for the zone, yet the store was asked %q", text, st.calls)
	case args == "":
		return
	case len(stored) == 0:
		if len(st.calls) > 0 || !strings.Contains(reply, "is not a time zone I know") {
			t.Fatalf("%q: no zone stored, the store was asked %q, answered %q", text, st.calls, reply)
		}
		return
	case len(stored) > 1:
		t.Fatalf("%q: zones stored %q", text, stored)
	}
	zone := stored[0]
	if _, err := time.LoadLocation(zone); err != nil || zone == "Local" || zone == "" || !strings.EqualFold(zone, args) {
		t.Fatalf("%q: stored zone %q (loads: %v)", text, zone, err)
	}
	if zone != "UTC" {
		for seg := range strings.SplitSeq(zone, "/") {
			if !zoneSegmentRE.MatchString(seg) {
				t.Fatalf("%q: stored zone %q is not spelled as the database spells it (part %q)", text, zone, seg)
			}
		}
	}
	if !slices.Contains(st.calls, "move 21") || slices.Contains(st.calls, "move 22") {
		// "0 9 * * *" is read in the new zone; an interval is the same in
		// every zone.
		t.Fatalf("%q: the recurring jobs were moved as %q", text, st.calls)
	}
}
