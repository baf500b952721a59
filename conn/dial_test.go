package conn_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// clientInfo returns the fields of CLIENT INFO for the connection c.
func clientInfo(t *testing.T, c *conn.Conn) map[string]string {
	t.Helper()
	v, err := c.Do(context.Background(), "CLIENT", "INFO")
	require.NoError(t, err)
	fields := map[string]string{}
	for _, f := range strings.Fields(v.Str) {
		k, val, _ := strings.Cut(f, "=")
		fields[k] = val
	}
	return fields
}

func TestDialForms(t *testing.T) {
	srv := redistest.Start(t, redistest.WithUnixSocket(), redistest.WithTLS(),
		redistest.WithConfig("user alice on >wonderland ~* &* +@all"))
	ctx := context.Background()

	tests := []struct {
		name      string
		addr      string
		opts      []conn.Option
		wantDB    string
		wantUser  string
		wantName  string
		wantRESP3 bool
	}{
		{name: "host:port", addr: srv.Addr, wantDB: "0", wantUser: "default"},
		{name: "redis URL with db", addr: "redis://" + srv.Addr + "/3", wantDB: "3", wantUser: "default"},
		{name: "redis URL with user", addr: "redis://alice:wonderland@" + srv.Addr + "/1", wantDB: "1", wantUser: "alice"},
		{name: "options beat the URL", addr: "redis://" + srv.Addr + "/1",
			opts:   []conn.Option{conn.WithDB(2), conn.WithUsername("alice"), conn.WithPassword("wonderland"), conn.WithClientName("worker-7")},
			wantDB: "2", wantUser: "alice", wantName: "worker-7"},
		{name: "HELLO 3 with auth and name", addr: srv.Addr,
			opts:   []conn.Option{conn.WithRESP3(), conn.WithUsername("alice"), conn.WithPassword("wonderland"), conn.WithClientName("r3"), conn.WithDB(4)},
			wantDB: "4", wantUser: "alice", wantName: "r3", wantRESP3: true},
		{name: "unix socket", addr: "unix://" + srv.UnixSocket + "?db=5", wantDB: "5", wantUser: "default"},
		{name: "rediss URL", addr: "rediss://" + srv.TLSAddr + "/6", opts: []conn.Option{conn.WithTLS(srv.TLSConfig())}, wantDB: "6", wantUser: "default"},
		{name: "TLS option", addr: srv.TLSAddr, opts: []conn.Option{conn.WithTLS(srv.TLSConfig())}, wantDB: "0", wantUser: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, tt.addr, tt.opts...)
			info := clientInfo(t, c)
			require.Equal(t, tt.wantDB, info["db"])
			require.Equal(t, tt.wantUser, info["user"])
			require.Equal(t, tt.wantName, info["name"])
			if tt.wantRESP3 {
				require.Equal(t, "3", info["resp"])
			} else {
				require.Equal(t, "2", info["resp"])
			}
			v, err := c.Do(ctx, "PING")
			require.NoError(t, err)
			require.Equal(t, "PONG", v.Str)
		})
	}
}

func TestDialRefusesWrongCredentials(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("requirepass sesame"))
	ctx := context.Background()

	_, err := conn.Dial(ctx, srv.Addr, conn.WithPassword("wrong"))
	require.ErrorIs(t, err, resp.WrongPass)

	_, err = conn.Dial(ctx, srv.Addr, conn.WithRESP3(), conn.WithPassword("wrong"))
	require.ErrorIs(t, err, resp.WrongPass)

	c := dial(t, srv.Addr)
	_, err = c.Do(ctx, "GET", "k")
	require.ErrorIs(t, err, resp.NoAuth)
	var serverErr *resp.Error
	require.ErrorAs(t, err, &serverErr)
	require.Equal(t, "NOAUTH", serverErr.Prefix)

	c = dial(t, "redis://:sesame@"+srv.Addr)
	_, err = c.Do(ctx, "GET", "k")
	require.NoError(t, err)

	// A failed dial names the address, never the password in it: the
	// error travels into logs.
	_, err = conn.Dial(ctx, "redis://user:wrong@"+srv.Addr)
	require.ErrorIs(t, err, resp.WrongPass)
	require.NotContains(t, err.Error(), "wrong")
	require.Contains(t, err.Error(), srv.Addr)
}

func TestDialTLSRefusesAnUntrustedServer(t *testing.T) {
	srv := redistest.Start(t, redistest.WithTLS())
	_, err := conn.Dial(context.Background(), "rediss://"+srv.TLSAddr)
	var untrusted *tls.CertificateVerificationError
	require.ErrorAs(t, err, &untrusted)
	_, err = conn.Dial(context.Background(), srv.TLSAddr, conn.WithTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}))
	require.NoError(t, err)
}

func TestDialGivesUpAtTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := conn.Dial(ctx, "127.0.0.1:1")
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), fmt.Sprintf("dial %s", "127.0.0.1:1"))
}
