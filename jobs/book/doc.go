// Package book rebuilds Polymarket order books from the market channel's
// events and samples them into snapshots, by one set of rules for every
// reader: the collector's live websocket (jobs/collect) and the archive
// importer (jobs/archive) both decode frames with Decode, fold events into
// Books, and price and cut snapshots with Outcome on the instants of Grid,
// so that an imported market cannot drift from a recorded one (DESIGN 2
// and 9).
//
// The rules:
//   - `book` replaces a token's book (bids and asks; its last trade price
//     when the event carries one);
//   - `price_change` sets the size of a level, size 0 removing it, on a
//     token that has a book (a change to a token without one waits for
//     its `book`); when the best bid or ask upstream reports after the
//     change is not the book's, the book missed something and is dropped
//     until its next `book`;
//   - `tick_size_change` leaves the levels as they are (they stay in the
//     tick they came in) and is the market's tick history;
//   - `last_trade_price` is a trade, and the price of a book without asks.
//
// A snapshot is taken at the multiples of the interval (300 ms) since the
// Unix epoch; each outcome is priced at its best ask, else its last trade
// price, and keeps its top levels a side, best first.
package book
