package mcp

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleybot/parley/core/llm"
)

// visionTypes are the image types a model takes as an image part.
var visionTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// noOutput is what the model reads of a result with no text and nothing
// else (a tool that only acts): an empty tool message tells the model
// nothing, and goes out without a "content" field, which servers that
// follow OpenAI's schema refuse.
const noOutput = "[the tool returned no output]"

// convertResult turns a tool's result into what the model reads: the
// parts as text, joined by blank lines, capped at maxChars (noOutput when
// blank); images as data URLs when vision is on. With a shelf (the turn
// offers share_image), each image is kept there and its note says how to
// send it to the user, or why it cannot be.
func convertResult(res *sdk.CallToolResult, vision bool, maxChars int, sh *shelf) llm.ToolOutput {
	var parts, images []string
	image := func(mime string, data []byte, what string) {
		var note string
		switch {
		case !vision:
			note = "not shown, the model cannot see images here"
		case !visionTypes[mime]:
			note = "not shown, the model cannot take this image type"
		default:
			images = append(images, "data:"+mime+";base64,"+base64.StdEncoding.EncodeToString(data))
			note = fmt.Sprintf("attached as image %d", len(images))
		}
		if sh != nil {
			note += sh.keep(mime, data)
		}
		parts = append(parts, fmt.Sprintf("[%s %s, %s: %s]", mime, what, size(data), note))
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			image(c.MIMEType, c.Data, "image")
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[%s audio, %s: not shown, the model cannot hear audio here]", c.MIMEType, size(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, resourceLink(c))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case r.Blob == nil:
				parts = append(parts, "[resource "+r.URI+"]\n"+r.Text)
			case strings.HasPrefix(r.MIMEType, "image/"):
				image(r.MIMEType, r.Blob, "image resource "+r.URI)
			default:
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %s of binary data, not shown]", r.URI, cmp.Or(r.MIMEType, "unknown type"), size(r.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content: not shown]", c))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n\n")
	if strings.TrimSpace(text) == "" {
		text = noOutput
	}
	return llm.ToolOutput{Text: capText(text, maxChars), Images: images}
}

func resourceLink(l *sdk.ResourceLink) string {
	s := "[resource link] " + l.URI
	if name := cmp.Or(l.Title, l.Name); name != "" {
		s += " (" + name + ")"
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s
}

// capText cuts s to maxChars characters (at a rune boundary) and says so.
func capText(s string, maxChars int) string {
	n := utf8.RuneCountInString(s)
	if n <= maxChars {
		return s
	}
	cut := 0
	for i := range s {
		if maxChars == 0 {
			cut = i
			break
		}
		maxChars--
	}
	kept := utf8.RuneCountInString(s[:cut])
	return s[:cut] + fmt.Sprintf("\n\n[cut: the result was %d characters; the first %d are shown]", n, kept)
}

// size writes a byte count as a person reads it.
func size(b []byte) string {
	n := len(b)
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%d KB", (n+1023)/1024)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
	}
}
