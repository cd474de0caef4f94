package handlers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRefuseLoneSurrogates(t *testing.T) {
	fields := []string{"name", `config value of "file"`, "initial_offsets[1].partition.f"}
	err := refuseLoneSurrogates(fields, false)
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, 400, f.Code)
	require.Contains(t, f.Message, `lone UTF-16 surrogate escape (\ud800-\udfff without its pair) in name, config value of "file":`)
	require.ErrorAs(t, refuseLoneSurrogates(fields, true), &f)
	require.Contains(t, f.Message, "in initial_offsets[1].partition.f:")
	require.NoError(t, refuseLoneSurrogates(nil, false))
	require.NoError(t, refuseLoneSurrogates([]string{"name"}, true))
}
