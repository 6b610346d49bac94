package config_test

import (
	"errors"
	"testing"

	"github.com/parleybot/parley/core/config"
	"github.com/stretchr/testify/require"
)

// testBundle holds a fake environment; tests never touch the process's.
type testBundle struct {
	env map[string]string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{env: map[string]string{}}
}

func (b *testBundle) lookup(name string) (string, bool) {
	v, ok := b.env[name]
	return v, ok
}

// parse parses src as the file config.yaml.
func (b *testBundle) parse(src string) (*config.Config, error) {
	return config.Parse("config.yaml", []byte(src), b.lookup)
}

// mustParse parses src and fails the test on any error.
func (b *testBundle) mustParse(t *testing.T, src string) *config.Config {
	t.Helper()
	cfg, err := b.parse(src)
	require.NoError(t, err)
	return cfg
}

// configErrors unpacks every *config.Error in err, in order.
func configErrors(t *testing.T, err error) []*config.Error {
	t.Helper()
	require.Error(t, err)
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]*config.Error, 0, len(errs))
	for _, e := range errs {
		var ce *config.Error
		require.True(t, errors.As(e, &ce), "not a *config.Error: %v", e)
		out = append(out, ce)
	}
	return out
}
