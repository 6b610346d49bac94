//go:build linux

package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// startKillBot starts parley run on a SQLite file in dir, against the
// model at modelURL and the adapters section given (web off), with extra
// top-level YAML, for a test that kills it (SIGKILL) and starts it again;
// it returns the replica and the database's path.
func startKillBot(t *testing.T, dir, modelURL, extra, adapters string) (*replica, string) {
	t.Helper()
	dbPath := filepath.Join(dir, "parley.db")
	cfg := fmt.Sprintf(`store:
  driver: sqlite
  dsn: %q
llm:
  base_url: %s
  api_key: kill-key
  model: kill-model
  timeout: 10s
http:
  listen: 127.0.0.1:0
log:
  level: info
runs:
  debounce: 0s
  stale_after: 30s
plugins:
  memory: {enabled: false}
  proactive: {enabled: false}
%sadapters:
  web: {enabled: false}
%s`, dbPath, modelURL, extra, adapters)
	cfgPath := filepath.Join(dir, "parley.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	rep := newReplica(0, parleyBinary(t), cfgPath, filepath.Join(dir, "parley.log"))
	rep.lateReap = true
	t.Cleanup(func() {
		rep.kill(t)
		rep.reapAll()
	})
	rep.start(t)
	return rep, dbPath
}
