package telegram

import (
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core/textsplit"
)

// maxMessageLength is Telegram's limit for one message's text. Telegram
// counts UTF-16 code units, so an emoji outside the Basic Multilingual
// Plane counts twice.
const maxMessageLength = 4096

// utf16Len is the length of s in UTF-16 code units, as Telegram counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += runeUnits(r)
	}
	return n
}

// runeUnits is how many UTF-16 code units r takes. An invalid byte decodes
// to U+FFFD, one unit, which is also what Telegram would make of it.
func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// splitMessage splits text into parts Telegram accepts: each part's
// UTF-16 length is at most limit. It splits with textsplit.Split, which
// counts runes, and splits a part again with a smaller rune budget while
// it is over the limit. Every rune costs at most 2, so a budget of
// limit/2 runes always fits. Parts that are only white space are dropped:
// Telegram rejects them.
func splitMessage(text string, limit int) []string {
	var out []string
	for _, p := range textsplit.Split(text, limit) {
		for _, q := range fit(p, limit, utf16Len) {
			if strings.TrimSpace(q) != "" {
				out = append(out, q)
			}
		}
	}
	return out
}

// fit splits p until every part costs at most limit.
func fit(p string, limit int, cost func(string) int) []string {
	c := cost(p)
	if c <= limit {
		return []string{p}
	}
	floor := max(limit/2, 1)
	// Start from the budget p would need if its cost were spread evenly.
	budget := max(utf8.RuneCountInString(p)*limit/c, floor)
	for {
		parts := textsplit.Split(p, budget)
		ok := true
		for _, q := range parts {
			if cost(q) > limit {
				ok = false
				break
			}
		}
		if ok || budget == floor {
			return parts
		}
		budget = max(budget*9/10, floor)
	}
}
