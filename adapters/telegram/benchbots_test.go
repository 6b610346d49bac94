package telegram_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	openai "github.com/sashabaranov/go-openai"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/app"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/engine/outbox"
	_ "github.com/parleybot/parley/standard" // Parley as shipped: every adapter and plugin
	"github.com/parleybot/parley/store"
)

// The bots BenchmarkVersusEchoBot compares. Each runs until ctx ends,
// against the fakes env names; each runs in a process of its own there
// (benchchild_test.go), so that its CPU time is its own.

// botEnv is where a bot finds the fakes, and a directory of its own.
type botEnv struct {
	APIURL, Token, ModelURL, Dir string
}

// botFunc runs a bot until ctx ends.
type botFunc func(ctx context.Context, env botEnv) error

// bots are the sides, by name.
var bots = map[string]botFunc{
	"echo":    echoBot,
	"base":    baselineBot,
	"parley":  parleyBot,
	"shipped": shippedBot,
	// BenchmarkStreamedReply's sides: Parley with streaming on and off.
	"streamed": func(ctx context.Context, env botEnv) error {
		return parleyBotWith(ctx, env, parleyHow{streaming: outbox.Streaming{Enabled: true, Interval: 400 * time.Millisecond}})
	},
	"whole": parleyBot,
	// And the least that does the same job without a framework (the
	// streaming floor of the SDKs): the durable baseline, whole and
	// streamed into drafts.
	"base-whole":    baselineBot,
	"base-streamed": func(ctx context.Context, env botEnv) error { return baselineBotWith(ctx, env, baseStreamed) },
	// BenchmarkStreamedCrowd's sides: the same, paced to Telegram's limits.
	"crowd-streamed": func(ctx context.Context, env botEnv) error {
		return parleyBotWith(ctx, env, parleyHow{streaming: outbox.Streaming{Enabled: true, Interval: 400 * time.Millisecond}, paced: true})
	},
	"crowd-whole": func(ctx context.Context, env botEnv) error {
		return parleyBotWith(ctx, env, parleyHow{paced: true})
	},
	// BenchmarkVoiceReply's sides: every reply spoken and sent as a voice
	// note, by Parley and by the bare SDKs.
	"voice-parley": func(ctx context.Context, env botEnv) error { return parleyBotWith(ctx, env, parleyHow{voice: true}) },
	"voice-base":   func(ctx context.Context, env botEnv) error { return baselineBotWith(ctx, env, baseVoice) },
}

// handlerErrors counts what a bare bot's handler failed at while its
// context was live (once it ends, the last handlers may fail anyhow: the
// fake counts a reply before its sendMessage returns).
type handlerErrors struct {
	n    atomic.Int64
	last atomic.Value
}

func (h *handlerErrors) check(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil {
		h.n.Add(1)
		h.last.Store(err.Error())
	}
}

func (h *handlerErrors) err() error {
	if n := h.n.Load(); n > 0 {
		return fmt.Errorf("%d handler errors, the last: %v", n, h.last.Load())
	}
	return nil
}

// echoBot is a bare go-telegram/bot echo bot (its defaults: its own
// polling, a goroutine per update) answering each update with one
// sendMessage.
func echoBot(ctx context.Context, env botEnv) error {
	var errs handlerErrors
	echo, err := bot.New(env.Token, bot.WithServerURL(env.APIURL),
		bot.WithDefaultHandler(func(ctx context.Context, bt *bot.Bot, u *models.Update) {
			if u.Message == nil {
				return
			}
			_, err := bt.SendMessage(ctx, &bot.SendMessageParams{ChatID: u.Message.Chat.ID, Text: "echo: " + u.Message.Text})
			errs.check(ctx, err)
		}))
	if err != nil {
		return err
	}
	echo.Start(ctx)
	return errs.err()
}

// baseMessage is the durable baseline's one table: every message it hears
// and says.
type baseMessage struct {
	ID        int64 `gorm:"primaryKey"`
	ChatID    int64 `gorm:"index"`
	Role      string
	Text      string
	CreatedAt time.Time
}

