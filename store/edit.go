package store

import (
	"context"
	"fmt"
	"time"
)

// MarketEditor is the part of a MarketStore that EditMarket uses.
type MarketEditor interface {
	GetMarket(ctx context.Context, slug string) (Market, error)
	SwapMarket(ctx context.Context, m Market, was time.Time) (Market, bool, error)
}

// editTries bounds EditMarket's reads when other writers keep coming
// between its read and its write.
const editTries = 8

// EditMarket reads the market with the slug, lets edit change it and
// writes it back with SwapMarket; when another writer came between the
// read and the write, it reads the market again and edits it afresh, so
// that neither write undoes the other (the collector, in its process, and
// the resolver, in a worker's, write the same markets). edit answers false
// to leave the market as it is. EditMarket returns the market as stored
// and whether edit's change was written; a market written by others at
// every one of its tries is ErrConflict.
func EditMarket(ctx context.Context, s MarketEditor, slug string, edit func(*Market) bool) (Market, bool, error) {
	for range editTries {
		m, err := s.GetMarket(ctx, slug)
		if err != nil {
			return Market{}, false, fmt.Errorf("edit market %q: %w", slug, err)
		}
		was := m.UpdatedAt
		if !edit(&m) {
			return m, false, nil
		}
		stored, ok, err := s.SwapMarket(ctx, m, was)
		if err != nil {
			return Market{}, false, fmt.Errorf("edit market %q: %w", slug, err)
		}
		if ok {
			return stored, true, nil
		}
	}
	return Market{}, false, fmt.Errorf("edit market %q: written by another writer at each of %d tries: %w", slug, editTries, ErrConflict)
}
