package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func customerTests() []test {
	return []test{
		{"Create", testCustomerCreate},
		{"EmailConflict", testCustomerEmailConflict},
		{"NotFound", testCustomerNotFound},
		{"List", testCustomerList},
		{"SetTier", testCustomerSetTier},
		{"EmailCaseInsensitive", testCustomerEmailCase},
		{"SetLimits", testCustomerSetLimits},
		{"Validation", testCustomerValidation},
	}
}

func apiKeyTests() []test {
	return []test{
		{"Create", testAPIKeyCreate},
		{"HashConflict", testAPIKeyConflict},
		{"Lookup", testAPIKeyLookup},
		{"Revoke", testAPIKeyRevoke},
		{"List", testAPIKeyList},
		{"Get", testAPIKeyGet},
		{"Page", testAPIKeyPage},
		{"CallersCannotMutateStoredData", testAPIKeyCopies},
	}
}

// uuidPattern is a UUID in canonical, lowercase text form.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// unknownIDs are ids no store assigned: a well-formed UUID and a string
// that is not a UUID at all; lookups by either are ErrNotFound.
func unknownIDs() []string {
	// The URN form is a UUID to some parsers (google/uuid) but not to
	// every store (Postgres's uuid type): unknown all the same, not an error.
	return []string{"00000000-0000-4000-8000-000000000000", "not-a-uuid", "urn:uuid:00000000-0000-4000-8000-000000000000"}
}

func newCustomer(name string) store.Customer {
	return store.Customer{Email: name + "@example.com", Name: "Customer " + name, Tier: store.Starter}
}

func createCustomer(t *testing.T, s store.Store, c store.Customer) store.Customer {
	t.Helper()
	got, err := s.CreateCustomer(t.Context(), c)
	mustOK(t, err, "CreateCustomer "+c.Email)
	return got
}

// newKey is an API key of the customer whose hash is derived from prefix.
func newKey(customerID, prefix string) store.APIKey {
	h := sha256.Sum256([]byte(prefix))
	return store.APIKey{CustomerID: customerID, Prefix: prefix, Hash: h[:]}
}

func createKey(t *testing.T, s store.Store, k store.APIKey) store.APIKey {
	t.Helper()
	got, err := s.CreateAPIKey(t.Context(), k)
	mustOK(t, err, "CreateAPIKey "+k.Prefix)
	return got
}

func listKeys(t *testing.T, s store.Store, customerID string) []store.APIKey {
	t.Helper()
	keys, err := s.ListAPIKeys(t.Context(), customerID)
	mustOK(t, err, "ListAPIKeys")
	return keys
}

func testCustomerCreate(t *testing.T, s store.Store) {
	ctx := t.Context()
	before := time.Now()
	in := newCustomer("ada")
	c := createCustomer(t, s, in)
	after := time.Now()

	if !uuidPattern.MatchString(c.ID) {
		t.Errorf("assigned ID %q is not a UUID", c.ID)
	}
	want := in
	want.ID = c.ID
	checkCustomer(t, "CreateCustomer", want, c)
	checkRecent(t, "CreatedAt", c.CreatedAt, before, after)
	checkRecent(t, "UpdatedAt", c.UpdatedAt, before, after)

	got, err := s.GetCustomer(ctx, c.ID)
	mustOK(t, err, "GetCustomer")
	checkCustomer(t, "GetCustomer", c, got)
	got, err = s.GetCustomerByEmail(ctx, c.Email)
	mustOK(t, err, "GetCustomerByEmail")
	checkCustomer(t, "GetCustomerByEmail", c, got)

	other := createCustomer(t, s, newCustomer("bea"))
	if other.ID == c.ID {
		t.Errorf("two customers were both given ID %q", c.ID)
	}

	// A given ID is kept.
	given := newCustomer("cid")
	given.ID = "3f2b8c1e-7d4a-4e6b-9a1c-5d8e7f6a4b3c"
	given.Tier = store.Enterprise
	got = createCustomer(t, s, given)
	checkCustomer(t, "CreateCustomer with an ID", given, got)
	got, err = s.GetCustomer(ctx, given.ID)
	mustOK(t, err, "GetCustomer of a given ID")
	checkCustomer(t, "GetCustomer of a given ID", given, got)
}

