package memory_test

import (
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/storetest"
)

func TestLiveConformance(t *testing.T) {
	storetest.RunLive(t, func(t *testing.T) store.LiveExchange { return memory.NewLive() })
}
