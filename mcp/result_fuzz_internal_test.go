package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleybot/parley/core/llm"
)

// cutNote is the note capText ends a cut result with.
var cutNote = regexp.MustCompile(`\n\n\[cut: the result was ([0-9]+) characters; the first ([0-9]+) are shown\]$`)

// FuzzConvertResult checks what the model gets of a tool's result built
// from the arguments: a list of contents (each byte of kinds picks text,
// an image, audio, a resource link, an embedded text or binary resource,
// or a resource without contents; FuzzConvertResultJSON has the content
// Parley does not show), with structured content beside it. The answer is
// never blank; its text is at most maxChars characters, or exactly
// maxChars followed by the cut's note; it is valid UTF-8 when what the
// tool sent is; images come only with vision on, one per image of a type
// the model takes, each a data URL of the image's bytes; each text part
// that is not blank is there when nothing was cut.
func FuzzConvertResult(f *testing.F) {
	f.Add([]byte{0, 1, 5}, "hello", "image/png", []byte("\x89PNG"), "file:///a.png", `{"temp":21}`, true, uint16(100))
	f.Add([]byte{}, "", "", []byte{}, "", ``, false, uint16(0))
	f.Add([]byte{}, "", "", []byte{}, "", `{"a":[1,2,{"b":null}]}`, false, uint16(3))
	f.Add([]byte{0}, "", "", []byte{}, "", ``, true, uint16(1))
	f.Add([]byte{0, 0}, " \n", "", []byte{}, "", ``, false, uint16(1))
	f.Add([]byte{6, 7}, "x", "image/svg+xml", []byte("<svg/>"), "", `null`, true, uint16(16000))
	f.Add([]byte{2, 3, 4}, strings.Repeat("é", 40), "audio/wav", []byte{1, 2, 3}, "https://x.example/r?token=1", `"s"`, true, uint16(10))
	f.Add([]byte{0, 1}, "\xff\xfe", "image/jpeg", bytes.Repeat([]byte{0xff}, 3000), "\x00", `[]`, false, uint16(5))
	f.Fuzz(func(t *testing.T, kinds []byte, text, mime string, data []byte, uri, structured string, vision bool, maxChars uint16) {
		if len(kinds) > 32 {
			kinds = kinds[:32]
		}
		limit := int(maxChars)
		if limit == 0 {
			limit = DefaultMaxResultChars
		}
		blob := append([]byte{}, data...) // never nil: a binary resource
		res := &sdk.CallToolResult{}
		var texts []string
		wantImages := 0
		for _, k := range kinds {
			var c sdk.Content
			switch k % 7 {
			case 0:
				c = &sdk.TextContent{Text: text}
				texts = append(texts, text)
			case 1:
				c = &sdk.ImageContent{MIMEType: mime, Data: data}
				if visionTypes[mime] {
					wantImages++
				}
			case 2:
				c = &sdk.AudioContent{MIMEType: mime, Data: data}
			case 3:
				c = &sdk.ResourceLink{URI: uri, Name: text, Title: mime, Description: text}
			case 4:
				c = &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: mime, Text: text}}
				texts = append(texts, text)
			case 5:
				c = &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: mime, Blob: blob}}
				if visionTypes[mime] {
					wantImages++
				}
			default:
				c = &sdk.EmbeddedResource{}
			}
			res.Content = append(res.Content, c)
		}
		if structured != "" {
			var v any
			if json.Unmarshal([]byte(structured), &v) == nil {
				res.StructuredContent = v
			}
		}

		out := convertResult(res, vision, limit, nil)
		validIn := utf8.ValidString(text) && utf8.ValidString(mime) && utf8.ValidString(uri)
		cut := checkOutput(t, out, vision, limit, validIn)
		if !vision {
			wantImages = 0
		}
		if len(out.Images) != wantImages {
			t.Fatalf("%d images of a type the model takes (vision %t), %d attached", wantImages, vision, len(out.Images))
		}
		for _, img := range out.Images {
			if img != "data:"+mime+";base64,"+base64.StdEncoding.EncodeToString(data) {
				t.Fatalf("image %.80q is not the tool's %s image", img, mime)
			}
		}
		if !cut {
			for _, s := range texts {
				if strings.TrimSpace(s) != "" && !strings.Contains(out.Text, s) {
					t.Fatalf("the text %q is not in %q", s, out.Text)
				}
			}
		}
	})
}

