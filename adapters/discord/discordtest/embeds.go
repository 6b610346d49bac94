package discordtest

import (
	"encoding/json"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/markup/markuptest"
)

// Discord's limits on embeds.
const (
	maxEmbeds           = 10
	maxEmbedTitle       = 256
	maxEmbedDescription = 4096
	maxEmbedText        = 6000 // all titles, descriptions, fields, footers and authors
)

// Embed is one embed of a message the bot created, as the fake read it.
type Embed struct {
	Title       string
	Description string
	URL         string
	// ImageURL is image.url and ThumbnailURL thumbnail.url, "" if none.
	ImageURL     string
	ThumbnailURL string
	// Raw is the embed's JSON as the bot sent it.
	Raw json.RawMessage
}

// wireEmbed is the part of an embed object the fake reads.
type wireEmbed struct {
	Title       string     `json:"title"`
	Description string     `json:"description"`
	URL         string     `json:"url"`
	Image       *wireMedia `json:"image"`
	Thumbnail   *wireMedia `json:"thumbnail"`
	Footer      *struct {
		Text string `json:"text"`
	} `json:"footer"`
	Author *struct {
		Name string `json:"name"`
	} `json:"author"`
	Fields []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"fields"`
}

type wireMedia struct {
	URL string `json:"url"`
}

// readEmbeds decodes and checks embeds like Discord: at most 10, a title
// of at most 256 characters, a description of at most 4096, 6000 in all,
// and image and thumbnail URLs that are http, https or attachment://.
func readEmbeds(raw []json.RawMessage) ([]Embed, apiError, bool) {
	if len(raw) > maxEmbeds {
		return nil, invalidField("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."), false
	}
	var out []Embed
	total := 0
	for i, r := range raw {
		var w wireEmbed
		if err := json.Unmarshal(r, &w); err != nil {
			return nil, invalidEmbed(i, "", "", "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType"), false
		}
		if utf8.RuneCountInString(w.Title) > maxEmbedTitle {
			return nil, invalidEmbed(i, "title", "", "BASE_TYPE_MAX_LENGTH", "Must be 256 or fewer in length."), false
		}
		if utf8.RuneCountInString(w.Description) > maxEmbedDescription {
			return nil, invalidEmbed(i, "description", "", "BASE_TYPE_MAX_LENGTH", "Must be 4096 or fewer in length."), false
		}
		total += utf8.RuneCountInString(w.Title) + utf8.RuneCountInString(w.Description)
		if w.Footer != nil {
			total += utf8.RuneCountInString(w.Footer.Text)
		}
		if w.Author != nil {
			total += utf8.RuneCountInString(w.Author.Name)
		}
		for _, f := range w.Fields {
			total += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
		}
		e := Embed{Title: w.Title, Description: w.Description, URL: w.URL, Raw: r}
		for _, m := range []struct {
			field string
			media *wireMedia
			to    *string
		}{{"image", w.Image, &e.ImageURL}, {"thumbnail", w.Thumbnail, &e.ThumbnailURL}} {
			if m.media == nil {
				continue
			}
			if !mediaURL(m.media.URL) {
				return nil, invalidEmbed(i, m.field, "url", "URL_TYPE_INVALID_SCHEME", "Scheme must be one of ('http', 'https', 'attachment')."), false
			}
			*m.to = m.media.URL
		}
		out = append(out, e)
	}
	if total > maxEmbedText {
		return nil, invalidField("embeds", "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000"), false
	}
	return out, apiError{}, true
}

// mediaURL reports whether an embed can show u.
func mediaURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch p.Scheme {
	case "http", "https":
		return p.Host != ""
	case "attachment":
		return true
	}
	return false
}

// invalidEmbed is Invalid Form Body for a field (and subfield) of embed
// i, nested the way Discord reports it:
// {"embeds":{"0":{"description":{"_errors":[...]}}}}.
func invalidEmbed(i int, field, sub, code, message string) apiError {
	var leaf any = map[string]any{"_errors": []map[string]string{{"code": code, "message": message}}}
	if sub != "" {
		leaf = map[string]any{sub: leaf}
	}
	if field != "" {
		leaf = map[string]any{field: leaf}
	}
	errs, _ := json.Marshal(map[string]any{"embeds": map[string]any{strconv.Itoa(i): leaf}})
	return apiError{Message: "Invalid Form Body", Code: codeInvalidFormBody, Errors: errs}
}

// Shown is what a user sees of the message's content, read the way
// Discord reads its markdown (see markuptest.Discord).
func (m SentMessage) Shown() markuptest.Rendered { return markuptest.Discord(m.Content) }

// Shown is what a user sees of the embed's description.
func (e Embed) Shown() markuptest.Rendered { return markuptest.Discord(e.Description) }
