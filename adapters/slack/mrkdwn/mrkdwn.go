// Package mrkdwn reads Slack's mrkdwn, as users' messages carry it, into
// the plain text the core stores.
package mrkdwn

import (
	"strings"
)

// ToText turns the text of a Slack message into what the user typed:
// Slack wraps mentions and links in angle brackets (<@U123>,
// <https://x|label>) and escapes & < > as entities.
func ToText(text string) string {
	if !strings.ContainsAny(text, "<&") {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for {
		open := strings.IndexByte(text, '<')
		if open < 0 {
			break
		}
		end := strings.IndexByte(text[open:], '>')
		if end < 0 {
			break
		}
		b.WriteString(unescapeEntities(text[:open]))
		b.WriteString(unescapeEntities(expandRef(text[open+1 : open+end])))
		text = text[open+end+1:]
	}
	b.WriteString(unescapeEntities(text))
	return b.String()
}

// expandRef writes out one <…> reference: a mention, a channel, a special
// mention or a link, with its label when Slack gave one.
func expandRef(ref string) string {
	target, label, hasLabel := strings.Cut(ref, "|")
	switch {
	case strings.HasPrefix(target, "@"):
		if hasLabel && label != "" {
			return "@" + strings.TrimPrefix(label, "@")
		}
		return target
	case strings.HasPrefix(target, "#"):
		if hasLabel && label != "" {
			return "#" + strings.TrimPrefix(label, "#")
		}
		return target
	case strings.HasPrefix(target, "!"):
		if hasLabel && label != "" {
			return label
		}
		name, _, _ := strings.Cut(target[1:], "^")
		return "@" + name
	case strings.HasPrefix(target, "mailto:"):
		if hasLabel && label != "" {
			return label
		}
		return strings.TrimPrefix(target, "mailto:")
	case hasLabel && label != "" && label != target && !strings.HasSuffix(target, "://"+label) && !strings.HasSuffix(target, "://"+label+"/"):
		return label + " (" + target + ")"
	default:
		return target
	}
}

// unescapeEntities reverses Slack's escaping of & < >.
func unescapeEntities(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return entityReplacer.Replace(s)
}

var entityReplacer = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
