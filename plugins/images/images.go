// Package images is the plugin that lets the model make pictures: tool
// generate_image {prompt} asks the image model (POST
// {llm.base_url}/images/generations) and the picture goes to the user
// with the turn's reply, its text the caption. It is off by default
// (plugins.images: enabled, model).
package images

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "images", New: func() core.Plugin { return New() }, OffByDefault: true})
}

// Limits of a call.
const (
	maxPrompt   = 4000                  // characters: what image models take
	maxPictures = core.MaxReplyPictures // a turn's pictures: one reply's worth
)

// Plugin offers generate_image.
type Plugin struct {
	// Model is the image model (default gpt-image-1).
	Model string `yaml:"model"`

	maker core.ImageMaker
	log   *slog.Logger
}

// Interface guards.
var (
	_ core.Plugin       = (*Plugin)(nil)
	_ core.Provisioner  = (*Plugin)(nil)
	_ core.Validator    = (*Plugin)(nil)
	_ core.ToolProvider = (*Plugin)(nil)
)

// New returns the plugin with its defaults.
func New() *Plugin { return &Plugin{Model: "gpt-image-1"} }

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "images" }

// Validate checks the decoded config.
func (p *Plugin) Validate() error {
	if strings.TrimSpace(p.Model) == "" {
		return errors.New("images: model must not be empty")
	}
	return nil
}

// Provision builds the picture maker on the bot's model server.
func (p *Plugin) Provision(_ context.Context, env core.Env) error {
	if env.NewImageMaker == nil {
		return errors.New("images: the host makes no pictures")
	}
	m, err := env.NewImageMaker(p.Model)
	if err != nil {
		return err
	}
	p.maker, p.log = m, env.Logger
	return nil
}

// logger is the host's logger, or none before Provision.
func (p *Plugin) logger() *slog.Logger {
	if p.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.log
}

// Tools offers generate_image, bound to the turn: its pictures wait on it
// until the reply goes.
func (p *Plugin) Tools(_ context.Context, t *core.Turn) ([]llm.Tool, error) {
	return []llm.Tool{{
		Name: "generate_image",
		Description: "Draw a picture from a description and send it to the user with your reply (your reply is its caption). " +
			"Describe what to draw in detail. Only when the user wants a picture.",
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
			"prompt":{"type":"string","maxLength":%d,"description":"what to draw"}},
			"required":["prompt"],"additionalProperties":false}`, maxPrompt)),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			prompt, err := parse(args)
			if err != nil {
				return "", err
			}
			if len(t.Files) >= maxPictures {
				return "", fmt.Errorf("generate_image: this reply has %d pictures already, the most it may carry", maxPictures)
			}
			data, mime, err := p.maker.GenerateImage(ctx, prompt)
			if err != nil {
				// The model tells the user; the log has the details.
				p.logger().Warn("generate_image: the picture could not be made; the model is told", "conversation", t.Conversation.ID, "err", err)
				return "", fmt.Errorf("generate_image: the picture could not be made: %w", err)
			}
			n := len(t.Files) + 1
			t.Files = append(t.Files, core.OutboundFile{Kind: core.AttachImage, Name: fmt.Sprintf("picture-%d%s", n, extension(mime)), MIME: mime, Data: data})
			return "The picture is made and will be sent with your reply: write the caption as your reply, without describing the picture at length.", nil
		},
	}}, nil
}

// parse reads the model's arguments: a bad call goes back to the model as
// a tool error saying what to fix.
func parse(raw json.RawMessage) (string, error) {
	var a struct {
		Prompt string `json:"prompt"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", fmt.Errorf("generate_image: %v (want {\"prompt\": string})", err)
	}
	prompt := strings.TrimSpace(a.Prompt)
	switch {
	case prompt == "":
		return "", errors.New("generate_image: prompt is empty")
	case utf8.RuneCountInString(prompt) > maxPrompt:
		return "", fmt.Errorf("generate_image: prompt is over %d characters", maxPrompt)
	}
	return prompt, nil
}

// extension is the file name's extension for an image type.
func extension(mime string) string {
	switch mime {
	case "image/jpeg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	case "image/gif":
		return ".gif"
	}
	return ".png"
}
