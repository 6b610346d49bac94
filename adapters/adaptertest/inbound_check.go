package adaptertest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
)

// kinds are the attachment kinds the core knows.
var kinds = map[core.AttachmentKind]bool{
	core.AttachImage: true, core.AttachVoice: true, core.AttachAudio: true,
	core.AttachVideo: true, core.AttachDocument: true, core.AttachSticker: true,
}

// CheckInbound reports what is wrong with msg, a message an adapter of
// platform handed to the core after decoding payload: it must be a direct
// message with a thread and a sender, with at most maxFiles attachments,
// each well formed (CheckAttachment). No secret (a bot token, a signing or
// webhook secret) may appear in any of its fields unless payload itself
// holds it: an adapter never writes its own credentials into what it
// delivers (a Telegram download URL holds the token, so it is never a
// Ref). Fuzz targets use it on every message that reaches the core.
func CheckInbound(msg core.InboundMessage, platform core.Platform, maxFiles int, payload []byte, secrets ...string) error {
	switch {
	case msg.Platform != platform:
		return fmt.Errorf("platform %q, want %q", msg.Platform, platform)
	case !msg.Direct:
		return errors.New("not marked Direct")
	case msg.ChannelThreadID == "":
		return errors.New("no ChannelThreadID")
	case msg.ChannelUserID == "":
		return errors.New("no ChannelUserID")
	case len(msg.Attachments) > maxFiles:
		return fmt.Errorf("%d attachments, at most %d expected", len(msg.Attachments), maxFiles)
	}
	for i, a := range msg.Attachments {
		if err := CheckAttachment(a); err != nil {
			return fmt.Errorf("attachment %d (%+v): %w", i, a, err)
		}
	}
	fields := []string{msg.ChannelThreadID, msg.ChannelUserID, msg.DisplayName, msg.Text, msg.PlatformMessageID}
	for _, a := range msg.Attachments {
		fields = append(fields, a.Ref, a.Name, a.MIME, a.Emoji)
	}
	for _, s := range secrets {
		if s == "" || bytes.Contains(payload, []byte(s)) {
			continue
		}
		for _, f := range fields {
			if strings.Contains(f, s) {
				return fmt.Errorf("a secret the payload does not hold leaked into %q", f)
			}
		}
	}
	return nil
}

// CheckAttachment reports what is wrong with a: it must be of a kind the
// core knows, have a Ref to fetch it by, no negative size, length or
// dimension, an emoji only when it is a sticker, and text fields of valid
// UTF-8 (adapters decode them from JSON, which never yields anything else).
func CheckAttachment(a core.Attachment) error {
	switch {
	case !kinds[a.Kind]:
		return fmt.Errorf("unknown kind %q", a.Kind)
	case a.Ref == "":
		return errors.New("no Ref: nothing to fetch it by")
	case a.Size < 0 || a.Seconds < 0 || a.Width < 0 || a.Height < 0:
		return fmt.Errorf("negative size %d, length %d or dimensions %dx%d", a.Size, a.Seconds, a.Width, a.Height)
	case a.Emoji != "" && a.Kind != core.AttachSticker:
		return fmt.Errorf("an emoji on a %s", a.Kind)
	}
	for _, s := range []string{a.MIME, a.Name, a.Ref, a.Emoji} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%q is not valid UTF-8", s)
		}
	}
	return nil
}
