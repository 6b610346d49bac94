// Package modelside builds what runs beside the model's chat client on a
// model server: the transcriber of voice notes, the speaker of voice
// replies and the image maker, each on llm's server and key unless its own
// section names others, and says which model the bot talks to.
package modelside

import (
	"fmt"
	"log/slog"

	"github.com/parleybot/parley/app/probes"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
)

// LogModel says, before anything is served, which model the bot talks to
// and where: the first thing an owner checks when replies fail. The key is
// never logged, only whether there is one. With OpenAI's URL and no key
// every turn would fail with 401, so it warns and says how to fix it.
func LogModel(log *slog.Logger, cfg *config.Config) {
	log.Info("model", "base_url", probes.RedactedURL(cfg.LLM.BaseURL), "model", cfg.LLM.Model,
		"light_model", cfg.LightModel(), "api_key_set", cfg.LLM.APIKey != "")
	if cfg.LLM.APIKey == "" && llm.IsOpenAI(cfg.LLM.BaseURL) {
		what, set := "llm.api_key is empty", config.EnvOpenAIAPIKey
		if v := cfg.Unset["llm.api_key"]; v != "" {
			what, set = "llm.api_key is ${"+v+"}, which is not set", v
		}
		log.Warn(what + ", so OpenAI will refuse every turn: set " + set +
			", or point llm.base_url at a server that needs no key (Ollama, vLLM); see the README, \"Pointing it at a model\"")
	}
}

// AuthHint ends the model's 401 errors: what is missing or refused, and
// how to fix it. It shows in the log, /healthz, doctor and, to the owner
// on the machine itself, the web chat's banner.
func AuthHint(cfg *config.Config) string {
	env := ""
	if llm.IsOpenAI(cfg.LLM.BaseURL) {
		env = config.EnvOpenAIAPIKey
	}
	switch v := cfg.Unset["llm.api_key"]; {
	case v != "":
		return "llm.api_key is ${" + v + "}, which is not set: set " + v + " (or write the key in llm.api_key) and restart"
	case cfg.LLM.APIKey == "" && env != "":
		return "llm.api_key is empty: set " + env + " (or llm.api_key in the config) and restart"
	case cfg.LLM.APIKey == "":
		return "llm.api_key is empty and this server wants a key: set llm.api_key and restart"
	case env != "":
		return "the key in llm.api_key was refused: check it (" + env + ")"
	}
	return "the key in llm.api_key was refused: check it"
}

// service is the connection of a model-side service (transcription,
// speech, pictures) whose base URL and key, "" for llm's, are base and
// key: on llm's own server it shares the chat's limits, so that it counts
// against llm.max_concurrency and a 429 pauses both. component names it
// in the log, keyHint the key to check when the server refuses it.
func service(cfg *config.Config, chat *llm.Client, log *slog.Logger, base string, key config.Secret, model, component, keyHint string) llm.ServiceConfig {
	if base == "" {
		base = cfg.LLM.BaseURL
	}
	if key == "" {
		key = cfg.LLM.APIKey
	}
	var share *llm.Client
	if base == cfg.LLM.BaseURL {
		share = chat
	}
	return llm.ServiceConfig{
		ShareLimits: share,
		BaseURL:     base,
		APIKey:      key.Reveal(),
		Model:       model,
		Timeout:     cfg.LLM.Timeout,
		MaxRetries:  cfg.LLM.MaxRetries,
		AuthHint:    "check " + keyHint,
		Logger:      log.With("component", component),
	}
}

// NewTranscriber is the speech-to-text client of llm.transcription (nil,
// with no error, when its model is ""), its empty base URL and key taken
// from llm's.
func NewTranscriber(cfg *config.Config, model *llm.Client, log *slog.Logger) (core.Transcriber, error) {
	tc := cfg.LLM.Transcription
	if tc.Model == "" {
		log.Info("voice transcription is off (llm.transcription.model is empty)")
		return nil, nil
	}
	t, err := llm.NewTranscriber(service(cfg, model, log, tc.BaseURL, tc.APIKey, tc.Model, "transcription",
		"llm.transcription.api_key (or llm.api_key)"))
	if err != nil {
		return nil, fmt.Errorf("llm.transcription: %w", err)
	}
	return t, nil
}

// NewSpeaker builds the speech service voice replies use (voice.*), nil
// when voice.replies is never.
func NewSpeaker(cfg *config.Config, model *llm.Client, log *slog.Logger) (core.Speaker, error) {
	vc := cfg.Voice
	if vc.Replies == config.VoiceNever {
		return nil, nil
	}
	sp, err := llm.NewSpeaker(llm.SpeakerConfig{Voice: vc.Voice,
		ServiceConfig: service(cfg, model, log, vc.BaseURL, vc.APIKey, vc.Model, "speech", "voice.api_key (or llm.api_key)")})
	if err != nil {
		return nil, fmt.Errorf("voice: %w", err)
	}
	log.Info("voice replies are on", "replies", vc.Replies, "model", vc.Model, "voice", vc.Voice)
	return sp, nil
}

// NewImageMaker builds the picture maker of plugin images for model, on
// the model's server (its limits shared).
func NewImageMaker(cfg *config.Config, chat *llm.Client, model string, log *slog.Logger) (core.ImageMaker, error) {
	im, err := llm.NewImager(llm.ImagerConfig{ServiceConfig: service(cfg, chat, log, "", "", model, "images", "llm.api_key")})
	if err != nil {
		return nil, fmt.Errorf("plugins.images: %w", err)
	}
	return im, nil
}

// NewEmbedder builds the embeddings client of plugins.memory.embeddings
// for model, on base and key ("" for llm's), sharing the chat's limits on
// llm's own server.
func NewEmbedder(cfg *config.Config, chat *llm.Client, model string, dims int, base, key string, log *slog.Logger) (*llm.Embedder, error) {
	e, err := llm.NewEmbedder(llm.EmbedderConfig{Dimensions: dims, ServiceConfig: service(cfg, chat, log, base, config.Secret(key), model,
		"embeddings", "plugins.memory.embeddings.api_key (or llm.api_key)")})
	if err != nil {
		return nil, fmt.Errorf("plugins.memory.embeddings: %w", err)
	}
	return e, nil
}
