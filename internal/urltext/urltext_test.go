package urltext_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/urltext"
)

func TestRedactedHidesThePasswordAlone(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:6379":                                      "127.0.0.1:6379",
		"redis://127.0.0.1:6379/2":                            "redis://127.0.0.1:6379/2",
		"redis://app@127.0.0.1:6379":                          "redis://app@127.0.0.1:6379",
		"redis://app:s3cret@127.0.0.1:6379/0?db=1":            "redis://app:xxxxx@127.0.0.1:6379/0?db=1",
		"redis://:s3cret@h":                                   "redis://:xxxxx@h",
		"redis://app:s3:cr@et@h:1":                            "redis://app:xxxxx@h:1",
		"rediss+cluster://app:s3cret@a:1,b:2/?x=y":            "rediss+cluster://app:xxxxx@a:1,b:2/?x=y",
		"unix://app:s3cret@/run/redis.sock?db=2":              "unix://app:xxxxx@/run/redis.sock?db=2",
		"app:s3cret@127.0.0.1:6379":                           "(an address with user information, not a URL)",
		"redis://app:s3/cret@h":                               "(a URL whose user information is not percent-encoded)",
		"redis://app:s3?cret@h":                               "(a URL whose user information is not percent-encoded)",
		"app:s3cret@redis://h":                                "(a URL whose user information is not percent-encoded)",
		"redis+cluster://app:s3cret@h?client_name=a@b":        "(a URL whose user information is not percent-encoded)",
		"redis+sentinel://a:1,b:2/m?sentinel_password=s3cret": "redis+sentinel://a:1,b:2/m?sentinel_password=xxxxx",
		"redis+sentinel://app:s3cret@a/m?sentinel_username=x&sentinel_password=s3cr": "redis+sentinel://app:xxxxx@a/m?sentinel_username=x&sentinel_password=xxxxx",
		"redis+sentinel://a/m?sentinel%5Fpassword=s3cret#f":                          "redis+sentinel://a/m?sentinel%5Fpassword=xxxxx#f",
	} {
		require.Equal(t, want, urltext.Redacted(addr), addr)
	}
}

// TestParseQuotesNoPassword: net/url quotes the whole address, and a bad
// escape in the user information quotes a piece of it; Parse quotes
// neither, and still says what is wrong elsewhere.
func TestParseQuotesNoPassword(t *testing.T) {
	for addr, want := range map[string]string{
		"redis://app:s3cr%zzet@h:1":   "bad user information",
		"redis://app:s3cret@h:port":   `invalid port ":port"`,
		"redis://app:s3cret@h:1/%zz":  `invalid URL escape "%zz"`,
		"redis://app:12/34@h:1":       "percent-encode",
		"redis://app:s3cret@[::1:1/0": "missing ']' in host",
	} {
		_, err := urltext.Parse(addr)
		require.ErrorContains(t, err, want, addr)
		require.NotContains(t, err.Error(), "s3cr", addr)
		require.NotContains(t, err.Error(), "34", addr)
	}
	_, err := urltext.Parse("redis://app:s3/cret@h")
	require.True(t, errors.Is(err, urltext.ErrAmbiguous))
	u, err := urltext.Parse("redis://app:s3%2Fcret@h:1/0")
	require.NoError(t, err)
	pass, _ := u.User.Password()
	require.Equal(t, "s3/cret", pass)
}
