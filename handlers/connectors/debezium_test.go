package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnderTopicPrefix(t *testing.T) {
	tests := []struct {
		topic, prefix string
		want          bool
	}{
		{"orders", "orders", true},
		{"orders.public.items", "orders", true},
		{"ordersx", "orders", false},
		{"orders-public", "orders", false},
		{"other.orders", "orders", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, UnderTopicPrefix(tt.topic, tt.prefix), "%s under %s", tt.topic, tt.prefix)
	}
}
