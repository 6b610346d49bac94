package httpclient_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/internal/httpclient"
)

func TestTransportIsPooledWithTimeouts(t *testing.T) {
	t.Parallel()
	tr := httpclient.Transport(45 * time.Second)
	require.Equal(t, httpclient.IdleConnsPerHost, tr.MaxIdleConnsPerHost)
	require.GreaterOrEqual(t, tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	require.Equal(t, 45*time.Second, tr.ResponseHeaderTimeout)
	require.Positive(t, tr.TLSHandshakeTimeout)
	require.Positive(t, tr.IdleConnTimeout)
}
