package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// shareImageTool is the tool that passes an image an MCP tool returned on
// to the user.
const shareImageTool = "share_image"

// Bounds of the images one turn keeps for share_image: the bytes are
// held until the turn ends even when the model never shares them.
const (
	maxShelved      = 8        // images kept in a turn
	maxShelvedBytes = 16 << 20 // their bytes together
)

// shareTypes are the image types every platform shows as a picture, and
// the extension of each in the file's name.
var shareTypes = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}

// shelf holds the images MCP tools returned in one turn, each under a
// handle ("mcp-1") the tool's result names. Tools makes one per turn and
// only that turn's tools reach it, so it ends with the turn: nothing is
// kept across turns, conversations or users.
type shelf struct {
	turn *core.Turn

	mu     sync.Mutex
	images []shelved
	bytes  int
}

type shelved struct {
	handle, mime string
	data         []byte
	shared       bool
}

type shelfKey struct{}

// withShelf gives a call of an MCP tool the turn's shelf.
func withShelf(ctx context.Context, sh *shelf) context.Context {
	return context.WithValue(ctx, shelfKey{}, sh)
}

// shelfOf is the shelf of the turn a call belongs to, or nil (a call
// outside a turn: its images get no handle).
func shelfOf(ctx context.Context) *shelf {
	sh, _ := ctx.Value(shelfKey{}).(*shelf)
	return sh
}

// keep shelves an image and returns the end of its note for the model:
// how to share it, or why it cannot be shared.
func (sh *shelf) keep(mime string, data []byte) string {
	if _, ok := shareTypes[mime]; !ok {
		return "; it cannot be sent to the user (only PNG, JPEG, GIF and WebP can)"
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.images) >= maxShelved || sh.bytes+len(data) > maxShelvedBytes {
		return fmt.Sprintf("; it cannot be sent to the user: this turn keeps at most %d images, %d MB together", maxShelved, maxShelvedBytes>>20)
	}
	h := "mcp-" + strconv.Itoa(len(sh.images)+1)
	sh.images = append(sh.images, shelved{handle: h, mime: mime, data: data})
	sh.bytes += len(data)
	return fmt.Sprintf(`; to show it to the user, call %s {"image":%q}`, shareImageTool, h)
}

// tool is share_image bound to the turn.
func (sh *shelf) tool() llm.Tool {
	return llm.Tool{
		Name: shareImageTool,
		Description: "Send the user an image an MCP tool returned in this turn, with your reply (your reply is its caption). " +
			`Give the handle the tool's result names, like "mcp-1". At most ` + strconv.Itoa(core.MaxReplyPictures) + " pictures a reply.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"image":{"type":"string","description":"the image's handle, like \"mcp-1\""}},
			"required":["image"],"additionalProperties":false}`),
		Call: func(_ context.Context, args json.RawMessage) (string, error) {
			h, err := parseShare(args)
			if err != nil {
				return "", err
			}
			return sh.share(h)
		},
	}
}

// parseShare reads share_image's arguments: a bad call goes back to the
// model as a tool error saying what to fix.
func parseShare(raw json.RawMessage) (string, error) {
	var a struct {
		Image string `json:"image"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", fmt.Errorf(`%s: %v (want {"image": "mcp-1"}, a handle a tool's result named)`, shareImageTool, err)
	}
	h := strings.TrimSpace(a.Image)
	if h == "" {
		return "", fmt.Errorf(`%s: "image" is missing: give the handle a tool's result named, like "mcp-1"`, shareImageTool)
	}
	return h, nil
}

// share attaches the image called h to the turn's reply. t.Files is
// appended to as generate_image does: llm.Run calls a turn's tools one at
// a time.
func (sh *shelf) share(h string) (string, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var img *shelved
	handles := make([]string, len(sh.images))
	for i := range sh.images {
		handles[i] = sh.images[i].handle
		if sh.images[i].handle == h {
			img = &sh.images[i]
		}
	}
	switch {
	case img == nil && len(handles) == 0:
		return "", fmt.Errorf("%s: there is no image %q: no MCP tool has returned an image that can be sent in this turn", shareImageTool, h)
	case img == nil:
		return "", fmt.Errorf("%s: there is no image %q in this turn; the images are %s", shareImageTool, h, strings.Join(handles, ", "))
	case img.shared:
		return "", fmt.Errorf("%s: image %s is shared already: it goes with your reply once", shareImageTool, h)
	case len(sh.turn.Files) >= core.MaxReplyPictures:
		return "", fmt.Errorf("%s: this reply has %d pictures already, the most it may carry", shareImageTool, core.MaxReplyPictures)
	}
	img.shared = true
	sh.turn.Files = append(sh.turn.Files, core.OutboundFile{Kind: core.AttachImage, Name: h + shareTypes[img.mime], MIME: img.mime, Data: img.data})
	return fmt.Sprintf("Image %s will be sent with your reply: write the caption as your reply.", h), nil
}
