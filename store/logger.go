package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm/logger"
)

// gormLogger routes gorm's log to slog at debug level. It logs statements
// with their placeholders, never the values bound to them (a user's text,
// a reply) nor connection strings, and costs one Enabled check when
// debug is off.
type gormLogger struct{ log *slog.Logger }

func newGormLogger(log *slog.Logger) logger.Interface { return gormLogger{log: log} }

// LogMode is ignored: slog's handler decides what is shown.
func (l gormLogger) LogMode(logger.LogLevel) logger.Interface { return l }

func (l gormLogger) Info(ctx context.Context, msg string, args ...any) {
	l.log.DebugContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l gormLogger) Warn(ctx context.Context, msg string, args ...any) {
	l.log.DebugContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l gormLogger) Error(ctx context.Context, msg string, args ...any) {
	l.log.DebugContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

// ParamsFilter keeps the bound values out of the statement gorm hands
// Trace: a debug log is shared with whoever helps operate the bot, and
// users' messages are not theirs to read.
func (gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

// Trace logs one statement with its duration. Errors are logged at debug
// too: the store returns them to its caller, who decides.
func (l gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if !l.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	sql, rows := fc()
	attrs := []slog.Attr{
		slog.String("sql", sql),
		slog.Int64("rows", rows),
		slog.Duration("elapsed", time.Since(begin)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	l.log.LogAttrs(ctx, slog.LevelDebug, "sql", attrs...)
}