// baselineBot is the least a durable LLM bot does, without a framework:
// go-telegram/bot with its defaults; per update, the user's message
// stored with gorm on SQLite, one go-openai chat completion, the reply
// stored, one sendMessage. Its SQLite has the durability of Parley's store
// (a file in WAL mode, synchronous=NORMAL, busy_timeout) and, like
// Parley's writer, one connection, so writers queue in database/sql instead
// of retrying on SQLITE_BUSY; gorm's other settings are its defaults (each
// Create in a transaction of its own).
func baselineBot(ctx context.Context, env botEnv) error { return baselineBotWith(ctx, env, baseWhole) }

// How the baseline answers.
const (
	baseWhole = iota
	// baseStreamed reads the answer as a stream and shows it growing as
	// bare go-telegram/bot code would: a sendMessageDraft with the text
	// so far when it first has some and then at most every 400 ms (the
	// interval Parley streams at), the finished text with one
	// sendMessage.
	baseStreamed
	// baseVoice speaks the stored reply with go-openai's CreateSpeech
	// (Ogg Opus) and sends it with one sendVoice.
	baseVoice
)

// baselineBotWith is baselineBot answering as how says (baseWhole…).
func baselineBotWith(ctx context.Context, env botEnv, how int) error {
	dsn := filepath.Join(env.Dir, "baseline.db") + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	sqlDB.SetMaxOpenConns(1)
	if err := db.AutoMigrate(&baseMessage{}); err != nil {
		return err
	}
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = env.ModelURL
	ai := openai.NewClientWithConfig(cfg)

	var errs handlerErrors
	bt, err := bot.New(env.Token, bot.WithServerURL(env.APIURL),
		bot.WithDefaultHandler(func(ctx context.Context, bt *bot.Bot, u *models.Update) {
			if u.Message == nil {
				return
			}
			chat := u.Message.Chat.ID
			if err := db.WithContext(ctx).Create(&baseMessage{ChatID: chat, Role: "user", Text: u.Message.Text}).Error; err != nil {
				errs.check(ctx, err)
				return
			}
			req := openai.ChatCompletionRequest{
				Model:    llmtest.DefaultModel,
				Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: u.Message.Text}},
			}
			var reply string
			if how == baseStreamed {
				reply, err = streamIntoDrafts(ctx, ai, bt, chat, u.Message.ID, req)
			} else {
				var resp openai.ChatCompletionResponse
				if resp, err = ai.CreateChatCompletion(ctx, req); err == nil {
					reply = resp.Choices[0].Message.Content
				}
			}
			if err != nil {
				errs.check(ctx, err)
				return
			}
			if err := db.WithContext(ctx).Create(&baseMessage{ChatID: chat, Role: "assistant", Text: reply}).Error; err != nil {
				errs.check(ctx, err)
				return
			}
			if how == baseVoice {
				errs.check(ctx, sendSpoken(ctx, ai, bt, chat, reply))
				return
			}
			_, err = bt.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: reply})
			errs.check(ctx, err)
		}))
	if err != nil {
		return err
	}
	bt.Start(ctx)
	return errs.err()
}

// sendSpoken speaks text with go-openai and sends it as a voice note.
func sendSpoken(ctx context.Context, ai *openai.Client, bt *bot.Bot, chat int64, text string) error {
	audio, err := ai.CreateSpeech(ctx, openai.CreateSpeechRequest{Model: openai.TTSModel1, Input: text,
		Voice: openai.VoiceAlloy, ResponseFormat: openai.SpeechResponseFormatOpus})
	if err != nil {
		return err
	}
	defer audio.Close()
	data, err := io.ReadAll(audio)
	if err != nil {
		return err
	}
	_, err = bt.SendVoice(ctx, &bot.SendVoiceParams{ChatID: chat, Voice: &models.InputFileUpload{Filename: "reply.ogg", Data: bytes.NewReader(data)}})
	return err
}