func testCustomerEmailConflict(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := createCustomer(t, s, newCustomer("ada"))
	dup := newCustomer("ada")
	dup.Name = "Someone else"
	_, err := s.CreateCustomer(ctx, dup)
	wantErr(t, err, store.ErrConflict, "CreateCustomer with a taken email")

	got, err := s.GetCustomerByEmail(ctx, first.Email)
	mustOK(t, err, "GetCustomerByEmail")
	checkCustomer(t, "GetCustomerByEmail after the conflict", first, got)
	all, err := s.ListCustomers(ctx)
	mustOK(t, err, "ListCustomers")
	if len(all) != 1 {
		t.Errorf("ListCustomers returned %d customers after a conflict, want 1", len(all))
	}
}

func testCustomerNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	ada := createCustomer(t, s, newCustomer("ada"))
	// An id is its one form, as the store gave it: another spelling of the
	// same UUID (upper case, braced, without hyphens) finds no customer in
	// any store, where Postgres's uuid type took every spelling and the
	// memory store none.
	others := []string{strings.ToUpper(ada.ID), "{" + ada.ID + "}", strings.ReplaceAll(ada.ID, "-", "")}
	for _, id := range append(unknownIDs(), others...) {
		_, err := s.GetCustomer(ctx, id)
		wantErr(t, err, store.ErrNotFound, "GetCustomer("+id+")")
		_, err = s.SetCustomerTier(ctx, id, store.Pro)
		wantErr(t, err, store.ErrNotFound, "SetCustomerTier("+id+")")
	}
	_, err := s.GetCustomerByEmail(ctx, "nobody@example.com")
	wantErr(t, err, store.ErrNotFound, "GetCustomerByEmail of an unknown email")
}

