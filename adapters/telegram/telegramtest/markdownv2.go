package telegramtest

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/markup/markuptest"
)

// parseText reads a text or caption sent with parseMode the way Telegram
// does: the text a user reads and its entities, or the fault Telegram
// answers with. MarkdownV2 is checked by markuptest.TelegramV2, a parser
// modelled on TDLib's (escapes, bold, italic, underline, strikethrough,
// spoiler, code, pre, links, block quotes) that reports the common
// Telegram errors but not every one; HTML and legacy Markdown are accepted
// unchecked and shown as sent.
// messageText is a draft's or an edit's text as the user reads it, with
// Telegram's refusals of an empty or too long one.
func messageText(text, parseMode string) (string, []models.MessageEntity, *Fault) {
	plain, ents, f := parseText(text, parseMode)
	switch {
	case f != nil:
		return "", nil, f
	case strings.TrimSpace(plain) == "":
		f := badRequest("message text is empty")
		return "", nil, &f
	case len(utf16.Encode([]rune(plain))) > maxTextLen:
		f := MessageTooLong()
		return "", nil, &f
	}
	return plain, ents, nil
}

func parseText(text, parseMode string) (string, []models.MessageEntity, *Fault) {
	switch strings.ToLower(parseMode) {
	case "", "markdown", "html":
		return text, nil, nil
	case "markdownv2":
		r, err := markuptest.TelegramV2(text)
		if err != nil {
			f := badRequest("can't parse entities: " + err.Error())
			return "", nil, &f
		}
		return r.Text, entities(r), nil
	default:
		f := badRequest("unsupported parse_mode")
		return "", nil, &f
	}
}

// entityTypes are Telegram's names of the styles markuptest reads.
var entityTypes = map[markuptest.Style]models.MessageEntityType{
	markuptest.Bold:      models.MessageEntityTypeBold,
	markuptest.Italic:    models.MessageEntityTypeItalic,
	markuptest.Underline: models.MessageEntityTypeUnderline,
	markuptest.Strike:    models.MessageEntityTypeStrikethrough,
	markuptest.Spoiler:   models.MessageEntityTypeSpoiler,
	markuptest.Code:      models.MessageEntityTypeCode,
	markuptest.Pre:       models.MessageEntityTypePre,
	markuptest.Link:      models.MessageEntityTypeTextLink,
	markuptest.Quote:     models.MessageEntityTypeBlockquote,
}

// entities turns spans into Telegram entities, whose offsets and lengths
// count UTF-16 code units.
func entities(r markuptest.Rendered) []models.MessageEntity {
	if len(r.Spans) == 0 {
		return nil
	}
	units := func(s string) int { return len(utf16.Encode([]rune(s))) }
	out := make([]models.MessageEntity, 0, len(r.Spans))
	for _, sp := range r.Spans {
		e := models.MessageEntity{
			Type:     entityTypes[sp.Style],
			Offset:   units(r.Text[:sp.Start]),
			Length:   units(r.Text[sp.Start:sp.End]),
			URL:      sp.URL,
			Language: sp.Language,
		}
		if e.Type == models.MessageEntityTypeTextLink && e.URL == "" {
			continue
		}
		out = append(out, e)
	}
	// Telegram lists entities by offset, an outer one before an inner one.
	slices.SortStableFunc(out, func(a, b models.MessageEntity) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(b.Length, a.Length))
	})
	return out
}

// Shown is what a user sees of the message (of a photo, its caption):
// Plain with its entities as styled spans.
func (m SentMessage) Shown() markuptest.Rendered {
	r := markuptest.Rendered{Text: m.Plain}
	units := utf16.Encode([]rune(m.Plain))
	// byteAt is the byte offset in Plain of a UTF-16 offset.
	byteAt := func(u int) int {
		u = min(max(u, 0), len(units))
		return len(string(utf16.Decode(units[:u])))
	}
	for _, e := range m.Entities {
		for st, typ := range entityTypes {
			if typ == e.Type {
				r.Spans = append(r.Spans, markuptest.Span{
					Style: st, Start: byteAt(e.Offset), End: byteAt(e.Offset + e.Length), URL: e.URL, Language: e.Language,
				})
			}
		}
	}
	return r
}
