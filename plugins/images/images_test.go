package images

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// maker draws "png:" and the prompt, or fails with err.
type maker struct{ err error }

func (m maker) GenerateImage(_ context.Context, prompt string) ([]byte, string, error) {
	if m.err != nil {
		return nil, "", m.err
	}
	return []byte("png:" + prompt), "image/png", nil
}

func call(t *testing.T, p *Plugin, turn *core.Turn, args string) (string, error) {
	t.Helper()
	tools, err := p.Tools(context.Background(), turn)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	require.Equal(t, "generate_image", tools[0].Name)
	return tools[0].Call(context.Background(), json.RawMessage(args))
}

// A picture joins the turn's files; bad arguments and a failing service
// go back to the model as tool errors, adding nothing.
func TestGenerateImage(t *testing.T) {
	t.Parallel()
	p := New()
	p.maker = maker{}
	turn := &core.Turn{}
	out, err := call(t, p, turn, `{"prompt":" a cat on a teapot "}`)
	require.NoError(t, err)
	require.Contains(t, out, "will be sent with your reply")
	require.Equal(t, []core.OutboundFile{{Kind: core.AttachImage, Name: "picture-1.png", MIME: "image/png", Data: []byte("png:a cat on a teapot")}}, turn.Files)

	for args, want := range map[string]string{
		`{"prompt":""}`: "generate_image: prompt is empty",
		`{"prompt":"` + strings.Repeat("x", 4001) + `"}`: "generate_image: prompt is over 4000 characters",
		`{"prompt":"x","size":"huge"}`:                   "generate_image: json: unknown field",
		`not json`:                                       "generate_image: invalid character",
	} {
		_, err := call(t, p, turn, args)
		require.ErrorContains(t, err, want, args)
	}
	p.maker = maker{err: errors.New("llm: images: 500 Internal Server Error")}
	_, err = call(t, p, turn, `{"prompt":"a dog"}`)
	require.ErrorContains(t, err, "generate_image: the picture could not be made: llm: images: 500")
	require.Len(t, turn.Files, 1, "nothing added")

	p.maker = maker{}
	for range 3 {
		_, err = call(t, p, turn, `{"prompt":"more"}`)
		require.NoError(t, err)
	}
	_, err = call(t, p, turn, `{"prompt":"one too many"}`)
	require.ErrorContains(t, err, "has 4 pictures already")
}

func TestValidateAndProvision(t *testing.T) {
	t.Parallel()
	p := New()
	require.Equal(t, "gpt-image-1", p.Model)
	require.NoError(t, p.Validate())
	p.Model = " "
	require.EqualError(t, p.Validate(), "images: model must not be empty")
	require.EqualError(t, New().Provision(context.Background(), core.Env{}), "images: the host makes no pictures")
	var asked string
	p = New()
	require.NoError(t, p.Provision(context.Background(), core.Env{NewImageMaker: func(model string) (core.ImageMaker, error) {
		asked = model
		return maker{}, nil
	}}))
	require.Equal(t, "gpt-image-1", asked)
}