func testCustomerList(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.ListCustomers(ctx)
	mustOK(t, err, "ListCustomers")
	if len(got) != 0 {
		t.Errorf("ListCustomers on an empty store returned %d customers", len(got))
	}

	// IDs and emails descend while creation times ascend, so ordering by
	// either is caught.
	ids := []string{
		"ffffffff-0000-4000-8000-000000000000",
		"cccccccc-0000-4000-8000-000000000000",
		"99999999-0000-4000-8000-000000000000",
		"33333333-0000-4000-8000-000000000000",
	}
	var created []store.Customer
	for i, id := range ids {
		c := newCustomer(string(rune('z' - i)))
		c.ID = id
		created = append(created, createCustomer(t, s, c))
		tick()
	}
	want := slices.Clone(created)
	slices.SortStableFunc(want, func(a, b store.Customer) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	got, err = s.ListCustomers(ctx)
	mustOK(t, err, "ListCustomers")
	if len(got) != len(want) {
		t.Fatalf("ListCustomers returned %d customers, want %d", len(got), len(want))
	}
	for i := range want {
		checkCustomer(t, "ListCustomers entry", want[i], got[i])
	}
	if want[0].ID != ids[0] {
		t.Errorf("creation times do not ascend with creation: %v", want)
	}
}

func testCustomerSetTier(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	other := createCustomer(t, s, newCustomer("bea"))
	prev := c
	for _, tier := range []store.Tier{store.Pro, store.ProTrial, store.Starter} {
		tick()
		got, err := s.SetCustomerTier(ctx, c.ID, tier)
		mustOK(t, err, "SetCustomerTier")
		want := prev
		want.Tier = tier
		want.UpdatedAt = time.Time{}
		checkCustomer(t, "SetCustomerTier", want, got)
		if !got.UpdatedAt.After(prev.UpdatedAt) {
			t.Errorf("UpdatedAt = %v after SetCustomerTier, want later than %v", got.UpdatedAt, prev.UpdatedAt)
		}
		read, err := s.GetCustomer(ctx, c.ID)
		mustOK(t, err, "GetCustomer")
		checkCustomer(t, "GetCustomer after SetCustomerTier", got, read)
		read, err = s.GetCustomerByEmail(ctx, c.Email)
		mustOK(t, err, "GetCustomerByEmail")
		checkCustomer(t, "GetCustomerByEmail after SetCustomerTier", got, read)
		prev = got
	}
	read, err := s.GetCustomer(ctx, other.ID)
	mustOK(t, err, "GetCustomer")
	checkCustomer(t, "another customer after SetCustomerTier", other, read)
}

// testCustomerEmailCase: emails are kept trimmed and lower-cased and match
// case-insensitively in every look-up: by email, for uniqueness, and in a
// billing webhook's fallback by email.
func testCustomerEmailCase(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, store.Customer{Email: "  Ada.Lovelace@Example.COM ", Name: "Ada", Tier: store.Starter})
	if c.Email != "ada.lovelace@example.com" {
		t.Errorf("stored email %q, want ada.lovelace@example.com", c.Email)
	}
	for _, email := range []string{"ada.lovelace@example.com", "ADA.LOVELACE@EXAMPLE.COM", "Ada.Lovelace@example.com "} {
		got, err := s.GetCustomerByEmail(ctx, email)
		mustOK(t, err, "GetCustomerByEmail "+email)
		checkCustomer(t, "GetCustomerByEmail "+email, c, got)
	}
	for _, email := range []string{"ADA.LOVELACE@example.com", "ada.lovelace@EXAMPLE.com"} {
		_, err := s.CreateCustomer(ctx, store.Customer{Email: email, Tier: store.Pro})
		wantErr(t, err, store.ErrConflict, "CreateCustomer "+email+" beside ada.lovelace@example.com")
	}

	// A webhook naming no known id finds the customer by its email in
	// another case, and keeps the email as sent.
	e := newBillingEvent("evt_case", store.Customer{ID: "00000000-0000-4000-8000-000000000000", Email: "ADA.LOVELACE@EXAMPLE.COM"}, store.Pro, 1)
	rec := recordBilling(t, s, e)
	if rec.Outcome != store.BillingApplied || rec.CustomerID != c.ID || rec.Email != "ADA.LOVELACE@EXAMPLE.COM" {
		t.Errorf("webhook by upper-case email: outcome %s, customer %q, email %q; want applied to %s, email as sent",
			rec.Outcome, rec.CustomerID, rec.Email, c.ID)
	}
	if got := tierOf(t, s, c.ID); got != store.Pro {
		t.Errorf("tier after the webhook = %s, want PRO", got)
	}
}

