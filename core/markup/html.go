package markup

import (
	"html"
	"strings"
)

// HTML renders md as sanitised HTML for a browser. Placeholder until the
// goldmark renderer lands: the text escaped, one paragraph.
func HTML(md string) string {
	md = normalize(md)
	if strings.TrimSpace(md) == "" {
		return ""
	}
	return "<p>" + html.EscapeString(md) + "</p>"
}
