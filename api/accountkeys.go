package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/store"
)

// maxLiveKeys bounds a customer's unrevoked keys (DESIGN 12).
const maxLiveKeys = 10

// CodeKeyLimit answers a key creation past maxLiveKeys.
const CodeKeyLimit = "KEY_LIMIT_REACHED"

type apiKeyJSON struct {
	ID        string  `json:"id"`
	Prefix    string  `json:"prefix" doc:"The key's first characters, to recognise it."`
	CreatedAt string  `json:"created_at" format:"date-time"`
	RevokedAt *string `json:"revoked_at" nullable:"true" format:"date-time"`
	Current   bool    `json:"current" doc:"The key this request was authenticated with (or its session or token was opened with)."`
}

func toAPIKeyJSON(k store.APIKey, current string) apiKeyJSON {
	out := apiKeyJSON{ID: k.ID, Prefix: k.Prefix, CreatedAt: formatTime(k.CreatedAt), Current: k.ID == current}
	if k.RevokedAt != nil {
		r := formatTime(*k.RevokedAt)
		out.RevokedAt = &r
	}
	return out
}

// keyListInput pages the key list. Live keys come first, so the default
// page holds every live key (at most maxLiveKeys) and the newest revoked
// ones, and a customer's revoked keys never make one answer grow.
type keyListInput struct {
	Limit  int `query:"limit" default:"20" minimum:"1" maximum:"100" doc:"Keys per page (1-100)."`
	Offset int `query:"offset" default:"0" minimum:"0" maximum:"1000000" doc:"Keys to skip."`
}

type keyListBody struct {
	Success bool `json:"success"`
	Data    struct {
		Keys    []apiKeyJSON `json:"keys" doc:"A page of the caller's keys: unrevoked ones first, then revoked ones, each newest first."`
		Total   int          `json:"total" doc:"All the caller's keys, revoked ones included."`
		Limit   int          `json:"limit"`
		Offset  int          `json:"offset"`
		Live    int          `json:"live" doc:"Unrevoked keys."`
		MaxLive int          `json:"max_live" doc:"The most unrevoked keys a customer may hold."`
	} `json:"data"`
	Timestamp string `json:"timestamp" format:"date-time"`
}

type keyListOutput struct{ Body keyListBody }

type newKeyJSON struct {
	apiKeyJSON
	Key string `json:"key" doc:"The new API key. It is shown this once: only its hash is kept."`
}

type newKeyBody struct {
	Success   bool       `json:"success"`
	Data      newKeyJSON `json:"data"`
	Timestamp string     `json:"timestamp" format:"date-time"`
}

type newKeyOutput struct{ Body newKeyBody }

type keyIDInput struct {
	ID string `path:"id" maxLength:"64" doc:"The key's id, from GET /v1/account/keys."`
}

type keyRevokedOutput struct {
	Body struct {
		Success   bool       `json:"success"`
		Data      apiKeyJSON `json:"data"`
		Timestamp string     `json:"timestamp" format:"date-time"`
	}
}

func (s *Server) registerAccountKeys() {
	security := []map[string][]string{{schemeAPIKey: {}}}
	huma.Register(s.api, huma.Operation{
		OperationID: opListKeys, Method: http.MethodGet, Path: "/v1/account/keys",
		Summary:     "The caller's API keys, a page at a time",
		Description: "Unrevoked keys first, then revoked ones, each newest first; limit (default 20, at most 100) and offset page through them, total counts them all. The first page holds every live key.",
		Tags:        []string{"Account"}, Security: security,
		Errors: []int{400, 401, 429, 500, 503},
	}, s.listAccountKeys)
	huma.Register(s.api, huma.Operation{
		OperationID: "create-account-key", Method: http.MethodPost, Path: "/v1/account/keys",
		Summary:     "Create an API key (shown once)",
		Description: "At most 10 unrevoked keys per customer (409 KEY_LIMIT_REACHED beyond). The key is in the answer only; the server keeps its hash.",
		Tags:        []string{"Account"}, Security: security, DefaultStatus: http.StatusCreated,
		// A RawBody is read, and Huma bounds a read by MaxBodyBytes only
		// when it is set (see replay's registration): without it a body
		// over maxBodyBytes was 500 rather than 413.
		MaxBodyBytes: maxBodyBytes,
		Errors:       []int{400, 401, 403, 409, 413, 415, 429, 500, 503},
	}, s.createAccountKey)
	optionalEmptyBody(s.api, "/v1/account/keys", "None, or an empty object: a new key takes no settings.")
	huma.Register(s.api, huma.Operation{
		OperationID: opRevokeKey, Method: http.MethodDelete, Path: "/v1/account/keys/{id}",
		Summary:     "Revoke one of the caller's API keys",
		Description: "Requests with the key, and the sessions and bearer tokens opened with it, are refused from the next request on. Another customer's key is 404.",
		Tags:        []string{"Account"}, Security: security,
		Errors: []int{400, 401, 403, 404, 429, 500, 503},
	}, s.revokeAccountKey)
}