// testCustomerSetLimits: a customer's own limits are kept, read back by
// every look-up (the API key's included) and refused when negative.
func testCustomerSetLimits(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, store.Customer{Email: "big@example.com", Tier: store.Enterprise})
	other := createCustomer(t, s, newCustomer("small"))
	if c.Limits != (store.Limits{}) {
		t.Errorf("new customer has limits %+v, want none (the plan's)", c.Limits)
	}
	k := createKey(t, s, newKey(c.ID, "ud_live_big"))
	tick()
	// Every allowance distinct, so that one stored in another's place shows.
	limits := store.Limits{PerMinute: 20_000, PerDay: 3_000_000, AIGenerationsPerMonth: 40, SweepTrials: 20_001, SweepMarkets: 6_000, SweepReplays: 9_000_000}
	got, err := s.SetCustomerLimits(ctx, c.ID, limits)
	mustOK(t, err, "SetCustomerLimits")
	want := c
	want.Limits, want.UpdatedAt = limits, time.Time{}
	checkCustomer(t, "SetCustomerLimits", want, got)
	if !got.UpdatedAt.After(c.UpdatedAt) {
		t.Errorf("UpdatedAt = %v after SetCustomerLimits, want later than %v", got.UpdatedAt, c.UpdatedAt)
	}
	read, err := s.GetCustomer(ctx, c.ID)
	mustOK(t, err, "GetCustomer")
	checkCustomer(t, "GetCustomer after SetCustomerLimits", got, read)
	read, err = s.GetCustomerByEmail(ctx, c.Email)
	mustOK(t, err, "GetCustomerByEmail")
	checkCustomer(t, "GetCustomerByEmail after SetCustomerLimits", got, read)
	_, owner, err := s.LookupAPIKey(ctx, k.Hash)
	mustOK(t, err, "LookupAPIKey")
	checkCustomer(t, "LookupAPIKey's owner after SetCustomerLimits", got, owner)
	// A tier change keeps them.
	read, err = s.SetCustomerTier(ctx, c.ID, store.Pro)
	mustOK(t, err, "SetCustomerTier")
	if read.Limits != limits {
		t.Errorf("limits after a tier change = %+v, want kept (%+v)", read.Limits, limits)
	}

	for _, l := range []store.Limits{{PerMinute: -1}, {PerDay: -1}, {AIGenerationsPerMonth: -1}, {SweepTrials: -1}, {SweepMarkets: -1}, {SweepReplays: -1}} {
		_, err := s.SetCustomerLimits(ctx, c.ID, l)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("SetCustomerLimits(%+v)", l))
	}
	read, err = s.GetCustomer(ctx, c.ID)
	mustOK(t, err, "GetCustomer")
	if read.Limits != limits {
		t.Errorf("limits after refused changes = %+v, want kept (%+v)", read.Limits, limits)
	}
	// Back to the plan's defaults.
	got, err = s.SetCustomerLimits(ctx, c.ID, store.Limits{})
	mustOK(t, err, "SetCustomerLimits(none)")
	if got.Limits != (store.Limits{}) {
		t.Errorf("limits after setting none = %+v", got.Limits)
	}
	for _, id := range unknownIDs() {
		_, err := s.SetCustomerLimits(ctx, id, store.Limits{PerMinute: 1, PerDay: 1})
		wantErr(t, err, store.ErrNotFound, "SetCustomerLimits("+id+")")
	}
	read, err = s.GetCustomer(ctx, other.ID)
	mustOK(t, err, "GetCustomer")
	checkCustomer(t, "another customer after SetCustomerLimits", other, read)
}

func testAPIKeyCreate(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	for _, id := range unknownIDs() {
		_, err := s.CreateAPIKey(ctx, newKey(id, "orphan"))
		wantErr(t, err, store.ErrNotFound, "CreateAPIKey for unknown customer "+id)
	}

	before := time.Now()
	in := newKey(c.ID, "ud_live_a")
	k := createKey(t, s, in)
	after := time.Now()
	if k.ID == "" {
		t.Error("CreateAPIKey left ID empty")
	}
	want := in
	want.ID = k.ID
	checkAPIKey(t, "CreateAPIKey", want, k)
	checkRecent(t, "CreatedAt", k.CreatedAt, before, after)

	k2 := createKey(t, s, newKey(c.ID, "ud_live_b"))
	if k2.ID == k.ID {
		t.Errorf("two keys were both given ID %q", k.ID)
	}

	// A key without a hash is no key: stored, it would be found by a
	// look-up of the empty hash.
	for name, hash := range map[string][]byte{"empty hash": {}, "nil hash": nil} {
		_, err := s.CreateAPIKey(ctx, store.APIKey{CustomerID: c.ID, Prefix: "ud_live_" + name, Hash: hash})
		wantErr(t, err, store.ErrInvalid, "CreateAPIKey with "+name)
	}
	checkAPIKeys(t, "ListAPIKeys", []store.APIKey{k, k2}, listKeys(t, s, c.ID))
}

func testAPIKeyConflict(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))
	k := createKey(t, s, newKey(a.ID, "ud_live_a"))

	for _, owner := range []string{a.ID, b.ID} {
		dup := newKey(owner, "ud_live_a")
		dup.Prefix = "other"
		_, err := s.CreateAPIKey(ctx, dup)
		wantErr(t, err, store.ErrConflict, "CreateAPIKey with a taken hash")
	}
	checkAPIKeys(t, "ListAPIKeys of the owner", []store.APIKey{k}, listKeys(t, s, a.ID))
	checkAPIKeys(t, "ListAPIKeys of the other customer", nil, listKeys(t, s, b.ID))
}

