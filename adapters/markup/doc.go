// Package markup renders Markdown written by the bot (CommonMark plus GFM
// strikethrough) in each platform's own markup: Telegram MarkdownV2,
// Discord markdown, Slack mrkdwn, or plain text with the Markdown taken out.
//
// Markdown is parsed with goldmark; the renderers here walk its syntax tree
// themselves, because each platform has its own syntax and, worse, its own
// escaping rules. The contract every renderer keeps: what the Markdown
// means as text reaches the user as that text. Characters the platform
// reserves are escaped wherever they are meant literally, and what has no
// equivalent on the platform (tables, HTML, headings on Telegram) is shown
// as its text. TelegramV2 in particular never produces a message Telegram
// refuses with "can't parse entities".
//
// The shared choices, so the platforms read alike: headings become a bold
// line; lists become "• " and "1. " lines (Discord's own "- " list), nested
// lists indented; block quotes become the platform's quote lines; images
// become links to the image; a thematic break becomes "———".
//
// A text longer than a platform's message limit is rendered and split
// into parts by SplitTelegram, SplitDiscord, SplitSlack and SplitPlain
// (split.go): every part renders on its own, cut between blocks, lines or
// words, never inside a span, an escape or a character; a code block cut
// across parts is closed and reopened. Each part carries its visible text
// too (unrender.go), for when a platform refuses the markup.
//
// HTML renders Markdown as sanitised HTML for the web chat (html.go).
//
// A text still being written (a streamed reply) goes through
// partial.Markdown first (adapters/markup/partial): its open spans closed
// or held back, so no raw marker shows while it grows.
//
// markup imports nothing of Parley: adapters call it, and the core calls
// Plain for platforms without rich text.
package markup
