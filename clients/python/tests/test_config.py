"""A Client given a base_url it cannot use says so at once."""

import pytest

import updown


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "localhost:8080", "ftp://example.com", "http://", "", "updown.example.com"])
def test_base_url_without_http_is_refused_at_once(url):
    # It was taken, and every request then failed as a lost connection,
    # retried with backoff for seconds: "cannot reach 127.0.0.1:8080:
    # unknown url type: 127.0.0.1".
    slept = []
    with pytest.raises(ValueError, match="http:// or https://"):
        c = updown.Client(url, api_key="ud_dev_pro", sleep=slept.append)
        c.markets("BTC")
    assert slept == []


@pytest.mark.parametrize("url", ["http://localhost:8080", "https://updown.example.com/", "HTTP://127.0.0.1:8080", "http://[::1]:8080"])
def test_http_base_urls_are_taken(url):
    assert updown.Client(url, api_key="ud_dev_pro").base_url == url.rstrip("/")