// checkAPIKeys fails the test unless got is want, element by element.
func checkAPIKeys(t *testing.T, op string, want, got []store.APIKey) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d keys, want %d", op, len(got), len(want))
		return
	}
	for i := range want {
		checkAPIKey(t, op, want[i], got[i])
	}
}

func testAPIKeyLookup(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))
	ka := createKey(t, s, newKey(a.ID, "ud_live_a"))
	kb := createKey(t, s, newKey(b.ID, "ud_live_b"))

	lookup := func(k store.APIKey, owner store.Customer) {
		t.Helper()
		gotKey, gotOwner, err := s.LookupAPIKey(ctx, slices.Clone(k.Hash))
		mustOK(t, err, "LookupAPIKey "+k.Prefix)
		checkAPIKey(t, "LookupAPIKey key", k, gotKey)
		checkCustomer(t, "LookupAPIKey owner", owner, gotOwner)
	}
	lookup(ka, a)
	lookup(kb, b)

	// The owner comes back as it is now.
	upgraded, err := s.SetCustomerTier(ctx, a.ID, store.Pro)
	mustOK(t, err, "SetCustomerTier")
	lookup(ka, upgraded)

	for name, hash := range map[string][]byte{
		"unknown hash":     newKey(a.ID, "ud_live_unknown").Hash,
		"prefix of a hash": ka.Hash[:16],
		"empty hash":       {},
		"nil hash":         nil,
	} {
		_, _, err := s.LookupAPIKey(ctx, hash)
		wantErr(t, err, store.ErrNotFound, "LookupAPIKey of an "+name)
	}

	mustOK(t, s.RevokeAPIKey(ctx, ka.ID), "RevokeAPIKey")
	_, _, err = s.LookupAPIKey(ctx, ka.Hash)
	wantErr(t, err, store.ErrNotFound, "LookupAPIKey of a revoked key")
	lookup(kb, b)
}

func testAPIKeyRevoke(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	k := createKey(t, s, newKey(c.ID, "ud_live_a"))
	kept := createKey(t, s, newKey(c.ID, "ud_live_b"))
	for _, id := range unknownIDs() {
		wantErr(t, s.RevokeAPIKey(ctx, id), store.ErrNotFound, "RevokeAPIKey("+id+")")
	}

	before := time.Now()
	mustOK(t, s.RevokeAPIKey(ctx, k.ID), "RevokeAPIKey")
	after := time.Now()
	keys := listKeys(t, s, c.ID)
	if len(keys) != 2 || keys[0].RevokedAt == nil {
		t.Fatalf("ListAPIKeys after revoking = %+v, want both keys, the first revoked", keys)
	}
	revokedAt := *keys[0].RevokedAt
	checkRecent(t, "RevokedAt", revokedAt, before, after)
	revoked := k
	revoked.RevokedAt = &revokedAt
	checkAPIKeys(t, "ListAPIKeys after revoking", []store.APIKey{revoked, kept}, keys)

	tick()
	mustOK(t, s.RevokeAPIKey(ctx, k.ID), "RevokeAPIKey a second time")
	checkAPIKeys(t, "ListAPIKeys after revoking twice", []store.APIKey{revoked, kept}, listKeys(t, s, c.ID))
}

