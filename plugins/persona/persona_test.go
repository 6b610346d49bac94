package persona_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/persona"
)

func TestDefaultPersonaUsesTheName(t *testing.T) {
	t.Parallel()
	p := persona.New()
	p.PersonaName = "Aiko"
	require.NoError(t, p.Provision(context.Background(), core.Env{}))
	require.NoError(t, p.Validate())
	layers, err := p.PromptLayers(context.Background(), &core.Turn{})
	require.NoError(t, err)
	require.Len(t, layers, 2)
	require.Equal(t, core.LayerPersona, layers[0].Level)
	require.Equal(t, core.LayerInstructions, layers[1].Level)
	require.Contains(t, layers[0].Text, "You are Aiko,")
	require.NotContains(t, layers[0].Text, "{{name}}")
	require.Equal(t, "Aiko", p.BotName())
}

func TestPersonaFromFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "persona.md")
	require.NoError(t, os.WriteFile(path, []byte("  I am {{name}}, a grumpy lighthouse keeper.\n"), 0o600))
	p := persona.New()
	p.File = path
	require.NoError(t, p.Provision(context.Background(), core.Env{}))
	layers, err := p.PromptLayers(context.Background(), &core.Turn{})
	require.NoError(t, err)
	require.Equal(t, "I am Subaru, a grumpy lighthouse keeper.", layers[0].Text)
}

func TestPersonaErrors(t *testing.T) {
	t.Parallel()
	p := persona.New()
	p.File = filepath.Join(t.TempDir(), "missing.md")
	err := p.Provision(context.Background(), core.Env{})
	require.ErrorContains(t, err, "reading persona file")

	empty := filepath.Join(t.TempDir(), "empty.md")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))
	p = persona.New()
	p.File = empty
	require.NoError(t, p.Provision(context.Background(), core.Env{}))
	require.EqualError(t, p.Validate(), "persona: the persona text is empty")

	p = persona.New()
	p.PersonaName = " "
	require.NoError(t, p.Provision(context.Background(), core.Env{}))
	require.EqualError(t, p.Validate(), "persona: name is empty")
}

func TestPersonaInline(t *testing.T) {
	t.Parallel()
	p := persona.New()
	p.PersonaName = "Mika"
	p.Text = "You are {{name}}, a night-owl astronomer."
	require.NoError(t, p.Provision(context.Background(), core.Env{}))
	require.NoError(t, p.Validate())
	layers, err := p.PromptLayers(context.Background(), &core.Turn{})
	require.NoError(t, err)
	require.Equal(t, "You are Mika, a night-owl astronomer.", layers[0].Text)

	p = persona.New()
	p.Text, p.File = "x", "y.md"
	require.EqualError(t, p.Provision(context.Background(), core.Env{}), "persona: set file or text, not both")
}