// keyPage reads a page of the caller's keys with the counts (limit 0: the
// counts only).
func (s *Server) keyPage(ctx context.Context, customerID string, limit, offset int) (store.APIKeyPage, error) {
	page, err := s.store.PageAPIKeys(ctx, customerID, limit, offset)
	if err != nil {
		return page, s.storeFailure(ctx, "page API keys", err)
	}
	return page, nil
}

// ownKey is the caller's key with the id, revoked or not; another
// customer's key is answered as a missing one.
func (s *Server) ownKey(ctx context.Context, customerID, id string) (store.APIKey, error) {
	k, err := s.store.GetAPIKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && k.CustomerID != customerID {
		return store.APIKey{}, Errorf(http.StatusNotFound, CodeNotFound, "API key %s not found among your keys", quoteID(id))
	}
	if err != nil {
		return store.APIKey{}, s.storeFailure(ctx, "get API key", err)
	}
	return k, nil
}

func (s *Server) listAccountKeys(ctx context.Context, in *keyListInput) (*keyListOutput, error) {
	p := principalFrom(ctx)
	page, err := s.keyPage(ctx, p.Customer.ID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &keyListOutput{}
	out.Body.Success, out.Body.Timestamp = true, formatTime(s.now())
	d := &out.Body.Data
	d.Keys = make([]apiKeyJSON, len(page.Keys))
	for i, k := range page.Keys {
		d.Keys[i] = toAPIKeyJSON(k, p.Key.ID)
	}
	d.Total, d.Limit, d.Offset = page.Total, in.Limit, in.Offset
	d.Live, d.MaxLive = page.Live, maxLiveKeys
	return out, nil
}

func keyLimit() *Error {
	return Errorf(http.StatusConflict, CodeKeyLimit, "a customer may hold at most %d unrevoked API keys: revoke one first", maxLiveKeys)
}

// newKeyInput is POST /v1/account/keys's body: none, or an empty object.
// A key has nothing to set, and a field such as a name would otherwise be
// dropped without a word.
type newKeyInput struct {
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

func (s *Server) createAccountKey(ctx context.Context, in *newKeyInput) (*newKeyOutput, error) {
	if len(bytes.TrimSpace(in.RawBody)) > 0 {
		// A body, though it sets nothing, is JSON as the document says
		// (415 otherwise), not read as JSON whatever it is declared to be.
		if err := requireJSON(in.ContentType); err != nil {
			return nil, err
		}
	}
	if err := noBody(in.RawBody, "a new key"); err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	page, err := s.keyPage(ctx, p.Customer.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	if page.Live >= maxLiveKeys {
		return nil, keyLimit()
	}
	plain, rec := NewKey(p.Customer.ID)
	k, err := s.store.CreateAPIKey(ctx, rec)
	if err != nil {
		return nil, s.storeFailure(ctx, "create API key", err)
	}
	// Two creations at once may both pass the count above; the store has
	// no conditional insert, so look again and take the new key back if it
	// is surplus: one of the newest live keys past the bound. Every
	// creation judges by the same order (newest first) in one read of the
	// live keys, so the keys created first keep the places and only the
	// surplus is refused, rather than every racing creation taking its key
	// back and none getting one.
	page, err = s.keyPage(ctx, p.Customer.ID, maxLiveKeys+liveKeysSlack, 0)
	if err != nil || surplusKey(page, k.ID) {
		if rerr := s.store.RevokeAPIKey(ctx, k.ID); rerr != nil {
			return nil, s.storeFailure(ctx, "revoke surplus API key", rerr)
		}
		if err != nil {
			return nil, err
		}
		return nil, keyLimit()
	}
	return &newKeyOutput{Body: newKeyBody{Success: true, Timestamp: formatTime(s.now()),
		Data: newKeyJSON{apiKeyJSON: toAPIKeyJSON(k, p.Key.ID), Key: plain}}}, nil
}

// liveKeysSlack is how many creations racing past maxLiveKeys a recount
// reads beyond it; a key further down the newest-first list is surplus.
const liveKeysSlack = 64

// surplusKey reports whether the key with the id is past maxLiveKeys in a
// page of the customer's keys (live ones first, newest first): one of the
// page.Live − maxLiveKeys newest live keys, or not among the live keys
// read at all.
func surplusKey(page store.APIKeyPage, id string) bool {
	surplus := page.Live - maxLiveKeys
	if surplus <= 0 {
		return false
	}
	for i, k := range page.Keys {
		if k.RevokedAt != nil {
			break
		}
		if k.ID == id {
			return i < surplus
		}
	}
	return true
}

func (s *Server) revokeAccountKey(ctx context.Context, in *keyIDInput) (*keyRevokedOutput, error) {
	p := principalFrom(ctx)
	k, err := s.ownKey(ctx, p.Customer.ID, in.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case k.RevokedAt == nil:
		if err := s.store.RevokeAPIKey(ctx, in.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, s.storeFailure(ctx, "revoke API key", err)
		}
		// Every api process's auth cache drops the key at its next use:
		// told even if the client hangs up now.
		s.tellKeyRevoked(ctx, p.Customer.ID)
		if k, err = s.ownKey(ctx, p.Customer.ID, in.ID); err != nil {
			return nil, err
		}
	case s.now().Sub(*k.RevokedAt) < authCacheTTL:
		// Revoked so recently that a process may still hold the key: the
		// revocation may have been stored and then failed (the client was
		// answered 500 and retries), telling no one. Told again; past
		// authCacheTTL every cache has dropped it, and a client repeating
		// the DELETE tells no one (it is exempt from rate limits, and each
		// telling has every process read the customer's keys again).
		s.tellKeyRevoked(ctx, p.Customer.ID)
	}
	out := &keyRevokedOutput{}
	out.Body.Success, out.Body.Timestamp = true, formatTime(s.now())
	out.Body.Data = toAPIKeyJSON(k, p.Key.ID)
	return out, nil
}

// tellKeyRevoked bumps the customer's generation so that every api
// process's auth cache drops what it holds of the customer's keys at
// their next use, under a context of its own: a client hanging up once
// the key is revoked must not leave it working through other processes.
func (s *Server) tellKeyRevoked(ctx context.Context, customerID string) {
	if s.cfg.Redis == nil {
		return
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tellTimeout)
	err := InvalidateCustomer(ictx, s.cfg.Redis, customerID)
	cancel()
	if err != nil {
		// Stored all the same; caches expire within authCacheTTL.
		s.log.WarnContext(ctx, "invalidate revoked key", "request_id", RequestID(ctx), "err", err)
	}
}

// optionalEmptyBody documents the body of the POST at path as what
// settingsFreeBody takes: a RawBody makes Huma require a body, and the
// check Huma makes reads the same RequestBody. It takes JSON only
// (documentJSONBodies).
func optionalEmptyBody(api huma.API, path, description string) {
	if item := api.OpenAPI().Paths[path]; item != nil && item.Post != nil && item.Post.RequestBody != nil {
		item.Post.RequestBody.Required = false
		item.Post.RequestBody.Content["application/json"] = &huma.MediaType{Schema: &huma.Schema{Type: "object", AdditionalProperties: false,
			Description: description}}
	}
}

// settingsFreeInput is the body of a POST that takes no settings: none,
// null or an empty object (settingsFreeBody).
type settingsFreeInput struct {
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

// settingsFreeBody checks the body, and its Content-Type, of a POST whose
// what takes no settings: none needs no Content-Type; a body is JSON as
// the document says (415 otherwise), empty, null or {} (noBody). A setting sent there
// (a token's lifetime, say) must not be dropped without a word.
func settingsFreeBody(contentType string, body []byte, what string) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := requireJSON(contentType); err != nil {
		return err
	}
	return noBody(body, what)
}

// noBody checks that a body that sets nothing is empty, null or {}: 400
// VALIDATION_ERROR naming the first field otherwise; what names the
// operation in the message ("a new key").
func noBody(raw []byte, what string) error {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Errorf(http.StatusBadRequest, CodeValidation, "the body must be empty or a JSON object with no fields, not a JSON %s", te.Value)
		}
		return Errorf(http.StatusBadRequest, CodeValidation, "the body must be empty or a JSON object with no fields: %v", err)
	}
	if len(fields) == 0 {
		return nil
	}
	k := slices.Min(slices.Collect(maps.Keys(fields)))
	return Errorf(http.StatusBadRequest, CodeValidation, "unknown field %s: %s takes no settings (send no body, or {})", quoteID(k), what).With("field", clip(k))
}