func testAPIKeyList(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))
	idle := createCustomer(t, s, newCustomer("cid"))
	var keys []store.APIKey
	for _, prefix := range []string{"ud_3", "ud_2", "ud_1"} {
		keys = append(keys, createKey(t, s, newKey(a.ID, prefix)))
		tick()
	}
	kb := createKey(t, s, newKey(b.ID, "ud_b"))
	mustOK(t, s.RevokeAPIKey(ctx, keys[1].ID), "RevokeAPIKey")

	got := listKeys(t, s, a.ID)
	if len(got) == 3 && got[1].RevokedAt != nil {
		keys[1].RevokedAt = got[1].RevokedAt
	} else {
		t.Errorf("ListAPIKeys = %+v, want three keys in creation order, the second revoked", got)
	}
	want := slices.Clone(keys)
	slices.SortStableFunc(want, func(x, y store.APIKey) int {
		if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	checkAPIKeys(t, "ListAPIKeys", want, got)
	checkAPIKeys(t, "ListAPIKeys of another customer", []store.APIKey{kb}, listKeys(t, s, b.ID))
	checkAPIKeys(t, "ListAPIKeys of a customer without keys", nil, listKeys(t, s, idle.ID))
	checkAPIKeys(t, "ListAPIKeys of an unknown customer", nil, listKeys(t, s, unknownIDs()[0]))
}

func testAPIKeyCopies(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := createCustomer(t, s, newCustomer("ada"))
	in := newKey(c.ID, "ud_live_a")
	hash := slices.Clone(in.Hash)
	k := createKey(t, s, in)
	in.Hash[0]++ // what was written
	k.Hash[1]++  // what was returned
	got, _, err := s.LookupAPIKey(ctx, hash)
	mustOK(t, err, "LookupAPIKey of the hash as written")
	got.Hash[2]++
	keys := listKeys(t, s, c.ID)
	if len(keys) == 1 {
		keys[0].Hash[3]++
	}
	mustOK(t, s.RevokeAPIKey(ctx, k.ID), "RevokeAPIKey")
	keys = listKeys(t, s, c.ID)
	if len(keys) != 1 || !slices.Equal(keys[0].Hash, hash) || keys[0].RevokedAt == nil {
		t.Fatalf("ListAPIKeys = %+v, want the one key with its hash as written, revoked", keys)
	}
	*keys[0].RevokedAt = time.Time{}
	keys = listKeys(t, s, c.ID)
	if keys[0].RevokedAt == nil || keys[0].RevokedAt.IsZero() {
		t.Errorf("RevokedAt = %v after changing a copy read earlier, want the revocation time", keys[0].RevokedAt)
	}
}

// testCustomerValidation: both stores refuse what no customer can be and
// give an unset tier STARTER; keys that cannot be text (NUL, invalid UTF-8)
// find nothing rather than fail.
func testCustomerValidation(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, c := range []store.Customer{
		{Email: "", Tier: store.Pro},
		{Email: "gold@example.com", Tier: "GOLD"},
	} {
		if _, err := s.CreateCustomer(ctx, c); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateCustomer(%+v) = %v, want ErrInvalid", c, err)
		}
	}
	c, err := s.CreateCustomer(ctx, store.Customer{Email: "plain@example.com"})
	if err != nil || c.Tier != store.Starter {
		t.Fatalf("unset tier: %+v %v", c, err)
	}
	if _, err := s.SetCustomerTier(ctx, c.ID, "GOLD"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetCustomerTier(GOLD) = %v, want ErrInvalid", err)
	}
	for _, key := range []string{"a\x00b", "a\xffb"} {
		if _, err := s.GetCustomerByEmail(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetCustomerByEmail(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := s.GetMarket(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetMarket(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := s.GetMarketByMarketID(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetMarketByMarketID(%q) = %v, want ErrNotFound", key, err)
		}
	}
}

func testAPIKeyGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))
	ka := createKey(t, s, newKey(a.ID, "ud_live_a"))
	kb := createKey(t, s, newKey(b.ID, "ud_live_b"))
	for _, k := range []store.APIKey{ka, kb} {
		got, err := s.GetAPIKey(ctx, k.ID)
		mustOK(t, err, "GetAPIKey "+k.Prefix)
		checkAPIKey(t, "GetAPIKey", k, got)
	}
	for _, id := range append(unknownIDs(), "") {
		_, err := s.GetAPIKey(ctx, id)
		wantErr(t, err, store.ErrNotFound, "GetAPIKey("+id+")")
	}
	mustOK(t, s.RevokeAPIKey(ctx, ka.ID), "RevokeAPIKey")
	got, err := s.GetAPIKey(ctx, ka.ID)
	mustOK(t, err, "GetAPIKey of a revoked key")
	if got.RevokedAt == nil {
		t.Fatalf("GetAPIKey of a revoked key = %+v, want RevokedAt set", got)
	}
	revoked := ka
	revoked.RevokedAt = got.RevokedAt
	checkAPIKey(t, "GetAPIKey of a revoked key", revoked, got)
	checkAPIKeys(t, "ListAPIKeys after GetAPIKey", []store.APIKey{revoked}, listKeys(t, s, a.ID))
	got.Hash[0]++
	again, err := s.GetAPIKey(ctx, ka.ID)
	mustOK(t, err, "GetAPIKey")
	checkAPIKey(t, "GetAPIKey after changing a copy read earlier", revoked, again)
}

// testAPIKeyPage: keys come a page at a time, unrevoked first, then
// revoked, each newest first, with the customer's counts (issue 28, item
// 5: the dashboard's key list was every key ever revoked, unpaged).
func testAPIKeyPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := createCustomer(t, s, newCustomer("ada"))
	b := createCustomer(t, s, newCustomer("bea"))
	var keys []store.APIKey
	for i := range 7 {
		keys = append(keys, createKey(t, s, newKey(a.ID, fmt.Sprintf("ud_%d", i))))
		tick()
	}
	kb := createKey(t, s, newKey(b.ID, "ud_b"))
	for _, i := range []int{0, 2, 3, 5} {
		mustOK(t, s.RevokeAPIKey(ctx, keys[i].ID), "RevokeAPIKey")
	}
	// The revocation times, as stored.
	for i, k := range listKeys(t, s, a.ID) {
		if k.ID != keys[i].ID {
			t.Fatalf("ListAPIKeys out of creation order: %+v", k)
		}
		keys[i].RevokedAt = k.RevokedAt
	}
	// Live 6, 4, 1; then revoked 5, 3, 2, 0.
	want := []store.APIKey{keys[6], keys[4], keys[1], keys[5], keys[3], keys[2], keys[0]}

	page := func(customerID string, limit, offset int) store.APIKeyPage {
		t.Helper()
		p, err := s.PageAPIKeys(ctx, customerID, limit, offset)
		mustOK(t, err, fmt.Sprintf("PageAPIKeys(limit %d, offset %d)", limit, offset))
		return p
	}
	for _, tc := range []struct{ limit, offset, from, to int }{
		{10, 0, 0, 7}, {3, 0, 0, 3}, {3, 3, 3, 6}, {3, 6, 6, 7}, {3, 7, 7, 7}, {2, 100, 7, 7}, {1, 2, 2, 3}, {0, 0, 0, 0},
	} {
		p := page(a.ID, tc.limit, tc.offset)
		op := fmt.Sprintf("PageAPIKeys(limit %d, offset %d)", tc.limit, tc.offset)
		if p.Live != 3 || p.Total != 7 {
			t.Errorf("%s: live %d, total %d, want 3 and 7", op, p.Live, p.Total)
		}
		if p.Keys == nil {
			t.Errorf("%s: Keys is nil, want an empty page", op)
		}
		checkAPIKeys(t, op, want[tc.from:tc.to], p.Keys)
	}
	if p := page(b.ID, 10, 0); p.Live != 1 || p.Total != 1 {
		t.Errorf("PageAPIKeys of another customer: live %d, total %d, want 1 and 1", p.Live, p.Total)
	} else {
		checkAPIKeys(t, "PageAPIKeys of another customer", []store.APIKey{kb}, p.Keys)
	}
	for _, id := range unknownIDs() {
		if p := page(id, 10, 0); p.Live != 0 || p.Total != 0 || len(p.Keys) != 0 {
			t.Errorf("PageAPIKeys of unknown customer %s = %+v, want nothing", id, p)
		}
	}
	for _, bad := range [][2]int{{-1, 0}, {10, -1}} {
		_, err := s.PageAPIKeys(ctx, a.ID, bad[0], bad[1])
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("PageAPIKeys(limit %d, offset %d)", bad[0], bad[1]))
	}
	// A page is the store's copy, not its data.
	p := page(a.ID, 1, 0)
	p.Keys[0].Hash[0]++
	checkAPIKeys(t, "PageAPIKeys after changing a copy", want[:1], page(a.ID, 1, 0).Keys)
}