// FuzzConvertResultJSON checks what the model gets of a tools/call result
// as a server sends it: raw JSON decoded by the SDK, then converted. A
// result the SDK decodes never panics the conversion, and the answer keeps
// FuzzConvertResult's invariants (JSON strings are valid UTF-8, so the
// text always is).
func FuzzConvertResultJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"21°C in Paris"}]}`,
		`{"content":[]}`,
		`{"content":[{"type":"text","text":""}]}`,
		`{"content":[{"type":"text","text":"  \n"}],"isError":true}`,
		`{"content":[],"structuredContent":{"temp":21,"unit":"C"}}`,
		`{"content":[],"structuredContent":null}`,
		`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"image","data":"PHN2Zy8+","mimeType":"image/svg+xml"}]}`,
		`{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///b.txt","name":"b.txt","description":"the b file"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"hello"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a.gz","mimeType":"application/gzip","blob":"H4sI"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///p.jpg","mimeType":"image/jpeg","blob":""}}]}`,
		`{"content":[{"type":"resource"}]}`,
		`{"content":[{"type":"tool_use","id":"1","name":"x","input":{}}]}`,
		`{"content":[{"type":"tool_result","toolUseId":"1","content":[{"type":"text","text":"nested"}]}]}`,
		`{"content":[{"type":"text","text":"\ud800 lone surrogate \u0000"}]}`,
		`{"content":[{"type":"text","text":"` + strings.Repeat("é", 20) + `"}]}`,
		`{"content":null}`, `{}`, `null`, `[]`,
	} {
		f.Add([]byte(s), true, uint16(10))
	}
	f.Fuzz(func(t *testing.T, raw []byte, vision bool, maxChars uint16) {
		var res sdk.CallToolResult
		if err := res.UnmarshalJSON(raw); err != nil {
			return
		}
		limit := int(maxChars)
		if limit == 0 {
			limit = DefaultMaxResultChars
		}
		out := convertResult(&res, vision, limit, nil)
		checkOutput(t, out, vision, limit, utf8.Valid(raw))
		for _, img := range out.Images {
			mime, b64, ok := strings.Cut(strings.TrimPrefix(img, "data:"), ";base64,")
			if _, err := base64.StdEncoding.DecodeString(b64); !ok || !visionTypes[mime] || err != nil {
				t.Fatalf("image %.80q is not a data URL of a type the model takes", img)
			}
		}
	})
}

// checkOutput checks what holds of any answer to the model: never blank,
// within max characters or cut to exactly max with the note, valid UTF-8
// when validIn, images only with vision. It reports whether it was cut.
func checkOutput(t *testing.T, out llm.ToolOutput, vision bool, max int, validIn bool) (cut bool) {
	t.Helper()
	if strings.TrimSpace(out.Text) == "" {
		t.Fatalf("a blank answer to the model: %q", out.Text)
	}
	if validIn && !utf8.ValidString(out.Text) {
		t.Fatalf("the answer is not valid UTF-8: %q", out.Text)
	}
	if !vision && len(out.Images) > 0 {
		t.Fatalf("%d images without vision", len(out.Images))
	}
	n := utf8.RuneCountInString(out.Text)
	if n <= max && !cutNote.MatchString(out.Text) {
		return false
	}
	m := cutNote.FindStringSubmatchIndex(out.Text)
	if m == nil {
		t.Fatalf("%d characters, over %d, without the cut's note", n, max)
	}
	kept := out.Text[:m[0]]
	total, _ := strconv.Atoi(out.Text[m[2]:m[3]])
	shown, _ := strconv.Atoi(out.Text[m[4]:m[5]])
	if k := utf8.RuneCountInString(kept); k != max || shown != max || total <= max {
		// A text that ends like a note, within the limit, is the tool's own.
		if n <= max {
			return false
		}
		t.Fatalf("cut to %d characters, the note says %d of %d shown, the limit is %d", k, shown, total, max)
	}
	return true
}