// streamIntoDrafts reads req's answer as a stream, showing the text so
// far in a draft (its id the user's message's) when it first has some and
// then at most every 400 ms, and returns the whole text.
func streamIntoDrafts(ctx context.Context, ai *openai.Client, bt *bot.Bot, chat int64, draft int, req openai.ChatCompletionRequest) (string, error) {
	stream, err := ai.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return "", err
	}
	defer stream.Close()
	var text strings.Builder
	var shown time.Time
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return text.String(), nil
		}
		if err != nil {
			return "", err
		}
		if len(chunk.Choices) > 0 {
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
		if text.Len() > 0 && time.Since(shown) >= 400*time.Millisecond {
			shown = time.Now()
			if _, err := bt.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: chat, DraftID: fmt.Sprint(draft), Text: text.String()}); err != nil {
				return "", err
			}
		}
	}
}

// parleyBot is Parley end to end: the telegram adapter (long polling,
// unpaced), the dispatcher with its defaults, the SQLite store and the
// real model client. Every DM is stored before it is confirmed, answered
// by a durable run, and its reply stored.
func parleyBot(ctx context.Context, env botEnv) error {
	return parleyBotWith(ctx, env, parleyHow{})
}

// parleyHow is how parleyBotWith runs Parley: streaming as streaming
// says, paced to Telegram's limits (the adapter's default send_rate) when
// paced, every reply spoken (voice.replies: always) when voice.
type parleyHow struct {
	streaming    outbox.Streaming
	paced, voice bool
}

// parleyBotWith is parleyBot as how says.
func parleyBotWith(ctx context.Context, env botEnv, how parleyHow) (err error) {
	client, err := llm.New(llm.Config{BaseURL: env.ModelURL, Model: llmtest.DefaultModel})
	if err != nil {
		return err
	}
	db, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(env.Dir, "parley.db")})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	ad := telegram.New()
	ad.Token = config.Secret(env.Token)
	ad.APIURL = env.APIURL
	if !how.paced {
		// The fake has no flood limits, and pacing to Telegram's would
		// measure the pace, not the cost of a turn.
		ad.SendRate = pace.Limits{}
	}
	if err := ad.Provision(ctx, core.Env{Clock: core.SystemClock{}, Location: time.UTC}); err != nil {
		return err
	}
	if err := ad.Validate(); err != nil {
		return err
	}
	cfg := engine.Config{Store: db, LLM: client, Adapters: []core.Adapter{ad}, Streaming: how.streaming}
	if how.voice {
		sp, err := llm.NewSpeaker(llm.SpeakerConfig{ServiceConfig: llm.ServiceConfig{BaseURL: env.ModelURL, Model: "tts-1"}, Voice: "alloy"})
		if err != nil {
			return err
		}
		cfg.Voice = core.VoiceReplies{Mode: "always", MaxChars: 1000, Speaker: sp}
	}
	d, err := engine.New(cfg)
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	if err := ad.Start(ctx, d); err != nil {
		return err
	}
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(ad.Stop(stop), d.Stop(stop))
}

// shippedBot is Parley as shipped: `parley run` with a config that names
// only what the benchmark needs (the fakes, a SQLite file, no web chat, no
// console), so every plugin is on with its defaults (persona, memory,
// mood, control tokens, proactive, schedule), as in issue 31's black-box
// measurement; with runs.debounce 0 (its 1.5 s would be the figure) and
// Telegram's pace lifted, as for parleyBot.
func shippedBot(ctx context.Context, env botEnv) error {
	cfg := fmt.Sprintf(`store: {driver: sqlite, dsn: %q, spool: {dir: %q}}
llm: {base_url: %q, api_key: sk-bench, model: %s}
adapters:
  web: {enabled: false}
  telegram: {token: %q, api_url: %q, send_rate: {per_second: 0, per_chat_per_second: 0}}
runs: {debounce: 0s}
http: {listen: "127.0.0.1:0", api_token: ""}
log: {level: warn}
`, filepath.Join(env.Dir, "parley.db"), filepath.Join(env.Dir, "spool"), env.ModelURL, llmtest.DefaultModel, env.Token, env.APIURL)
	path := filepath.Join(env.Dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return err
	}
	code := app.Run(ctx, []string{"run", "-c", path}, app.IO{In: strings.NewReader(""), Out: io.Discard, Err: os.Stderr},
		func(string) (string, bool) { return "", false })
	if code != 0 {
		return fmt.Errorf("parley run exited %d", code)
	}
	return nil
}
