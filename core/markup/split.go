package markup

// Part is one platform message of a Markdown text rendered and split to a
// platform's limit.
type Part struct {
	// Text is the part in the platform's markup. Every part renders on its
	// own: no span, link or escape is cut, and a code block cut across
	// parts is closed at the end of one and reopened (with its language)
	// at the start of the next.
	Text string
	// Plain is the same part's visible text with no markup, for when the
	// platform refuses Text as malformed: the adapter sends it instead, as
	// plain text (no parse mode; Discord escapes it first).
	Plain string
}

// SplitTelegram renders md as Telegram MarkdownV2 (TelegramV2) in parts of
// at most limit UTF-16 code units each.
func SplitTelegram(md string, limit int) []Part { return split(md, telegram, limit) }

// SplitDiscord renders md as Discord markdown (Discord) in parts of at most
// limit runes each.
func SplitDiscord(md string, limit int) []Part { return split(md, discord, limit) }

// SplitSlack renders md as Slack mrkdwn (Slack) in parts of at most limit
// runes each.
func SplitSlack(md string, limit int) []Part { return split(md, slack, limit) }

// SplitPlain renders md as plain text (Plain) in parts of at most limit
// runes each.
func SplitPlain(md string, limit int) []Part { return split(md, plain, limit) }

// split is a placeholder until the line-aware splitter lands: one part.
func split(md string, f flavor, _ int) []Part {
	t := render(md, f)
	if t == "" {
		return nil
	}
	return []Part{{Text: t, Plain: render(md, plain)}}
}
