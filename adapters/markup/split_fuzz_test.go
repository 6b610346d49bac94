package markup_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
)

// flavorCase is one platform's splitter with its whole-text renderer, how
// it counts, and how it shows markup.
type flavorCase struct {
	name   string
	split  func(string, int) []markup.Part
	render func(string) string
	length func(string) int
	// read is the visible text of markup and whether the platform
	// accepts it.
	read func(string) (markuptest.Rendered, error)
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

var flavors = []flavorCase{
	{"telegram", markup.SplitTelegram, markup.TelegramV2, utf16Len, markuptest.TelegramV2},
	{"discord", markup.SplitDiscord, markup.Discord, utf8.RuneCountInString,
		func(s string) (markuptest.Rendered, error) { return markuptest.Discord(s), nil }},
	{"slack", markup.SplitSlack, markup.Slack, utf8.RuneCountInString,
		func(s string) (markuptest.Rendered, error) { return markuptest.Slack(s, true), nil }},
	{"plain", markup.SplitPlain, markup.Plain, utf8.RuneCountInString, readPlain},
}

// readPlain reads Plain's text. Its only markup is the "> " of quoted
// lines, which a part cut inside a quote repeats: ">" is left out.
func readPlain(s string) (markuptest.Rendered, error) {
	return markuptest.Rendered{Text: strings.ReplaceAll(s, ">", "")}, nil
}

// squeeze drops all white space (and zero-width spaces, which only keep
// markers apart): what is left of a text once cuts, which may turn a space
// into a line end or drop it, cannot matter.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '\u200b' {
			return -1
		}
		return r
	}, s)
}

// splitProblem checks the parts of md split at limit in flavor fc and
// says what is wrong with them, "" if nothing.
func splitProblem(fc flavorCase, md string, limit int) string {
	parts := fc.split(md, limit)
	whole := fc.render(md)
	if strings.TrimSpace(whole) == "" {
		if len(parts) != 0 {
			return "parts of a blank rendering"
		}
		return ""
	}
	if len(parts) == 0 {
		return "no parts"
	}
	wholeRead, err := fc.read(whole)
	if err != nil {
		return "" // the whole-text renderer's own fuzz target covers this
	}
	compare := true
	if fc.name == "discord" || fc.name == "slack" {
		// Discord has no escape inside code (a star in code inside italic
		// ends the italic there) and Slack none at all (literal markers
		// pair up): when the whole rendering is already misread, the
		// parts cannot be held to that reading. What the Markdown means
		// is what Telegram, where everything is escaped, shows.
		meant, err := markuptest.TelegramV2(markup.TelegramV2(md))
		compare = err == nil && squeeze(meant.Text) == squeeze(wholeRead.Text)
	}
	var joined strings.Builder
	for i, p := range parts {
		switch {
		case !utf8.ValidString(p.Text) || !utf8.ValidString(p.Plain):
			return sprintf("part %d is not valid UTF-8: %q", i, p.Text)
		case fc.length(p.Text) > limit:
			return sprintf("part %d is %d long, over %d: %q", i, fc.length(p.Text), limit, p.Text)
		case fc.length(p.Plain) > limit:
			return sprintf("part %d's Plain is %d long, over %d: %q", i, fc.length(p.Plain), limit, p.Plain)
		case strings.TrimSpace(p.Text) == "":
			return sprintf("part %d is blank", i)
		}
		r, err := fc.read(p.Text)
		if err != nil {
			return sprintf("part %d is refused: %v: %q", i, err, p.Text)
		}
		joined.WriteString(r.Text)
	}
	if got, want := squeeze(joined.String()), squeeze(wholeRead.Text); compare && got != want {
		return sprintf("the parts show\n%q\nthe whole shows\n%q", got, want)
	}
	return ""
}

var fuzzLimits = []int{64, 65, 80, 100, 128, 200, 300, 500, 1000, 2000, 4096}

// FuzzSplit checks that whatever Markdown comes in, and whatever the
// limit, every part fits, Telegram accepts every Telegram part, and the
// parts together show what the unsplit rendering shows. Run it with
// go test -run '^$' -fuzz '^FuzzSplit$' ./adapters/markup.
func FuzzSplit(f *testing.F) {
	for _, c := range renderCases {
		f.Add(c.md, uint8(0))
	}
	for _, c := range splitSeeds {
		f.Add(c, uint8(0))
		f.Add(c, uint8(3))
	}
	f.Fuzz(func(t *testing.T, md string, l uint8) {
		limit := fuzzLimits[int(l)%len(fuzzLimits)]
		if len(md) > 64<<10 {
			return
		}
		// Short texts are made long enough to need several parts.
		if len(md) < limit && len(md) > 0 {
			md = strings.Repeat(md+"\n", limit/len(md)+1)
		}
		for _, fc := range flavors {
			if p := splitProblem(fc, md, limit); p != "" {
				t.Fatalf("%s, limit %d, md %q: %s", fc.name, limit, md, p)
			}
		}
	})
}

// splitSeeds are texts with the places splitting gets wrong easily.
var splitSeeds = []string{
	strings.Repeat("**bold paragraph** with text.\n\n", 40),
	"**" + strings.Repeat("long bold ", 60) + "**",
	"*" + strings.Repeat("it\n", 60) + "*",
	"```go\n" + strings.Repeat("x := `a` + \"\\\\\"\n", 40) + "```",
	"```\n" + strings.Repeat("a&b<c>", 60) + "\n```",
	"> " + strings.Repeat("quoted *text* ", 50),
	"- " + strings.Repeat("item [link](https://e.com/a_(b)) ", 20) + "\n- two\n  ```py\n  " + strings.Repeat("y", 300) + "\n  ```",
	strings.Repeat("😀", 200),
	strings.Repeat("👩‍👩‍👧‍👦🇫🇷", 60),
	strings.Repeat("a\r\n", 200),
	"[" + strings.Repeat("link text ", 30) + "](https://e.com/x)",
	strings.Repeat("x", 5000),
	strings.Repeat("- a - b # c 1. d > e\n", 30),
	"1. > ```\n   > " + strings.Repeat("c ", 200) + "\n   > ```",
	strings.Repeat("https://e.com/"+strings.Repeat("a_b", 40)+" ", 5),
	"~~" + strings.Repeat("gone ", 100) + "~~ `" + strings.Repeat("code ", 40) + "`",
	strings.Repeat("2*3*4 snake_case *a* _b_ ", 40),
	"<b>" + strings.Repeat("html ", 100) + "</b>",
	"|a|b|\n|-|-|\n" + strings.Repeat("|1|2|\n", 100),
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
