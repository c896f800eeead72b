package api_test

import (
	"github.com/updown/updown/api"
	"github.com/updown/updown/store"
)

func apiKeyRecord(customerID, plain string) store.APIKey { return api.KeyRecord(customerID, plain) }
