package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/parleybot/parley/core"
)

// timezone shows the user's zone and local time, or sets the zone.
func (h *Handler) timezone(ctx context.Context, conv core.Conversation, args string) (core.CommandReply, error) {
	now := h.cfg.Clock.Now()
	if args == "" {
		loc := h.location(conv)
		whose := "Your time zone is"
		if conv.TimeZone == "" {
			whose = "You haven't set a time zone, so I use mine,"
		}
		return reply("%s **%s**: it's %s there now. To change it, send /timezone and a zone, like `/timezone Europe/Paris`.",
			whose, escape(loc.String(), 64), when(now, loc))
	}
	loc, ok := lookupZone(args)
	if !ok {
		return reply("“%s” is not a time zone I know. Send an IANA name like `/timezone Europe/Paris` or `/timezone America/New_York`, or `/timezone UTC`.",
			escape(args, 64))
	}
	if err := h.cfg.Store.SetTimeZone(ctx, conv.ID, loc.String()); err != nil {
		return core.CommandReply{}, err
	}
	if err := h.moveRecurring(ctx, conv.ID, loc, now); err != nil {
		return core.CommandReply{}, fmt.Errorf("moving the recurring jobs to %s: %w", loc, err)
	}
	return reply("Your time zone is now **%s**: it's %s there.", escape(loc.String(), 64), when(now, loc))
}

// moveRecurring reads the conversation's recurring jobs in its new zone
// from now on, as the schedule plugin's set_timezone does.
func (h *Handler) moveRecurring(ctx context.Context, conv int64, loc *time.Location, now time.Time) error {
	moved, err := core.MoveRecurringJobs(ctx, h.cfg.Store, conv, loc, now)
	if moved {
		h.cfg.JobsChanged()
	}
	return err
}

// irregular are zone names whose case no rule below guesses.
var irregular = map[string]string{
	"antarctica/mcmurdo":        "Antarctica/McMurdo",
	"antarctica/dumontdurville": "Antarctica/DumontDUrville",
}

// smallWords stay lowercase inside zone names ("Port_of_Spain",
// "Dar_es_Salaam", "Port-au-Prince").
var smallWords = map[string]bool{"of": true, "es": true, "au": true, "de": true, "la": true, "del": true, "da": true}

// lookupZone finds the IANA zone name typed in any case: "europe/paris",
// "UTC", "america/port-au-prince". The zone database is only reachable by
// exact name, so the usual spellings of name are tried in turn; a
// spelling that names a zone names that zone alone.
func lookupZone(name string) (*time.Location, bool) {
	name = strings.TrimSpace(name)
	if name == "" || strings.EqualFold(name, "local") || strings.ContainsFunc(name, unicode.IsSpace) {
		return nil, false
	}
	// A system's zoneinfo directory also opens "Europe//Paris" and
	// "./UTC", which are no zone's name: the embedded database (and
	// another replica's system) would not know them.
	if slices.ContainsFunc(strings.Split(name, "/"), func(s string) bool { return s == "" || s == "." }) {
		return nil, false
	}
	for _, cand := range zoneSpellings(name) {
		if loc, err := time.LoadLocation(cand); err == nil {
			return loc, true
		}
	}
	return nil, false
}

// zoneSpellings are the names to try for name: each segment
// ("/"-separated) capitalised word by word, with small words lowercase,
// or all in capitals ("US/Pacific", "Etc/GMT+5", "UTC"); then name as
// typed. The canonical spellings come first: on a case-insensitive file
// system "EUROPE/PARIS" would load as typed, and be stored so.
func zoneSpellings(name string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if s, ok := irregular[strings.ToLower(name)]; ok {
		add(s)
	}
	segments := strings.Split(strings.ToLower(name), "/")
	if len(segments) > 3 {
		return out
	}
	var spell func(i int, done []string)
	spell = func(i int, done []string) {
		if i == len(segments) {
			add(strings.Join(done, "/"))
			return
		}
		seg := segments[i]
		for _, v := range []string{capitalise(seg, false), capitalise(seg, true), strings.ToUpper(seg)} {
			spell(i+1, append(done[:i:i], v))
		}
	}
	spell(0, nil)
	add(name)
	return out
}

// capitalise writes each word of a zone segment (words are separated by
// "_" and "-") with a capital, small words lowercase when keepSmall.
func capitalise(seg string, keepSmall bool) string {
	var b strings.Builder
	word := func(w string) {
		if w == "" || keepSmall && smallWords[w] {
			b.WriteString(w)
			return
		}
		r := []rune(w)
		b.WriteString(strings.ToUpper(string(r[0])) + string(r[1:]))
	}
	start := 0
	for i, r := range seg {
		if r == '_' || r == '-' {
			word(seg[start:i])
			b.WriteRune(r)
			start = i + 1
		}
	}
	word(seg[start:])
	return b.String()
}
