package discordtest

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Discord's limits on message components (action rows of buttons).
const (
	componentActionRow = 1
	componentButton    = 2

	maxRows          = 5
	maxRowButtons    = 5
	maxButtonLabel   = 80  // characters
	maxButtonCustom  = 100 // characters of custom_id
	buttonStyleLink  = 5
	buttonStyleFirst = 1 // primary
	buttonStyleLast  = 6 // premium
)

// Button styles, as a test reads them in Button.Style.
const (
	StylePrimary   = 1
	StyleSecondary = 2
	StyleSuccess   = 3
	StyleDanger    = 4
)

// Button is one button of a message, as the user sees it.
type Button struct {
	Label    string
	CustomID string
	// Style is the button's colour: StylePrimary (blurple), StyleSecondary
	// (grey), StyleSuccess (green), StyleDanger (red), 5 a link.
	Style    int
	Disabled bool
}

// wireComponent is an action row or a button as sent and shown.
type wireComponent struct {
	Type       int             `json:"type"`
	Components []wireComponent `json:"components,omitempty"`
	Label      string          `json:"label,omitempty"`
	Style      int             `json:"style,omitempty"`
	CustomID   string          `json:"custom_id,omitempty"`
	URL        string          `json:"url,omitempty"`
	Disabled   bool            `json:"disabled,omitempty"`
}

// readComponents decodes and checks a message's components like Discord:
// at most 5 action rows, each of 1 to 5 buttons; a button has a style,
// a label of at most 80 characters, and (but a link) a custom_id of 1 to
// 100 characters, unique in the message. Nothing else (select menus,
// layout components) is supported by the fake. raw absent or null is no
// components.
func readComponents(raw json.RawMessage) ([][]Button, apiError, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, apiError{}, true
	}
	var rows []wireComponent
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, invalidField("components", "MODEL_TYPE_CONVERT", "Only iterables may be used in a ListType"), false
	}
	if len(rows) > maxRows {
		return nil, invalidField("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length."), false
	}
	seen := map[string]bool{}
	out := make([][]Button, 0, len(rows))
	for i, row := range rows {
		field := "components." + strconv.Itoa(i)
		if row.Type != componentActionRow {
			return nil, invalidField(field+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (1,)."), false
		}
		if len(row.Components) == 0 || len(row.Components) > maxRowButtons {
			return nil, invalidField(field+".components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length."), false
		}
		buttons := make([]Button, 0, len(row.Components))
		for j, b := range row.Components {
			f := field + ".components." + strconv.Itoa(j)
			switch {
			case b.Type != componentButton:
				return nil, invalidField(f+".type", "UNION_TYPE_CHOICES", "The fake knows buttons only (type 2)."), false
			case b.Style < buttonStyleFirst || b.Style > buttonStyleLast:
				return nil, invalidField(f+".style", "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5, 6}."), false
			case utf8.RuneCountInString(b.Label) > maxButtonLabel:
				return nil, invalidField(f+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length."), false
			case b.Style != buttonStyleLink && (b.CustomID == "" || utf8.RuneCountInString(b.CustomID) > maxButtonCustom):
				return nil, invalidField(f+".custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."), false
			case b.Style != buttonStyleLink && seen[b.CustomID]:
				return nil, invalidField(f+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated"), false
			}
			seen[b.CustomID] = true
			buttons = append(buttons, Button{Label: b.Label, CustomID: b.CustomID, Style: b.Style, Disabled: b.Disabled})
		}
		out = append(out, buttons)
	}
	return out, apiError{}, true
}

// componentsWire is rows as Discord shows them on a message: always a
// list, empty when the message has no components.
func componentsWire(rows [][]Button) []wireComponent {
	out := make([]wireComponent, 0, len(rows))
	for _, row := range rows {
		r := wireComponent{Type: componentActionRow}
		for _, b := range row {
			r.Components = append(r.Components, wireComponent{
				Type: componentButton, Label: b.Label, Style: b.Style, CustomID: b.CustomID, Disabled: b.Disabled,
			})
		}
		out = append(out, r)
	}
	return out
}

// findButton returns the button of rows with customID.
func findButton(rows [][]Button, customID string) (Button, bool) {
	for _, row := range rows {
		for _, b := range row {
			if b.CustomID == customID {
				return b, true
			}
		}
	}
	return Button{}, false
}

// cloneRows copies rows, so that callers cannot change the fake's.
func cloneRows(rows [][]Button) [][]Button {
	if rows == nil {
		return nil
	}
	out := make([][]Button, len(rows))
	for i, r := range rows {
		out[i] = append([]Button(nil), r...)
	}
	return out
}

// Buttons lists a message's buttons row by row, in order.
func (m SentMessage) Buttons() []Button {
	var out []Button
	for _, row := range m.Components {
		out = append(out, row...)
	}
	return out
}
